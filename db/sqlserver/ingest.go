package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// ingestTable holds the ingest records: a heap without any index, as the
// study's SQL Server table had none on the record's fields (a heap is
// also SQL Server's cheapest target for appends).
const ingestTable = "ingest_records"

// maxInsertRows is the most records one INSERT can carry on SQL Server,
// which takes at most 2,100 parameters a request (9 a record).
const maxInsertRows = 2100 / 9

// maxTextChars is the longest statement text, and the longest parameter
// declaration list, the adapter sends by default: go-mssqldb sends longer
// ones as nvarchar(max), which Iridium SQL refuses ("unsupported RPC
// request"). A real SQL Server takes either; rows=N in the DSN raises the
// records per INSERT up to maxInsertRows (beyond the default: not verified
// here).
const maxTextChars = 4000

// ingestColType maps ingest.Fields' types to SQL Server's. The times are
// bigint microseconds since the Unix epoch (UTC), 8 bytes as the study
// counted them: Iridium SQL neither takes a datetime2 parameter (it cannot
// parse "datetime2(7)" in the declaration) nor returns datetime2 columns
// that go-mssqldb can read (their scale is invalid), so the type a real
// SQL Server would use cannot be verified here.
var ingestColType = map[string]string{
	"int": "int", "date": "bigint", "double": "float",
}

// paramType is the declaration go-mssqldb writes for a field's parameter,
// or a longer one: ints may be declared bigint.
func paramType(f ingest.Field) string {
	switch f.Type {
	case "string":
		return fmt.Sprintf("varchar(%d)", f.Bytes)
	case "double":
		return "float"
	default:
		return "bigint"
	}
}

// defaultInsertRows is the most records an INSERT can carry with its text
// and its parameter declarations within maxTextChars.
func defaultInsertRows() int {
	for rows := maxInsertRows; rows > 1; rows-- {
		if len(insertSQL(rows)) <= maxTextChars && declChars(rows) <= maxTextChars {
			return rows
		}
	}
	return 1
}

// declChars is the length of the parameter declarations of rows records
// ("@p1 varchar(36),@p2 bigint,...").
func declChars(rows int) int {
	n, p := 0, 1
	for range rows {
		for _, f := range ingest.Fields {
			n += len("@p") + len(strconv.Itoa(p)) + 1 + len(paramType(f)) + 1
			p++
		}
	}
	return n - 1
}

// ingestSchema is the CREATE TABLE of the records.
func ingestSchema() string {
	cols := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		t := ingestColType[f.Type]
		if f.Type == "string" {
			t = fmt.Sprintf("varchar(%d)", f.Bytes)
		}
		cols[i] = quoteIdent(f.Name) + " " + t + " NOT NULL"
	}
	return "CREATE TABLE " + quoteIdent(ingestTable) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n)"
}

// ingestColumns are the records' column names in ingest.Fields order.
func ingestColumns() []string {
	names := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		names[i] = f.Name
	}
	return names
}

// insertSQL is the INSERT of rows records, with @p1... parameters.
func insertSQL(rows int) string {
	cols := ingestColumns()
	for i, c := range cols {
		cols[i] = quoteIdent(c)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + quoteIdent(ingestTable) + " (" + strings.Join(cols, ", ") + ") VALUES ")
	p := 1
	for r := range rows {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "@p%d", p)
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

type ingestStore struct {
	db   *DB
	rows int    // records per INSERT
	full string // the INSERT of rows records
}

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend: the records table, created when the
// database has none (looked up in INFORMATION_SCHEMA, which both SQL
// Server and Iridium answer; Iridium does not parse DROP TABLE IF EXISTS,
// so the adapter keeps to plain statements).
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	var n int
	if err := db.pool.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = @p1", ingestTable).Scan(&n); err != nil {
		return nil, fmt.Errorf("sqlserver ingest: look up table %s: %w", ingestTable, err)
	}
	if n == 0 {
		if _, err := db.pool.ExecContext(ctx, ingestSchema()); err != nil {
			return nil, fmt.Errorf("sqlserver ingest: create table %s: %w", ingestTable, err)
		}
	}
	rows := db.cfg.Rows
	if rows == 0 {
		rows = defaultInsertRows()
	}
	return &ingestStore{db: db, rows: rows, full: insertSQL(rows)}, nil
}

// InsertBatch implements ingest.Store: the batch as one unit. With
// ingest=insert (the default) a batch that fits one INSERT is one
// statement, atomic by itself; a larger one is several on one connection
// between BEGIN TRANSACTION and COMMIT TRANSACTION sent as statements (not
// the driver's BeginTx, whose transaction-manager request Iridium never
// answers; a real SQL Server takes both). With ingest=bulk the batch is
// one bulk copy (not verified here).
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if s.db.cfg.Ingest == IngestBulk {
		return s.bulk(ctx, recs)
	}
	var err error
	for attempt := range maxAttempts {
		if err = s.insertBatch(ctx, recs); err == nil || !isRetryable(err) || ctx.Err() != nil {
			return err
		}
		// Spread the retries of sources that collided on one lock.
		d := time.Duration(min(attempt+1, 20)) * time.Duration(1+rand.IntN(5)) * time.Millisecond
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
	}
	return fmt.Errorf("sqlserver ingest: gave up after %d attempts: %w", maxAttempts, err)
}

// maxAttempts bounds the retries of a batch whose transaction lost a lock
// (a few seconds of waiting in all).
const maxAttempts = 100

// isRetryable reports a transaction that the server ended for a lock and
// that may be run again: SQL Server's deadlock victim (1205) and lock
// time-out (1222), and Iridium SQL's "lock conflict (no-wait)": Iridium
// locks the whole table for a transaction and fails, instead of
// queueing, any other transaction that writes to it.
func isRetryable(err error) bool {
	var me mssql.Error
	if !errors.As(err, &me) {
		return false
	}
	return me.Number == 1205 || me.Number == 1222 || me.Number == 50000 && strings.Contains(me.Message, "lock conflict")
}

// insertBatch is one attempt of InsertBatch with ingest=insert.
func (s *ingestStore) insertBatch(ctx context.Context, recs []ingest.Record) error {
	if s.db.writeMu != nil {
		s.db.writeMu.Lock()
		defer s.db.writeMu.Unlock()
	}
	conn, err := s.db.pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlserver ingest: connection: %w", err)
	}
	defer conn.Close()
	if len(recs) <= s.rows {
		return s.insert(ctx, conn, recs, 0)
	}
	// Transaction statements run at the top level of a request (Iridium
	// refuses them inside IF), each request on this one connection.
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("sqlserver ingest: begin: %w", err)
	}
	for lo := 0; lo < len(recs); lo += s.rows {
		if err := s.insert(ctx, conn, recs[lo:min(lo+s.rows, len(recs))], lo); err != nil {
			return errors.Join(err, rollback(conn))
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT TRANSACTION"); err != nil {
		return errors.Join(fmt.Errorf("sqlserver ingest: commit: %w", err), rollback(conn))
	}
	return nil
}

// insert sends one INSERT of chunk, records lo... of the batch.
func (s *ingestStore) insert(ctx context.Context, conn *sql.Conn, chunk []ingest.Record, lo int) error {
	args := make([]any, 0, len(ingest.Fields)*len(chunk))
	for i := range chunk {
		r := &chunk[i]
		// varchar parameters, the columns' own type (a Go string is
		// nvarchar, which the server would convert).
		args = append(args, mssql.VarChar(r.ID), r.Source, r.Seq, r.Channel, r.MeasuredAt.UnixMicro(),
			mssql.VarChar(r.Tag), r.Quality, r.Value, r.RecordedAt.UnixMicro())
	}
	q := s.full
	if len(chunk) != s.rows {
		q = insertSQL(len(chunk))
	}
	if _, err := conn.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("sqlserver ingest: insert records %d..%d of the batch: %w", lo, lo+len(chunk)-1, err)
	}
	return nil
}

// rollback ends a failed transaction of conn; when that fails too (the
// context ended, the connection broke), the connection is discarded so
// that no open transaction goes back to the pool.
func rollback(conn *sql.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "ROLLBACK TRANSACTION"); err == nil {
		return nil
	}
	return conn.Raw(func(any) error { return driver.ErrBadConn })
}

// bulk sends recs through the driver's bulk copy in one request (the
// server commits it as one batch). Not verified here: Iridium SQL fails
// bulk loads.
func (s *ingestStore) bulk(ctx context.Context, recs []ingest.Record) error {
	if s.db.writeMu != nil {
		s.db.writeMu.Lock()
		defer s.db.writeMu.Unlock()
	}
	conn, err := s.db.pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlserver ingest: connection: %w", err)
	}
	defer conn.Close()
	stmt, err := conn.PrepareContext(ctx, mssql.CopyIn(ingestTable, mssql.BulkOptions{Tablock: true}, ingestColumns()...))
	if err != nil {
		return fmt.Errorf("sqlserver ingest: bulk copy (%s): %w", NotVerified, err)
	}
	defer stmt.Close()
	for i := range recs {
		r := &recs[i]
		if _, err := stmt.ExecContext(ctx, r.ID, r.Source, r.Seq, r.Channel, r.MeasuredAt.UnixMicro(), r.Tag, r.Quality, r.Value, r.RecordedAt.UnixMicro()); err != nil {
			return fmt.Errorf("sqlserver ingest: bulk copy record %d (%s): %w", i, NotVerified, err)
		}
	}
	// The final Exec without arguments sends the rows and ends the load.
	if _, err := stmt.ExecContext(ctx); err != nil {
		return fmt.Errorf("sqlserver ingest: bulk copy (%s): %w", NotVerified, err)
	}
	return nil
}

// Count implements ingest.Store: COUNT(*), an int, enough for the study's
// loads (2.6 million records at most); Iridium has no COUNT_BIG outside a
// GROUP BY.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoteIdent(ingestTable)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlserver ingest: count records: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: TRUNCATE TABLE, which deallocates the
// heap's pages, so every run of a sweep starts from an empty table.
func (s *ingestStore) Reset(ctx context.Context) error {
	if _, err := s.db.pool.ExecContext(ctx, "TRUNCATE TABLE "+quoteIdent(ingestTable)); err != nil {
		return fmt.Errorf("sqlserver ingest: truncate %s: %w", ingestTable, err)
	}
	return nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }
