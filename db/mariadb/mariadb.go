// Package mariadb is fieldbench's adapter for MariaDB (and MySQL), a single
// server or a Galera cluster, through github.com/go-sql-driver/mysql.
//
// DSN: mariadb://user:password@host:port/database[?nodes=h2:p2,h3:p3&...]
// (scheme mysql:// too). nodes lists further servers of a Galera cluster:
// the adapter keeps one connection pool per server and spreads operations
// over them round-robin (a transaction stays on one). Any other parameter is
// handed to the driver (e.g. timeout=5s, tls=true) or, when the driver does
// not know it, set as a session variable on every connection (e.g.
// wsrep_sync_wait=1 for causal reads across Galera nodes).
//
// Statements are sent with client-side parameter interpolation: one round
// trip per statement instead of prepare + execute + close.
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with its families (microblog.go, wiki.go,
// ingest.go, trajectory.go), the cluster engine that starts one server or
// a Galera cluster (engine.go) and the convergence prober that reads each
// Galera node (convergence.go); db/all links it into the binary.
package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name.
const Name = "mariadb"

func init() { adapter.Register(Adapter{}) }

// Adapter opens MariaDB/MySQL databases (schemes mariadb and mysql).
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"mariadb", "mysql"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "MariaDB/MySQL server or Galera cluster (go-sql-driver/mysql); DSN mariadb://user:pass@host:port/db[?nodes=host:port,...]"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Config is a parsed DSN: one driver config per server.
type Config struct {
	Nodes []*mysql.Config
}

// ParseDSN turns a mariadb:// or mysql:// URL into driver configs, one per
// server (the URL's host first, then nodes=). Errors never quote the DSN,
// which holds a password.
func ParseDSN(dsn string) (*Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (*Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	if u.Scheme != "mariadb" && u.Scheme != "mysql" {
		return nil, fmt.Errorf("mariadb: DSN scheme %q: want mariadb:// or mysql://", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("mariadb: DSN has no host:port (mariadb://user:password@127.0.0.1:3306/fieldbench)")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, errors.New("mariadb: DSN names no database (mariadb://user:password@127.0.0.1:3306/fieldbench)")
	}
	addrs := []string{u.Host}
	q := u.Query()
	if n := q.Get("nodes"); n != "" {
		for _, a := range strings.Split(n, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	q.Del("nodes")
	c := &Config{}
	for _, a := range addrs {
		if !strings.Contains(a, ":") || strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
			a += ":3306"
		}
		if err := adapter.CheckAddr(a); err != nil {
			return nil, fmt.Errorf("mariadb: DSN node %s: %w", a, err)
		}
		cfg := mysql.NewConfig()
		if u.User != nil {
			cfg.User = u.User.Username()
			cfg.Passwd, _ = u.User.Password()
		}
		cfg.Net, cfg.Addr, cfg.DBName = "tcp", a, db
		cfg.Loc = time.UTC
		cfg.InterpolateParams = true
		cfg.ClientFoundRows = true // "rows matched", so an update to the same value is not "not found"
		cfg.MaxAllowedPacket = 0   // read it from the server
		cfg.Timeout = 10 * time.Second
		if len(q) > 0 {
			// Let the driver parse its own parameters (and keep unknown ones
			// as session variables).
			extra, err := mysql.ParseDSN("/" + db + "?" + q.Encode())
			if err != nil {
				return nil, fmt.Errorf("mariadb: DSN parameters: %w", err)
			}
			for k, v := range q {
				if err := applyParam(cfg, extra, k, v[len(v)-1]); err != nil {
					return nil, err
				}
			}
		}
		c.Nodes = append(c.Nodes, cfg)
	}
	return c, nil
}

// applyParam copies one DSN parameter the driver parsed into cfg.
func applyParam(cfg, parsed *mysql.Config, k, v string) error {
	switch k {
	case "timeout":
		cfg.Timeout = parsed.Timeout
	case "readTimeout":
		cfg.ReadTimeout = parsed.ReadTimeout
	case "writeTimeout":
		cfg.WriteTimeout = parsed.WriteTimeout
	case "tls":
		cfg.TLSConfig, cfg.TLS = parsed.TLSConfig, parsed.TLS
	case "interpolateParams":
		cfg.InterpolateParams = parsed.InterpolateParams
	case "maxAllowedPacket":
		cfg.MaxAllowedPacket = parsed.MaxAllowedPacket
	case "charset", "collation", "loc", "parseTime", "clientFoundRows", "allowNativePasswords", "allowCleartextPasswords":
		return fmt.Errorf("mariadb: DSN parameter %s is set by the adapter", k)
	default:
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[k] = v
	}
	return nil
}

// DB is an open MariaDB database: one pool per server.
type DB struct {
	pools []*sql.DB
	addrs []string
	next  atomic.Uint64
	conns int
	// backoffs space out dials to a server that refuses them, one per
	// server; see adapter.Backoff.
	backoffs []*adapter.Backoff
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Sizer       = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ adapter.Pooler      = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ trajectory.Backend  = (*DB)(nil)
)

// maxIdle is each pool's idle connection cap: enough for the studies'
// client counts without reconnecting.
const maxIdle = 256

// Open connects to every server of dsn.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	db := &DB{conns: maxIdle}
	for _, c := range cfg.Nodes {
		b := adapter.NewBackoff()
		// Raw reads and writes (see adapter/rawio) over fieldbench's
		// default dial (netdial), never the driver's own: during an
		// experiment on hosts it opens each connection inside the load
		// host's namespace, the only place the nodes' addresses are
		// reachable from (docs/network.md).
		c.DialFunc = rawio.Dial(b.DialFunc(nil))
		db.backoffs = append(db.backoffs, b)
		conn, err := mysql.NewConnector(c)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("mariadb: %s: %w", c.Addr, err)
		}
		p := sql.OpenDB(conn)
		p.SetMaxIdleConns(maxIdle)
		p.SetConnMaxLifetime(0)
		p.SetConnMaxIdleTime(5 * time.Minute)
		db.pools = append(db.pools, p)
		db.addrs = append(db.addrs, c.Addr)
		if err := p.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("mariadb: connect to %s: %w", c.Addr, err)
		}
	}
	return db, nil
}

// Reconnects implements adapter.Reconnector: the dials to every server.
func (db *DB) Reconnects() adapter.BackoffStats {
	return adapter.SumStats(db.backoffs)
}

// Pools implements adapter.Pooler: database/sql's statistics of every
// server's pool (unbounded: Max is 0, the idle cap is maxIdle).
func (db *DB) Pools() adapter.PoolStats {
	var sum adapter.PoolStats
	for _, p := range db.pools {
		sum = sum.Add(adapter.SQLPoolStats(p))
	}
	return sum
}

// pick returns the next server's pool, round-robin.
func (db *DB) pick() *sql.DB {
	if len(db.pools) == 1 {
		return db.pools[0]
	}
	return db.pools[db.next.Add(1)%uint64(len(db.pools))]
}

// first is the pool of the DSN's host: schema changes and bulk loads go
// there, so a Galera cluster orders them through one node.
func (db *DB) first() *sql.DB { return db.pools[0] }

// Close closes every pool.
func (db *DB) Close() error {
	var errs []error
	for _, p := range db.pools {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// infoVars are the server settings recorded in every result file.
var infoVars = []string{
	"version_comment", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "innodb_log_file_size",
	"sync_binlog", "log_bin", "binlog_format", "tx_isolation", "transaction_isolation", "max_connections",
	"character_set_server", "collation_server", "wsrep_on", "wsrep_sst_method", "wsrep_slave_threads",
}

// Info implements adapter.DB: the version and key settings of the first
// server, and in Galera the cluster's size and state.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	p := db.first()
	var version string
	if err := p.QueryRowContext(ctx, "select version()").Scan(&version); err != nil {
		return adapter.Info{}, fmt.Errorf("mariadb: read version: %w", err)
	}
	cfg := map[string]string{
		"driver":  "github.com/go-sql-driver/mysql",
		"servers": strconv.Itoa(len(db.pools)),
		"addrs":   strings.Join(db.addrs, ","),
	}
	read := func(q string) error {
		rows, err := p.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("mariadb: read settings: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return fmt.Errorf("mariadb: read settings: %w", err)
			}
			cfg[strings.ToLower(k)] = v
		}
		return rows.Err()
	}
	if err := read("show global variables where variable_name in ('" + strings.Join(infoVars, "','") + "')"); err != nil {
		return adapter.Info{}, err
	}
	if cfg["wsrep_on"] == "ON" {
		if err := read("show global status where variable_name in ('wsrep_cluster_size','wsrep_cluster_status','wsrep_provider_version')"); err != nil {
			return adapter.Info{}, err
		}
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// SizeBytes implements adapter.Sizer: data and index bytes of the
// database's tables from information_schema, after ANALYZE TABLE so
// InnoDB's page statistics are current (they are estimates otherwise).
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	p := db.first()
	rows, err := p.QueryContext(ctx, "select table_name from information_schema.tables where table_schema = database() and table_type = 'BASE TABLE'")
	if err != nil {
		return 0, fmt.Errorf("mariadb: list tables: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return 0, fmt.Errorf("mariadb: list tables: %w", err)
		}
		tables = append(tables, "`"+t+"`")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("mariadb: list tables: %w", err)
	}
	if len(tables) > 0 {
		ar, err := p.QueryContext(ctx, "analyze table "+strings.Join(tables, ", "))
		if err != nil {
			return 0, fmt.Errorf("mariadb: analyze tables: %w", err)
		}
		for ar.Next() {
		}
		ar.Close()
	}
	var n int64
	if err := p.QueryRowContext(ctx,
		"select coalesce(sum(data_length + index_length), 0) from information_schema.tables where table_schema = database()").Scan(&n); err != nil {
		return 0, fmt.Errorf("mariadb: size: %w", err)
	}
	return n, nil
}

// values returns "(?,?,?),(?,?,?)" for rows rows of cols columns.
func values(cols, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	var b strings.Builder
	b.Grow(rows * (len(row) + 1))
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// isRetryable reports a deadlock or a Galera certification failure
// (both error 1213): the transaction was rolled back and may be retried.
func isRetryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// inTx runs fn in a transaction on pool, retrying a few times when the
// server rolled it back for a deadlock or a certification conflict.
func inTx(ctx context.Context, pool *sql.DB, what string, fn func(tx *sql.Tx) error) error {
	return inTxOpts(ctx, pool, what, nil, fn)
}

// inTxOpts is inTx with transaction options (an isolation level).
func inTxOpts(ctx context.Context, pool *sql.DB, what string, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = func() error {
			tx, err := pool.BeginTx(ctx, opts)
			if err != nil {
				return fmt.Errorf("mariadb: begin %s: %w", what, err)
			}
			if err := fn(tx); err != nil {
				_ = tx.Rollback()
				return err
			}
			if err := tx.Commit(); err != nil {
				return fmt.Errorf("mariadb: commit %s: %w", what, err)
			}
			return nil
		}()
		if err == nil || !isRetryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	return err
}
