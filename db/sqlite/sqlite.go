// Package sqlite is fieldbench's embedded default adapter: a single-file
// SQLite database reached through modernc.org/sqlite (pure Go, no cgo). It is
// the single-node baseline the studies compare disk use against.
//
// DSN: sqlite:///abs/path/file.db (or sqlite://relative.db). The file is
// created when missing; its directory must exist.
//
// The database runs in WAL mode and is reached through two pools on the same
// file: a writer pool of exactly one connection, through which every write
// and write transaction goes (so concurrent clients queue in Go instead of
// spinning on SQLITE_BUSY), and a reader pool of several query-only
// connections (WAL readers never block the writer nor each other).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Name is the adapter's name and its DSN scheme.
const Name = "sqlite"

// busyTimeoutMS is how long a connection waits for a lock held by another
// process (or a checkpoint) before failing with SQLITE_BUSY.
const busyTimeoutMS = 10000

func init() { adapter.Register(Adapter{}) }

// Adapter opens SQLite database files. It is registered under the name and
// scheme "sqlite".
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Embedded implements adapter.Embedded: an SQLite database is a file.
func (Adapter) Embedded() {}

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter: the families whose Backend *DB
// implements.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "embedded SQLite file (pure Go, WAL, one writer + pooled readers); DSN sqlite:///path/to/file.db"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) {
	return Open(ctx, dsn)
}

// CheckDSN implements adapter.Adapter: the DSN's form, and that the file
// can be made (its directory exists, it is no directory itself), creating
// nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := checkFile(dsn)
	return err
}

// ParseDSN returns the file path of a sqlite:// DSN: everything after
// "sqlite://", so sqlite:///tmp/x.db is /tmp/x.db and sqlite://x.db is x.db
// relative to the working directory.
func ParseDSN(dsn string) (string, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (string, error) {
	rest, ok := strings.CutPrefix(dsn, Name+"://")
	shown := redact.DSN(dsn)
	if !ok {
		return "", fmt.Errorf("sqlite DSN %q must start with sqlite:// (e.g. sqlite:///tmp/fb.db)", shown)
	}
	if rest == "" {
		return "", fmt.Errorf("sqlite DSN %q has no file path (e.g. sqlite:///tmp/fb.db)", shown)
	}
	if strings.ContainsAny(rest, "?#") {
		return "", fmt.Errorf("sqlite DSN %q: options after '?' or '#' are not supported; give a plain file path", shown)
	}
	if rest == ":memory:" || strings.HasPrefix(rest, "file:") {
		return "", fmt.Errorf("sqlite DSN %q: in-memory databases and file: URIs are not supported (the adapter uses two connection pools on one file); give a file path", shown)
	}
	return rest, nil
}

// DB is an open SQLite database file. It implements adapter.DB,
// adapter.Sizer and microblog.Backend.
type DB struct {
	path string  // absolute path of the database file
	w    *sql.DB // writer pool: exactly one connection
	r    *sql.DB // reader pool: query-only connections
	nr   int     // reader pool size
}

var (
	_ adapter.DB        = (*DB)(nil)
	_ adapter.Sizer     = (*DB)(nil)
	_ adapter.Pooler    = (*DB)(nil)
	_ microblog.Backend = (*DB)(nil)
)

// filePath is the absolute path of the database file dsn names.
func filePath(dsn string) (string, error) {
	p, err := ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("sqlite: resolve path %q: %w", p, err)
	}
	return abs, nil
}

// OpenExisting implements adapter.ExistingOpener.
func (Adapter) OpenExisting(ctx context.Context, dsn string) (adapter.DB, error) {
	return OpenExisting(ctx, dsn)
}

// OpenExisting is Open for a database file that must exist: a missing one
// is an error wrapping adapter.ErrNoDatabase, and no file is created.
func OpenExisting(ctx context.Context, dsn string) (*DB, error) {
	abs, err := filePath(dsn)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("sqlite: %s does not exist (load data into it first): %w", abs, adapter.ErrNoDatabase)
	case err != nil:
		return nil, fmt.Errorf("sqlite: check %s: %w", abs, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("sqlite: %s is not a database file", abs)
	}
	return Open(ctx, dsn)
}

// checkFile returns the absolute path of the file dsn names, once it is
// known that the file can be made there: a DSN naming a file that cannot
// be is bad input (exit 2), not a failure of the database.
func checkFile(dsn string) (string, error) {
	abs, err := filePath(dsn)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	// The path is named only when Redact finds nothing to hide in the
	// DSN: sqlite://user:pw/x.db is a relative path, but reads as a
	// userinfo whose '@' was forgotten.
	shownDir, shownFile := dir, abs
	if r := redact.DSN(dsn); r != dsn {
		shownDir, shownFile = "of "+r, r
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", adapter.BadDSN(fmt.Errorf("sqlite: directory %s does not exist (create it first): %w", shownDir, os.ErrNotExist))
	case err != nil && shownDir == dir:
		return "", fmt.Errorf("sqlite: check directory %s: %w", dir, err)
	case err != nil:
		return "", fmt.Errorf("sqlite: check directory %s: cannot read it", shownDir)
	case !st.IsDir():
		return "", adapter.BadDSN(fmt.Errorf("sqlite: %s is not a directory", shownDir))
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return "", adapter.BadDSN(fmt.Errorf("sqlite: %s is a directory, not a database file", shownFile))
	}
	return abs, nil
}

// Open opens (creating if needed) the database file named by dsn.
func Open(ctx context.Context, dsn string) (*DB, error) {
	abs, err := checkFile(dsn)
	if err != nil {
		return nil, err
	}

	common := "_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMS) + ")" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(0)"
	// The writer sets WAL (persistent in the file) before any reader opens.
	// BEGIN IMMEDIATE takes the write lock up front, so a write transaction
	// never has to upgrade a read lock (which can fail with SQLITE_BUSY when
	// another process writes).
	w, err := sql.Open("sqlite", abs+"?"+common+"&_pragma=journal_mode(WAL)&_pragma=cache_size(-65536)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer pool on %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := pingWaiting(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	var mode string
	if err := w.QueryRowContext(ctx, "pragma journal_mode").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: read journal_mode of %s: %w", abs, err)
	}
	if !strings.EqualFold(mode, "wal") {
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: could not switch to WAL journal mode (got %q)", abs, mode)
	}

	r, err := sql.Open("sqlite", abs+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open reader pool on %s: %w", abs, err)
	}
	nr := min(max(4, 2*runtime.GOMAXPROCS(0)), 16)
	r.SetMaxOpenConns(nr)
	r.SetMaxIdleConns(nr)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	if err := pingWaiting(ctx, r); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open reader on %s: %w", abs, err)
	}
	return &DB{path: abs, w: w, r: r, nr: nr}, nil
}

// pingWaiting opens a pool's first connection, trying again while another
// process holds the file's lock, for up to the busy timeout. Switching a
// file to WAL takes an exclusive lock, and when two processes open a new
// file at once (shards loading their parts) SQLite returns SQLITE_BUSY to
// one of them at once, without its busy handler, since waiting could
// deadlock: the loser's retry finds the file in WAL mode already. A reader
// can meet the same while another connection recovers the WAL.
func pingWaiting(ctx context.Context, pool *sql.DB) error {
	until := time.Now().Add(busyTimeoutMS * time.Millisecond)
	return whileBusy(ctx, until, func() error { return pool.PingContext(ctx) })
}

// Path is the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Pools implements adapter.Pooler: database/sql's statistics of the writer
// pool (one connection) and the reader pool.
func (db *DB) Pools() adapter.PoolStats {
	return adapter.SQLPoolStats(db.w).Add(adapter.SQLPoolStats(db.r))
}

// Close closes both pools.
func (db *DB) Close() error {
	return errors.Join(db.r.Close(), db.w.Close())
}

// Info implements adapter.DB.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	var version, mode string
	var sync, pageSize int64
	if err := db.r.QueryRowContext(ctx, "select sqlite_version()").Scan(&version); err != nil {
		return adapter.Info{}, fmt.Errorf("sqlite: read version: %w", err)
	}
	if err := db.r.QueryRowContext(ctx, "pragma journal_mode").Scan(&mode); err != nil {
		return adapter.Info{}, fmt.Errorf("sqlite: read journal_mode: %w", err)
	}
	if err := db.r.QueryRowContext(ctx, "pragma synchronous").Scan(&sync); err != nil {
		return adapter.Info{}, fmt.Errorf("sqlite: read synchronous: %w", err)
	}
	if err := db.r.QueryRowContext(ctx, "pragma page_size").Scan(&pageSize); err != nil {
		return adapter.Info{}, fmt.Errorf("sqlite: read page_size: %w", err)
	}
	model, err := db.MicroblogModel(ctx)
	if err != nil {
		return adapter.Info{}, err
	}
	syncNames := []string{"OFF", "NORMAL", "FULL", "EXTRA"}
	syncName := strconv.FormatInt(sync, 10)
	if sync >= 0 && int(sync) < len(syncNames) {
		syncName = syncNames[sync]
	}
	cfg := map[string]string{
		"path":         db.path,
		"journal_mode": strings.ToLower(mode),
		"synchronous":  syncName,
		"page_size":    strconv.FormatInt(pageSize, 10),
		"busy_timeout": strconv.Itoa(busyTimeoutMS) + "ms",
		"writer_conns": "1",
		"reader_conns": strconv.Itoa(db.nr),
		"driver":       "modernc.org/sqlite",
	}
	if model != "" {
		cfg["microblog_model"] = string(model)
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// SizeBytes implements adapter.Sizer: the size of the database file plus its
// write-ahead log.
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	var total int64
	for _, p := range []string{db.path, db.path + "-wal"} {
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("sqlite: size of %s: %w", p, err)
		}
		total += st.Size()
	}
	return total, nil
}
