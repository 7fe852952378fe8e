package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// ingestTable holds the ingest records. Like the study's SQL Server table it
// has no index on the record's fields; its primary key is a surrogate
// auto-increment row id: InnoDB always clusters on a key (without one it
// adds a hidden row id behind a global mutex) and Galera needs one to
// certify and apply row events. With innodb_autoinc_lock_mode=2 the key
// takes no table lock, and every insert appends at the end of the index.
const ingestTable = "ingest_records"

// ingestRows is how many records one multi-row INSERT carries (9 values a
// row, ~130 bytes of SQL text each).
const ingestRows = 1000

var ingestColType = map[string]string{
	"string": "varchar(64)", "int": "int", "date": "datetime(6)", "double": "double",
}

func ingestSchema() string {
	cols := make([]string, 0, len(ingest.Fields)+2)
	cols = append(cols, "rid bigint not null auto_increment")
	for _, f := range ingest.Fields {
		t := ingestColType[f.Type]
		if f.Type == "string" {
			t = fmt.Sprintf("varchar(%d)", f.Bytes)
		}
		cols = append(cols, f.Name+" "+t+" not null")
	}
	cols = append(cols, "primary key (rid)")
	return "create table if not exists " + ingestTable + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) engine=InnoDB"
}

func ingestInsertPrefix() string {
	names := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		names[i] = f.Name
	}
	return "insert into " + ingestTable + " (" + strings.Join(names, ", ") + ") values "
}

type ingestStore struct {
	db     *DB
	prefix string
	full   string // the INSERT of ingestRows rows
}

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if _, err := db.first().ExecContext(ctx, ingestSchema()); err != nil {
		return nil, fmt.Errorf("mariadb ingest: create table %s: %w", ingestTable, err)
	}
	p := ingestInsertPrefix()
	return &ingestStore{db: db, prefix: p, full: p + values(len(ingest.Fields), ingestRows)}, nil
}

// InsertBatch implements ingest.Store: one transaction of multi-row
// INSERTs (ingestRows records each), committed before it returns. Each
// batch goes to the next server round-robin.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	args := make([]any, 0, len(ingest.Fields)*min(len(recs), ingestRows))
	return inTx(ctx, s.db.pick(), "ingest batch", func(tx *sql.Tx) error {
		for lo := 0; lo < len(recs); lo += ingestRows {
			chunk := recs[lo:min(lo+ingestRows, len(recs))]
			args = args[:0]
			for i := range chunk {
				r := &chunk[i]
				args = append(args, r.ID, r.Source, r.Seq, r.Channel, r.MeasuredAt, r.Tag, r.Quality, r.Value, r.RecordedAt)
			}
			q := s.full
			if len(chunk) < ingestRows {
				q = s.prefix + values(len(ingest.Fields), len(chunk))
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("mariadb ingest: insert records %d..%d of the batch: %w", lo, lo+len(chunk)-1, err)
			}
		}
		return nil
	})
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.first().QueryRowContext(ctx, "select count(*) from "+ingestTable).Scan(&n); err != nil {
		return 0, fmt.Errorf("mariadb ingest: count records: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: TRUNCATE, which recreates the table's
// tablespace, so every run of a sweep starts from the same empty file.
func (s *ingestStore) Reset(ctx context.Context) error {
	if _, err := s.db.first().ExecContext(ctx, "truncate table "+ingestTable); err != nil {
		return fmt.Errorf("mariadb ingest: truncate %s: %w", ingestTable, err)
	}
	return nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }
