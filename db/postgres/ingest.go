package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

var _ ingest.Backend = (*DB)(nil)

// ingestTable holds the records. Like the study's SQL Server table it has
// no index and no key: the study turned indexing off for write throughput.
const ingestTable = "ingest_records"

// ingestColType maps the study's field types to PostgreSQL's: the strings
// are fixed width in the study but the records' values are exactly that
// wide, so text stores the same bytes; dates are timestamptz (microsecond
// precision, like the records).
var ingestColType = map[string]string{"string": "text", "int": "integer", "date": "timestamptz", "double": "double precision"}

func ingestSchema() string {
	cols := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		cols[i] = f.Name + " " + ingestColType[f.Type] + " not null"
	}
	return "create table if not exists " + ingestTable + " (\n\t" + strings.Join(cols, ",\n\t") + "\n)"
}

func ingestColumns() []string {
	names := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		names[i] = f.Name
	}
	return names
}

// ingestStore is the ingest.Store: each batch is one COPY FROM STDIN in the
// binary format (pgx CopyFrom) on its own pooled connection, so the eight
// sources load concurrently; COPY is PostgreSQL's fastest honest bulk path
// and runs as one transaction (all or nothing).
type ingestStore struct {
	db   *DB
	cols []string
}

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if _, err := db.w.Exec(ctx, ingestSchema()); err != nil {
		return nil, fmt.Errorf("postgres ingest: create table %s: %w", ingestTable, err)
	}
	return &ingestStore{db: db, cols: ingestColumns()}, nil
}

// InsertBatch implements ingest.Store.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	row := make([]any, len(s.cols))
	n, err := s.db.w.CopyFrom(ctx, pgx.Identifier{ingestTable}, s.cols,
		pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
			r := &recs[i]
			row[0], row[1], row[2], row[3], row[4] = r.ID, r.Source, r.Seq, r.Channel, r.MeasuredAt
			row[5], row[6], row[7], row[8] = r.Tag, r.Quality, r.Value, r.RecordedAt
			return row, nil
		}))
	if err != nil {
		return fmt.Errorf("postgres ingest: copy %d records: %w", len(recs), err)
	}
	if n != int64(len(recs)) {
		return fmt.Errorf("postgres ingest: copy stored %d of %d records", n, len(recs))
	}
	return nil
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.w.QueryRow(ctx, "select count(*) from "+ingestTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres ingest: count records: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: TRUNCATE gives the table's files back at
// once, so every run of a sweep starts from an empty table; a CHECKPOINT
// then keeps one run's dirty buffers from being written in the next run's
// time.
func (s *ingestStore) Reset(ctx context.Context) error {
	if _, err := s.db.w.Exec(ctx, "truncate "+ingestTable); err != nil {
		return fmt.Errorf("postgres ingest: truncate %s: %w", ingestTable, err)
	}
	if _, err := s.db.w.Exec(ctx, "checkpoint"); err != nil {
		return fmt.Errorf("postgres ingest: checkpoint after reset: %w", err)
	}
	return nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }
