package hbase

import (
	"context"
	"fmt"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest table "ingest", one column family "d" (one version):
//
//	row key  the record's 36-character UUID-shaped id: random, so once
//	         the table has split, writes spread over every region server
//	d:r      the record's fixed 126-byte encoding (ingest.Record.AppendBinary)
//
// InsertBatch is one multi-row put through the gateway (one HTTP request,
// which the gateway sends as one batch to the region servers): every record
// is acknowledged when it returns; rows are atomic, the batch is not. Count
// is a scan with FirstKeyOnlyFilter (keys only, O(records): a run calls it
// once) and Reset drops and recreates the table.
const (
	ingestTable  = "ingest"
	ingestFamily = "d"
)

type ingestStore struct{ db *DB }

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend, creating the table when absent.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.ensureTable(ctx, ingestTable, ingestFamily); err != nil {
		return nil, err
	}
	return &ingestStore{db: db}, nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hbase ingest: %w", err)
	}
	buf := make([]byte, 0, len(recs)*ingest.RecordBytes)
	col := []byte("d:r")
	rows := make([]row, len(recs))
	for i := range recs {
		start := len(buf)
		buf = recs[i].AppendBinary(buf)
		rows[i] = row{Key: []byte(recs[i].ID), Cells: []cell{{Column: col, Value: buf[start:len(buf):len(buf)]}}}
	}
	if err := s.db.putRows(ctx, ingestTable, rows); err != nil {
		return fmt.Errorf("hbase ingest: batch of %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.scan(ctx, ingestTable, scanSpec{Filter: `{"type":"FirstKeyOnlyFilter"}`, Batch: 10000}, func(row) error {
		n++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("hbase ingest: count: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store.
func (s *ingestStore) Reset(ctx context.Context) error {
	return s.db.recreate(ctx, ingestTable, ingestFamily)
}
