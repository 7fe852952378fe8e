// Package postgres is fieldbench's PostgreSQL adapter (pgx v5, pgxpool). It
// implements every workload family: microblog (all three data models), wiki,
// ingest (COPY) and trajectory (PostGIS).
//
// DSN: postgres://user[:password]@host:port/db?sslmode=disable (scheme
// postgres or postgresql; every pgx/libpq parameter works, e.g.
// pool_max_conns). Two parameters are fieldbench's own and are removed
// before pgx sees the DSN:
//
//   - replicas=host:port,host:port lists streaming replicas of the primary
//     the DSN names (the postgres cluster engine writes it);
//   - read_from=replicas sends the read operations (userline, timeline,
//     wiki read, trajectory queries) round robin to pools over those
//     replicas. Replicas lag behind the primary: a read right after a write
//     may not see it. Writes, and reads that a write depends on (a post's
//     follower list), always go to the primary.
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with its families (microblog.go, wiki.go,
// ingest.go, trajectory.go), the cluster engine that starts a primary and
// its streaming replicas (engine.go) and the convergence prober that reads
// each replica (convergence.go); db/all links it into the binary.
package postgres

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/redact"
)

// Name is the adapter's name.
const Name = "postgres"

// defaultPoolConns is each pool's size when the DSN sets no pool_max_conns:
// pgxpool's own default (max(4, CPUs)) would queue a 200-client run in Go
// instead of letting the server see the study's concurrency.
const defaultPoolConns = 64

func init() { adapter.Register(Adapter{}) }

// Adapter opens PostgreSQL databases. It is registered under the name
// "postgres" and the schemes postgres and postgresql.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"postgres", "postgresql"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "PostgreSQL + PostGIS via pgx (COPY bulk loads; reads optionally from streaming replicas); DSN postgres://user@host:port/db?sslmode=disable[&replicas=h:p,...&read_from=replicas]"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) {
	return Open(ctx, dsn)
}

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Options are what ParseDSN extracts from a DSN.
type Options struct {
	Primary  string   // the DSN pgx gets, without fieldbench's parameters
	Replicas []string // one DSN per replica (the primary's with its host:port)
	// ReadFromReplicas sends reads to the replicas.
	ReadFromReplicas bool
}

// ParseDSN splits a DSN into the primary's and the replicas' connection
// strings.
func ParseDSN(dsn string) (Options, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Options, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return Options{}, fmt.Errorf("postgres: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return Options{}, fmt.Errorf("postgres: DSN %s must start with postgres:// or postgresql://", redact.DSN(dsn))
	}
	if u.Host == "" {
		return Options{}, fmt.Errorf("postgres: DSN %s names no host:port", redact.DSN(dsn))
	}
	q := u.Query()
	var o Options
	reps := q.Get("replicas")
	switch rf := q.Get("read_from"); rf {
	case "", "primary":
	case "replicas":
		o.ReadFromReplicas = true
	default:
		return Options{}, fmt.Errorf("postgres: read_from=%q in the DSN: want primary or replicas", rf)
	}
	q.Del("replicas")
	q.Del("read_from")
	u.RawQuery = q.Encode()
	o.Primary = u.String()
	for _, h := range strings.Split(reps, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if err := adapter.CheckAddr(h); err != nil {
			return Options{}, fmt.Errorf("postgres: replicas=%s in the DSN: %w", h, err)
		}
		r := *u
		r.Host = h
		o.Replicas = append(o.Replicas, r.String())
	}
	if o.ReadFromReplicas && len(o.Replicas) == 0 {
		return Options{}, fmt.Errorf("postgres: read_from=replicas but the DSN lists no replicas (add replicas=host:port,...)")
	}
	return o, nil
}

// DB is an open PostgreSQL database: a pool on the primary and, when reads
// go to replicas, one pool per replica.
type DB struct {
	w     *pgxpool.Pool   // primary: every write
	reads []*pgxpool.Pool // where reads go (the primary unless read_from=replicas)
	next  atomic.Uint64   // round robin over reads
	// backoffs space out dials to a server that refuses them, one per
	// pool (per server); see adapter.Backoff.
	backoffs []*adapter.Backoff
	// held keeps the wiki read's connections of the primary's pool
	// between reads (held.go); nil when reads go to replicas.
	held *heldConns
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Sizer       = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ adapter.Pooler      = (*DB)(nil)
)

// newPool opens a pool whose every new connection dials through b.
func newPool(ctx context.Context, dsn string, b *adapter.Backoff) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, adapter.BadDSN(fmt.Errorf("postgres: parse DSN %s: %w", redact.DSN(dsn), err))
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultPoolConns
	}
	cfg.ConnConfig.BuildFrontend = bufferedFrontend
	// Raw reads and writes: no hand-over of the processor per request (see
	// adapter/rawio). The dial is fieldbench's default (netdial), not
	// pgconn's own: during an experiment on hosts it opens each connection
	// inside the load host's namespace, the only place the nodes'
	// addresses are reachable from (docs/network.md).
	raw := rawio.Dial(b.DialFunc(nil))
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := raw(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &pgNet{Conn: nc}, nil // the wiki read's way to the socket (wikiread.go)
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", cfg.ConnConfig.Host+":"+strconv.Itoa(int(cfg.ConnConfig.Port)), err)
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("postgres: connect to %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return p, nil
}

// readBufferSize is how much of the server's replies one read system call
// may take. pgx's reader takes 8 KiB at a time and reads the rest of a
// larger message, and the message after it, with more calls: a 40 KB
// article cost three reads. 64 KiB holds a typical reply whole (see
// docs/postgres.md, "Client efficiency").
const readBufferSize = 64 << 10

// bufferedFrontend is pgx's default frontend reading through a larger
// buffer. pgx's own buffer sits above it unchanged. The buffer is kept on
// the connection (pgNet) so that the wiki read, which takes its replies
// from the socket itself, uses the connection only when pgx left nothing
// unread in it (SyncConn checks pgx's own buffer, not this one).
func bufferedFrontend(r io.Reader, w io.Writer) *pgproto3.Frontend {
	br := bufio.NewReaderSize(r, readBufferSize)
	if pn, ok := w.(*pgNet); ok {
		pn.br = br
	}
	return pgproto3.NewFrontend(br, w)
}

// Open connects to the primary (and the replicas when read_from=replicas).
func Open(ctx context.Context, dsn string) (*DB, error) {
	o, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	wb := adapter.NewBackoff()
	w, err := newPool(ctx, o.Primary, wb)
	if err != nil {
		return nil, err
	}
	db := &DB{w: w, reads: []*pgxpool.Pool{w}, backoffs: []*adapter.Backoff{wb}, held: newHeldConns(w)}
	if o.ReadFromReplicas {
		db.reads, db.held = nil, nil
		for _, r := range o.Replicas {
			rb := adapter.NewBackoff()
			db.backoffs = append(db.backoffs, rb)
			p, err := newPool(ctx, r, rb)
			if err != nil {
				db.Close()
				return nil, fmt.Errorf("postgres: replica: %w", err)
			}
			db.reads = append(db.reads, p)
		}
	}
	return db, nil
}

// Reconnects implements adapter.Reconnector: the dials of every pool.
func (db *DB) Reconnects() adapter.BackoffStats {
	return adapter.SumStats(db.backoffs)
}

// Pools implements adapter.Pooler: pgxpool's statistics of the primary's
// pool and of each replica's (waits are acquisitions that found the pool
// empty).
func (db *DB) Pools() adapter.PoolStats {
	var sum adapter.PoolStats
	for i, p := range append([]*pgxpool.Pool{db.w}, db.reads...) {
		if i > 0 && p == db.w {
			continue // reads go to the primary: counted once
		}
		s := p.Stat()
		sum = sum.Add(adapter.PoolStats{Open: int(s.TotalConns()), Max: int(s.MaxConns()),
			Waits: s.EmptyAcquireCount(), Waited: s.EmptyAcquireWaitTime()})
	}
	return sum
}

// reader is the pool the next read goes to.
func (db *DB) reader() *pgxpool.Pool {
	if len(db.reads) == 1 {
		return db.reads[0]
	}
	return db.reads[db.next.Add(1)%uint64(len(db.reads))]
}

// ReadsFromReplicas reports whether reads go to replicas.
func (db *DB) ReadsFromReplicas() bool { return len(db.reads) > 0 && db.reads[0] != db.w }

// Close closes every pool.
func (db *DB) Close() error {
	if db.held != nil {
		db.held.close() // the pool's Close waits for every acquired connection
	}
	for _, p := range db.reads {
		if p != db.w {
			p.Close()
		}
	}
	db.w.Close()
	return nil
}

// Info implements adapter.DB: the server version and the settings that
// shape results.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	var version string
	if err := db.w.QueryRow(ctx, "select current_setting('server_version')").Scan(&version); err != nil {
		return adapter.Info{}, fmt.Errorf("postgres: read version: %w", err)
	}
	cfg := map[string]string{}
	rows, err := db.w.Query(ctx, `select name, setting || coalesce(unit, '') from pg_settings
		where name = any($1)`, []string{"shared_buffers", "synchronous_commit", "fsync", "wal_level",
		"max_connections", "work_mem", "effective_cache_size", "full_page_writes", "wal_buffers",
		"checkpoint_timeout", "max_wal_size", "synchronous_standby_names"})
	if err != nil {
		return adapter.Info{}, fmt.Errorf("postgres: read settings: %w", err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return adapter.Info{}, fmt.Errorf("postgres: read settings: %w", err)
		}
		cfg[k] = v
	}
	if err := rows.Err(); err != nil {
		return adapter.Info{}, fmt.Errorf("postgres: read settings: %w", err)
	}
	var postgis string
	if err := db.w.QueryRow(ctx, `select coalesce((select extversion from pg_extension where extname = 'postgis'), '')`).Scan(&postgis); err == nil && postgis != "" {
		cfg["postgis"] = postgis
	}
	var full string
	if err := db.w.QueryRow(ctx, "select version()").Scan(&full); err == nil {
		cfg["version"] = full
	}
	cfg["driver"] = "github.com/jackc/pgx/v5 (pgxpool)"
	cfg["pool_max_conns"] = strconv.Itoa(int(db.w.Config().MaxConns))
	cfg["read_from"] = "primary"
	if db.ReadsFromReplicas() {
		cfg["read_from"] = "replicas"
		cfg["replicas"] = strconv.Itoa(len(db.reads))
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// SizeBytes implements adapter.Sizer: pg_database_size of the current
// database on the primary (tables, indexes, TOAST; not the WAL).
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := db.w.QueryRow(ctx, "select pg_database_size(current_database())").Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: database size: %w", err)
	}
	return n, nil
}
