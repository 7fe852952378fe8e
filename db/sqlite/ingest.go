package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

var _ ingest.Backend = (*DB)(nil)

// ingestTable holds the ingest records. Like the study's SQL Server table it
// has no index and no key beyond SQLite's implicit rowid: the study turned
// indexing off to maximize write throughput.
const ingestTable = "ingest_records"

// ingestRows is how many records one multi-row INSERT carries: 9 parameters
// a row, 4,500 a statement, far below SQLite's limit of 32,766. Measured on
// batches of 1,000 (BenchmarkIngestInsert, medians): 500 and 1,000 rows are
// alike (~330-350k records/s), 50 rows ~20 % slower, one row per statement
// ~40 % slower.
const ingestRows = 500

// ingestColType maps the study's field types to STRICT column types; dates are
// INTEGER Unix microseconds (UTC) as everywhere in this adapter.
var ingestColType = map[string]string{"string": "text", "int": "integer", "date": "integer", "double": "real"}

func ingestSchema() string {
	cols := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		cols[i] = f.Name + " " + ingestColType[f.Type] + " not null"
	}
	// STRICT: the 9 columns are really typed, as in the study's schema.
	return "create table if not exists " + ingestTable + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) strict"
}

func ingestInsert(rows int) string {
	names := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		names[i] = f.Name
	}
	return "insert into " + ingestTable + " (" + strings.Join(names, ", ") + ") values " + values(len(names), rows)
}

// ingestInsertMode is how InsertBatch sends a batch inside its transaction.
type ingestInsertMode int

const (
	// ingestMultiRow sends ingestRows records per INSERT statement (and
	// the rest in one shorter statement). It is the default: paying the
	// per-statement cost once per 500 records instead of per record was
	// 1.5-1.7x faster than ingestPerRow on SQLite (see docs/ingest.md).
	ingestMultiRow ingestInsertMode = iota
	// ingestPerRow executes a prepared one-row INSERT per record.
	ingestPerRow
)

// ingestStore is the SQLite ingest.Store. Every batch is one write
// transaction on the single writer connection, so concurrent sources queue
// for it in Go; SQLite has one writer at a time whatever we do.
type ingestStore struct {
	db    *DB
	mode  ingestInsertMode
	chunk int       // rows per multi-row INSERT (ingestRows but in benchmarks)
	one   *sql.Stmt // one row, writer pool
	full  *sql.Stmt // chunk rows, writer pool
	count *sql.Stmt // reader pool

	mu    sync.Mutex
	tails map[int]*sql.Stmt // prepared shorter multi-row INSERTs by row count
}

// Ingest implements ingest.Backend: the store over the ingest_records
// table, created when absent.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	return db.ingestStore(ctx, ingestMultiRow, ingestRows)
}

func (db *DB) ingestStore(ctx context.Context, mode ingestInsertMode, chunk int) (_ *ingestStore, err error) {
	if _, err := db.w.ExecContext(ctx, ingestSchema()); err != nil {
		return nil, fmt.Errorf("sqlite ingest: create table %s: %w", ingestTable, err)
	}
	s := &ingestStore{db: db, mode: mode, chunk: chunk, tails: map[int]*sql.Stmt{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, p := range []struct {
		pool *sql.DB
		dst  **sql.Stmt
		q    string
	}{
		{db.w, &s.one, ingestInsert(1)},
		{db.w, &s.full, ingestInsert(chunk)},
		{db.r, &s.count, "select count(*) from " + ingestTable},
	} {
		st, err := p.pool.PrepareContext(ctx, p.q)
		if err != nil {
			return nil, fmt.Errorf("sqlite ingest: prepare %.60s: %w", p.q, err)
		}
		*p.dst = st
	}
	return s, nil
}

// ingestArgs appends the 9 column values of r in ingest.Fields order.
func ingestArgs(args []any, r *ingest.Record) []any {
	return append(args, r.ID, int64(r.Source), int64(r.Seq), int64(r.Channel), r.MeasuredAt.UnixMicro(),
		r.Tag, int64(r.Quality), r.Value, r.RecordedAt.UnixMicro())
}

// InsertBatch implements ingest.Store: recs in one transaction, committed
// before it returns.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) (err error) {
	if len(recs) == 0 {
		return nil
	}
	// The statement for the last, shorter chunk is prepared before the
	// transaction: preparing on the writer pool inside it would wait for
	// the one connection the transaction holds.
	var tail *sql.Stmt
	if n := len(recs) % s.chunk; s.mode == ingestMultiRow && n != 0 {
		if tail, err = s.multi(ctx, n); err != nil {
			return err
		}
	}
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite ingest: begin batch: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if s.mode == ingestPerRow {
		st := tx.StmtContext(ctx, s.one)
		args := make([]any, 0, len(ingest.Fields))
		for i := range recs {
			if _, err := st.ExecContext(ctx, ingestArgs(args[:0], &recs[i])...); err != nil {
				return fmt.Errorf("sqlite ingest: insert record %d of the batch: %w", i, err)
			}
		}
	} else {
		args := make([]any, 0, len(ingest.Fields)*min(len(recs), s.chunk))
		for lo := 0; lo < len(recs); lo += s.chunk {
			chunk := recs[lo:min(lo+s.chunk, len(recs))]
			st := s.full
			if len(chunk) < s.chunk {
				st = tail
			}
			args = args[:0]
			for i := range chunk {
				args = ingestArgs(args, &chunk[i])
			}
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("sqlite ingest: insert records %d..%d of the batch: %w", lo, lo+len(chunk)-1, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite ingest: commit batch of %d records: %w", len(recs), err)
	}
	return nil
}

// multi returns the prepared INSERT of n rows. Shorter ones than
// s.chunk (a batch size that is not a multiple of it) are prepared once
// and kept, so a run never re-parses SQL per batch. It must not be called
// inside a write transaction (see InsertBatch).
func (s *ingestStore) multi(ctx context.Context, n int) (*sql.Stmt, error) {
	switch n {
	case s.chunk:
		return s.full, nil
	case 1:
		return s.one, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.tails[n]; ok {
		return st, nil
	}
	st, err := s.db.w.PrepareContext(ctx, ingestInsert(n))
	if err != nil {
		return nil, fmt.Errorf("sqlite ingest: prepare insert of %d rows: %w", n, err)
	}
	s.tails[n] = st
	return st, nil
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.count.QueryRowContext(ctx).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite ingest: count records: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: it returns the file to the state of a new
// database, as the study reset its databases between runs. Dropping and
// recreating the table is cheaper than deleting 2.6 million rows; VACUUM
// then gives the freed pages back, so every run grows the file from the
// same size instead of the later runs reusing free pages the first one had
// to allocate; and truncating the write-ahead log keeps one run's
// checkpoint work from landing in the next run's time.
func (s *ingestStore) Reset(ctx context.Context) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite ingest: begin reset: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "drop table if exists "+ingestTable); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("sqlite ingest: drop %s: %w", ingestTable, err)
	}
	if _, err := tx.ExecContext(ctx, ingestSchema()); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("sqlite ingest: recreate %s: %w", ingestTable, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite ingest: commit reset: %w", err)
	}
	if _, err := s.db.w.ExecContext(ctx, "vacuum"); err != nil {
		return fmt.Errorf("sqlite ingest: vacuum after reset: %w", err)
	}
	// The result row (busy, log pages, checkpointed pages) is not an
	// error when busy: a reader still on the old log only delays the
	// truncation to the next checkpoint.
	var busy, logPages, done int64
	if err := s.db.w.QueryRowContext(ctx, "pragma wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done); err != nil {
		return fmt.Errorf("sqlite ingest: checkpoint after reset: %w", err)
	}
	return nil
}

// Close releases the prepared statements; the DB stays open.
func (s *ingestStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, st := range []*sql.Stmt{s.one, s.full, s.count} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range s.tails {
		errs = append(errs, st.Close())
	}
	s.one, s.full, s.count, s.tails = nil, nil, nil, map[int]*sql.Stmt{}
	return errors.Join(errs...)
}
