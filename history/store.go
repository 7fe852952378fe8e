package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/result"
)

// DefaultPath is the history database of `fieldbench history` when no
// --history is given: an SQLite file beside the runs.
const DefaultPath = "results/history.db"

// Errors the command line turns into its exit codes.
var (
	// ErrNewerSchema is a history database written by a newer fieldbench:
	// this one would misread it, or damage it migrating it back.
	ErrNewerSchema = errors.New("written by a newer fieldbench")
	// ErrNoHistory is a history file that does not exist (read commands
	// do not create one).
	ErrNoHistory = errors.New("no history database")
)

// Store is an open history database: an SQLite file or a PostgreSQL
// database. It is safe for concurrent use; several processes may add to
// one database at once (SQLite: WAL, a busy timeout and BEGIN
// IMMEDIATE; PostgreSQL: its own locking).
type Store struct {
	db *sql.DB
	pg bool
	// Where names the database for messages (a DSN redacted).
	Where string
	// path is the SQLite file ("" on PostgreSQL).
	path string
}

// IsPostgres reports whether target names a PostgreSQL database.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// SQLitePath is the file an SQLite target names ("" for PostgreSQL):
// a path, or sqlite://PATH.
func SQLitePath(target string) (string, error) {
	if target == "" {
		target = DefaultPath
	}
	if IsPostgres(target) {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(target, "sqlite://"); ok {
		target = rest
	} else if scheme, _, ok := strings.Cut(target, "://"); ok {
		return "", adapter.BadDSN(fmt.Errorf("--history %s: a history is an SQLite file (a path, or sqlite://PATH) or a PostgreSQL database (postgres://...), not %s", redact.DSN(target), scheme))
	}
	if target == "" {
		return "", adapter.BadDSN(errors.New("--history: no file path"))
	}
	return filepath.Abs(target)
}

// busyTimeoutMS is how long an SQLite connection waits for another
// process's lock before SQLITE_BUSY (db/sqlite waits as long).
const busyTimeoutMS = 10000

// busyFor bounds the retries of a write that SQLite refused with
// SQLITE_BUSY: another process adding a large batch holds the lock.
const busyFor = 2 * time.Minute

// Open opens the history at target (DefaultPath when ""), creating an
// SQLite file when create is set (its directory too), and migrates its
// schema forward. A database from a newer fieldbench is refused
// (ErrNewerSchema), and is not changed.
func Open(ctx context.Context, target string, create bool) (*Store, error) {
	if target == "" {
		target = DefaultPath
	}
	s := &Store{Where: redact.DSN(target)}
	if IsPostgres(target) {
		db, err := sql.Open("pgx", target)
		if err != nil {
			return nil, adapter.BadDSN(fmt.Errorf("history %s: %v", s.Where, redact.Text(err.Error())))
		}
		db.SetMaxOpenConns(4)
		s.db, s.pg = db, true
	} else {
		path, err := SQLitePath(target)
		if err != nil {
			return nil, err
		}
		s.path, s.Where = path, path
		st, err := os.Stat(path)
		switch {
		case err == nil && st.IsDir():
			return nil, adapter.BadDSN(fmt.Errorf("--history %s is a directory, not a history file", path))
		case errors.Is(err, os.ErrNotExist) && !create:
			return nil, fmt.Errorf("%w at %s: add runs first (fieldbench history add results/*)", ErrNoHistory, path)
		case errors.Is(err, os.ErrNotExist):
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, fmt.Errorf("history %s: %w", path, err)
			}
		case err != nil:
			return nil, fmt.Errorf("history %s: %w", path, err)
		}
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout("+strconv.Itoa(busyTimeoutMS)+")&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", path, err)
		}
		// One connection: the process's writes queue in Go, and SQLite
		// arbitrates only between processes.
		db.SetMaxOpenConns(1)
		s.db = db
	}
	if err := s.whileBusy(ctx, func() error { return s.db.PingContext(ctx) }); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("history %s: %s", s.Where, redact.Text(err.Error()))
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the SQLite file ("" on PostgreSQL).
func (s *Store) Path() string { return s.path }

// whileBusy calls try until it returns anything but SQLITE_BUSY, ctx ends
// or busyFor passes, and returns its last error: as db/sqlite does,
// for the BUSY that SQLite returns at once (two processes switching a new
// file to WAL together) or after its busy timeout.
func (s *Store) whileBusy(ctx context.Context, try func() error) error {
	until := time.Now().Add(busyFor)
	for {
		err := try()
		if err == nil || s.pg || !isBusy(err) || time.Now().After(until) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isBusy reports SQLITE_BUSY (or one of its extended codes).
func isBusy(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// q rewrites a statement's ? placeholders as PostgreSQL's $1, $2...
// (no statement here has a ? inside a literal).
func (s *Store) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// blob is the type of a byte column.
func (s *Store) blob() string {
	if s.pg {
		return "BYTEA"
	}
	return "BLOB"
}

// migrations are the schema's steps: migrations[i] takes a database at
// version i to version i+1. A step is only ever appended, never changed:
// a database records its version and gets the steps after it.
var migrations = []func(s *Store) []string{
	func(s *Store) []string {
		return []string{
			`CREATE TABLE series (
				id TEXT PRIMARY KEY,
				key_json TEXT NOT NULL,
				label TEXT NOT NULL)`,
			`CREATE TABLE runs (
				id TEXT PRIMARY KEY,
				series_id TEXT NOT NULL,
				started_ns BIGINT NOT NULL,
				added_ns BIGINT NOT NULL,
				workload TEXT NOT NULL, adapter TEXT NOT NULL,
				server TEXT NOT NULL, server_version TEXT NOT NULL,
				model TEXT NOT NULL, mix TEXT NOT NULL,
				machine TEXT NOT NULL, host TEXT NOT NULL, kernel TEXT NOT NULL,
				fieldbench_version TEXT NOT NULL, commit_ref TEXT NOT NULL,
				dir TEXT NOT NULL,
				duration_s DOUBLE PRECISION NOT NULL,
				interrupted INTEGER NOT NULL,
				header_json TEXT NOT NULL)`,
			`CREATE INDEX runs_by_series ON runs (series_id, started_ns)`,
			`CREATE TABLE ops (
				run_id TEXT NOT NULL,
				op TEXT NOT NULL,
				count BIGINT NOT NULL, errors BIGINT NOT NULL, error_kinds TEXT NOT NULL,
				ops_per_sec DOUBLE PRECISION NOT NULL, mean_us DOUBLE PRECISION NOT NULL,
				p50_us BIGINT NOT NULL, p90_us BIGINT NOT NULL, p99_us BIGINT NOT NULL,
				p999_us BIGINT NOT NULL, max_us BIGINT NOT NULL,
				seconds INTEGER NOT NULL,
				throughput_lo DOUBLE PRECISION, throughput_hi DOUBLE PRECISION,
				mean_lo DOUBLE PRECISION, mean_hi DOUBLE PRECISION,
				p50_lo DOUBLE PRECISION, p50_hi DOUBLE PRECISION,
				p90_lo DOUBLE PRECISION, p90_hi DOUBLE PRECISION,
				p99_lo DOUBLE PRECISION, p99_hi DOUBLE PRECISION,
				p999_lo DOUBLE PRECISION, p999_hi DOUBLE PRECISION,
				hist ` + s.blob() + `,
				PRIMARY KEY (run_id, op))`,
		}
	},
}

// SchemaVersion is the version this fieldbench writes.
func SchemaVersion() int { return len(migrations) }

// schemaLock is the PostgreSQL advisory lock key that serializes
// migrations of one database ("fbhist").
const schemaLock = 0x6662686973740

// migrate brings the schema to SchemaVersion in one transaction, under
// the write lock (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock),
// so two processes opening a new database at once migrate it once.
func (s *Store) migrate(ctx context.Context) error {
	return s.whileBusy(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("history %s: %w", s.Where, err)
		}
		defer tx.Rollback()
		if s.pg {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
				return fmt.Errorf("history %s: lock the schema: %w", s.Where, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS history_schema (version INTEGER NOT NULL)"); err != nil {
			return fmt.Errorf("history %s: %w", s.Where, err)
		}
		version := 0
		err = tx.QueryRowContext(ctx, "SELECT version FROM history_schema").Scan(&version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, "INSERT INTO history_schema (version) VALUES (0)"); err != nil {
				return fmt.Errorf("history %s: %w", s.Where, err)
			}
		case err != nil:
			return fmt.Errorf("history %s: read its schema version: %w", s.Where, err)
		}
		if version > len(migrations) {
			return fmt.Errorf("history %s: %w (schema version %d; this fieldbench knows up to %d): use that fieldbench or a newer one; this one leaves it as it is", s.Where, ErrNewerSchema, version, len(migrations))
		}
		if version == len(migrations) {
			return nil
		}
		for v := version; v < len(migrations); v++ {
			for _, stmt := range migrations[v](s) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("history %s: migrate the schema to version %d: %w", s.Where, v+1, err)
				}
			}
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE history_schema SET version = ?"), len(migrations)); err != nil {
			return fmt.Errorf("history %s: %w", s.Where, err)
		}
		return tx.Commit()
	})
}

// Added says what Add did with one run.
type Added struct {
	ID string
	// New is false for a run the history already had (nothing changed,
	// unless it had no commit and was given one).
	New bool
}

// intervalColumns are the figures whose intervals are stored, with the
// column name each is stored under.
var intervalColumns = []struct{ figure, column string }{
	{"throughput", "throughput"}, {"mean", "mean"}, {"p50", "p50"}, {"p90", "p90"}, {"p99", "p99"}, {"p99.9", "p999"},
}

// Add records runs in one transaction; a run already recorded (same ID)
// is left as it is, but gets runs' commit if it had none. Two processes
// adding at once lose nothing: SQLite serializes their transactions, a
// busy one is retried.
func (s *Store) Add(ctx context.Context, runs []Run) ([]Added, error) {
	var out []Added
	err := s.whileBusy(ctx, func() error {
		out = out[:0]
		return s.add(ctx, runs, &out)
	})
	if err != nil {
		return nil, fmt.Errorf("history %s: add: %s", s.Where, redact.Text(err.Error()))
	}
	return out, nil
}

func (s *Store) add(ctx context.Context, runs []Run, out *[]Added) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	series, err := tx.PrepareContext(ctx, s.q("INSERT INTO series (id, key_json, label) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING"))
	if err != nil {
		return err
	}
	defer series.Close()
	run, err := tx.PrepareContext(ctx, s.q(`INSERT INTO runs (id, series_id, started_ns, added_ns, workload, adapter, server, server_version,
		model, mix, machine, host, kernel, fieldbench_version, commit_ref, dir, duration_s, interrupted, header_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`))
	if err != nil {
		return err
	}
	defer run.Close()
	cols := []string{"run_id", "op", "count", "errors", "error_kinds", "ops_per_sec", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "seconds"}
	for _, c := range intervalColumns {
		cols = append(cols, c.column+"_lo", c.column+"_hi")
	}
	cols = append(cols, "hist")
	op, err := tx.PrepareContext(ctx, s.q("INSERT INTO ops ("+strings.Join(cols, ", ")+") VALUES (?"+strings.Repeat(", ?", len(cols)-1)+")"))
	if err != nil {
		return err
	}
	defer op.Close()
	now := time.Now().UnixNano()
	for _, r := range runs {
		key, err := s.keyOf(r)
		if err != nil {
			return err
		}
		if _, err := series.ExecContext(ctx, r.Series, key.json(), key.label()); err != nil {
			return err
		}
		interrupted := 0
		if r.Interrupted {
			interrupted = 1
		}
		res, err := run.ExecContext(ctx, r.ID, r.Series, r.Started.UnixNano(), now, r.Workload, r.Adapter, r.Server, r.ServerVersion,
			r.Model, r.Mix, r.Machine, r.Host, r.Kernel, r.Version, r.Commit, r.Dir, r.Duration, interrupted, string(r.Header))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			if r.Commit != "" {
				if _, err := tx.ExecContext(ctx, s.q("UPDATE runs SET commit_ref = ? WHERE id = ? AND commit_ref = ''"), r.Commit, r.ID); err != nil {
					return err
				}
			}
			*out = append(*out, Added{ID: r.ID})
			continue
		}
		for _, o := range r.Ops {
			kinds, err := json.Marshal(o.ErrorKinds)
			if err != nil {
				return err
			}
			args := []any{r.ID, o.Name, o.Count, o.Errors, string(kinds), o.Rate, o.Mean, o.P50, o.P90, o.P99, o.P999, o.Max, o.Seconds}
			for _, c := range intervalColumns {
				lo, hi := sql.NullFloat64{}, sql.NullFloat64{}
				if iv, ok := o.Intervals[c.figure]; ok {
					lo, hi = sql.NullFloat64{Float64: iv[0], Valid: true}, sql.NullFloat64{Float64: iv[1], Valid: true}
				}
				args = append(args, lo, hi)
			}
			args = append(args, o.Hist)
			if _, err := op.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		*out = append(*out, Added{ID: r.ID, New: true})
	}
	return tx.Commit()
}

// keyOf is the run's series key, from its header.
func (s *Store) keyOf(r Run) (seriesKey, error) {
	var h result.Header
	if err := json.Unmarshal(r.Header, &h); err != nil {
		return seriesKey{}, fmt.Errorf("run %s: its header: %w", r.ID, err)
	}
	return seriesKeyOf(h), nil
}

// SeriesList is every series with its run count, oldest first.
func (s *Store) SeriesList(ctx context.Context) ([]Series, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.id, s.label, s.key_json, COUNT(r.id), MIN(r.started_ns), MAX(r.started_ns)
		FROM series s JOIN runs r ON r.series_id = s.id GROUP BY s.id, s.label, s.key_json ORDER BY MIN(r.started_ns), s.id`)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close()
	var out []Series
	for rows.Next() {
		var x Series
		if err := rows.Scan(&x.ID, &x.Label, &x.Key, &x.Runs, &x.First, &x.Last); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// runColumns are the runs columns Runs reads, in scan order.
const runColumns = `r.id, r.series_id, r.started_ns, r.workload, r.adapter, r.server, r.server_version, r.model, r.mix,
	r.machine, r.host, r.kernel, r.fieldbench_version, r.commit_ref, r.dir, r.duration_s, r.interrupted, r.header_json`

func scanRun(rows *sql.Rows) (Run, error) {
	var r Run
	var started int64
	var interrupted int
	var hdr string
	err := rows.Scan(&r.ID, &r.Series, &started, &r.Workload, &r.Adapter, &r.Server, &r.ServerVersion, &r.Model, &r.Mix,
		&r.Machine, &r.Host, &r.Kernel, &r.Version, &r.Commit, &r.Dir, &r.Duration, &interrupted, &hdr)
	r.Started = time.Unix(0, started).UTC()
	r.Interrupted = interrupted != 0
	r.Header = json.RawMessage(hdr)
	return r, err
}

// Runs are a series' runs in the order they started, with their
// operations' figures (not their histograms: Histogram).
func (s *Store) Runs(ctx context.Context, seriesID string) ([]Run, error) {
	return s.runs(ctx, "r.series_id = ?", seriesID)
}

// Run is the run whose ID starts with prefix (a unique prefix names one).
func (s *Store) Run(ctx context.Context, prefix string) (Run, error) {
	if prefix == "" || strings.ContainsAny(prefix, "%_") {
		return Run{}, fmt.Errorf("no run %q in the history", prefix)
	}
	runs, err := s.runs(ctx, "r.id LIKE ?", prefix+"%")
	switch {
	case err != nil:
		return Run{}, err
	case len(runs) == 0:
		return Run{}, fmt.Errorf("no run %q in the history", prefix)
	case len(runs) > 1:
		return Run{}, fmt.Errorf("run %q is ambiguous: %d runs' IDs start with it", prefix, len(runs))
	}
	return runs[0], nil
}

func (s *Store) runs(ctx context.Context, where string, arg any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT "+runColumns+" FROM runs r WHERE "+where+" ORDER BY r.started_ns, r.id"), arg)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	var out []Run
	index := map[string]int{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		index[r.ID] = len(out)
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	cols := []string{"o.run_id", "o.op", "o.count", "o.errors", "o.error_kinds", "o.ops_per_sec", "o.mean_us", "o.p50_us", "o.p90_us", "o.p99_us", "o.p999_us", "o.max_us", "o.seconds"}
	for _, c := range intervalColumns {
		cols = append(cols, "o."+c.column+"_lo", "o."+c.column+"_hi")
	}
	rows, err = s.db.QueryContext(ctx, s.q("SELECT "+strings.Join(cols, ", ")+" FROM ops o JOIN runs r ON r.id = o.run_id WHERE "+where), arg)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, kinds string
		var o Op
		ivs := make([]sql.NullFloat64, 2*len(intervalColumns))
		dest := []any{&id, &o.Name, &o.Count, &o.Errors, &kinds, &o.Rate, &o.Mean, &o.P50, &o.P90, &o.P99, &o.P999, &o.Max, &o.Seconds}
		for i := range ivs {
			dest = append(dest, &ivs[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		if kinds != "" && kinds != "null" {
			if err := json.Unmarshal([]byte(kinds), &o.ErrorKinds); err != nil {
				return nil, fmt.Errorf("history %s: run %s, %s: error kinds: %w", s.Where, id, o.Name, err)
			}
		}
		for i, c := range intervalColumns {
			lo, hi := ivs[2*i], ivs[2*i+1]
			if lo.Valid && hi.Valid && !math.IsNaN(lo.Float64) {
				if o.Intervals == nil {
					o.Intervals = map[string][2]float64{}
				}
				o.Intervals[c.figure] = [2]float64{lo.Float64, hi.Float64}
			}
		}
		if i, ok := index[id]; ok {
			out[i].Ops = append(out[i].Ops, o)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	for i := range out {
		sort.Slice(out[i].Ops, func(a, b int) bool { return out[i].Ops[a].Name < out[i].Ops[b].Name })
	}
	return out, nil
}

// Histogram is a run's operation's merged histogram as stored (decode
// with DecodeHist); nil when the run had none for it.
func (s *Store) Histogram(ctx context.Context, runID, op string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.q("SELECT hist FROM ops WHERE run_id = ? AND op = ?"), runID, op).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s has no operation %q", runID, op)
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return b, nil
}

// Count is how many runs the history holds.
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs").Scan(&n); err != nil {
		return 0, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return n, nil
}
