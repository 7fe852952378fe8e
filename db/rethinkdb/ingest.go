package rethinkdb

import (
	"context"
	"fmt"

	"github.com/fieldbench/fieldbench/db/internal/ingestdoc"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// The ingest family's table: one document per record (ingestdoc.Doc, as
// mongodb stores it too), the study's 36
// character id as the primary key (the table's only index, as the study's
// stores had only their key), the times as Unix microseconds (a ReQL time
// keeps only milliseconds, and the records have microseconds; JSON numbers
// hold them exactly, far below 2^53).
const ingestRecords = "ingest_records"

type ingestStore struct{ db *DB }

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.ensureTable(ctx, ingestRecords); err != nil {
		return nil, err
	}
	return &ingestStore{db: db}, nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store: one insert of the whole batch (an
// array of documents), acknowledged with the table's durability (hard
// unless the table was configured otherwise). A record whose id is stored
// already fails the batch; the others of the batch are stored (RethinkDB
// has no multi-document transactions).
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	docs := make([]ingestdoc.Doc, len(recs))
	for i := range recs {
		docs[i] = ingestdoc.Of(&recs[i])
	}
	if err := s.db.write(ctx, s.db.db.Table(ingestRecords).Insert(docs), len(docs)); err != nil {
		return fmt.Errorf("rethinkdb ingest: insert %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	n, err := s.db.count(ctx, ingestRecords)
	if err != nil {
		return 0, fmt.Errorf("rethinkdb ingest: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: the table is dropped and created again
// empty (faster than deleting every document on RethinkDB).
func (s *ingestStore) Reset(ctx context.Context) error {
	if err := s.db.dropTables(ctx, func(n string) bool { return n == ingestRecords }); err != nil {
		return fmt.Errorf("rethinkdb ingest: reset: %w", err)
	}
	return s.db.ensureTable(ctx, ingestRecords)
}

// StoredRecords reads every stored record back (for tests that check what
// was stored, not only how much).
func (db *DB) StoredRecords(ctx context.Context) ([]ingest.Record, error) {
	var docs []ingestdoc.Doc
	if err := db.all(ctx, db.db.Table(ingestRecords), &docs); err != nil {
		return nil, fmt.Errorf("rethinkdb ingest: read back: %w", err)
	}
	out := make([]ingest.Record, len(docs))
	for i, d := range docs {
		out[i] = d.Record()
	}
	return out, nil
}
