package null

import (
	"context"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(context.Context) (ingest.Store, error) { return ingestStore{}, nil }

// ingestStore acknowledges every batch at once and stores nothing.
type ingestStore struct{}

func (ingestStore) InsertBatch(context.Context, []ingest.Record) error { return nil }

// Count is refused: a count would claim records were stored (--verify).
func (ingestStore) Count(context.Context) (int64, error) { return 0, ErrNotApplicable }

func (ingestStore) Reset(context.Context) error { return nil }

func (ingestStore) Close() error { return nil }
