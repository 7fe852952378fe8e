package redis

import (
	"context"
	"fmt"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest keys: one string per record, "ing:" + its 36-character id, whose
// value is the record's fixed 126-byte encoding (ingest.Record.AppendBinary:
// the study's nine fields in its layout). Keys spread over every slot, so
// in a cluster all masters take their share of each batch.
//
// InsertBatch is one pipeline of SETs (go-redis splits it by node and sends
// the parts in parallel): the fastest honest path — every record is stored
// and acknowledged before it returns, but a batch is not atomic (a failed
// pipeline may leave part of it). Count sums DBSIZE over the masters and
// Reset is FLUSHALL on every master, as the study reset its databases
// between runs: the ingest family wants a database of its own.
const ingestPrefix = "ing:"

type ingestStore struct {
	db *DB
}

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend (nothing to create).
func (db *DB) Ingest(context.Context) (ingest.Store, error) { return &ingestStore{db: db}, nil }

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redis ingest: %w", err)
	}
	// One buffer for the whole batch's values: go-redis writes them out
	// before Exec returns.
	buf := make([]byte, 0, len(recs)*ingest.RecordBytes)
	p := s.db.rdb.Pipeline()
	for i := range recs {
		start := len(buf)
		buf = recs[i].AppendBinary(buf)
		p.Set(ctx, ingestPrefix+recs[i].ID, buf[start:len(buf):len(buf)], 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redis ingest: batch of %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store: DBSIZE summed over the masters.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n atomic.Int64
	err := s.db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		k, err := c.DBSize(ctx).Result()
		n.Add(k)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redis ingest: count: %w", err)
	}
	return n.Load(), nil
}

// Reset implements ingest.Store: FLUSHALL (synchronous) on every master.
func (s *ingestStore) Reset(ctx context.Context) error {
	err := s.db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		return c.FlushAll(ctx).Err()
	})
	if err != nil {
		return fmt.Errorf("redis ingest: reset: %w", err)
	}
	return nil
}
