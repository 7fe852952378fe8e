// Package rethinkdb is fieldbench's adapter for RethinkDB, through the
// community Go driver gopkg.in/rethinkdb/rethinkdb-go.v6 (RethinkDB's
// drivers page lists it; the github.com/rethinkdb/rethinkdb-go path does
// not build as a module: its go.mod declares the gopkg.in path). It speaks
// only ReQL over the driver protocol, so it works against a real RethinkDB
// and against reqlite, the JavaScript reimplementation of RethinkDB 2.2 that
// `cluster up rethinkdb` starts here (RethinkDB itself cannot be installed
// on these machines). Info reports which one answered, so a result
// measured on reqlite never says RethinkDB. docs/rethinkdb.md describes
// every table and index.
//
// DSN:
//
//	rethinkdb://[user[:password]@]host:port[/database][?parts=N&timeout=D]
//
// The user defaults to admin, the database to "fieldbench" (created when
// missing). parts=N (1..168, default 168) is how many tables the
// trajectory records are split into by hour of the week (see
// trajectory.go); timeout= bounds connecting and each read and write on
// the wire (default 30s).
//
// Not verified here (reqlite has none of them): table configuration
// (shards, replicas, write acknowledgements), persistence, clusters of
// several servers, and the speed of RethinkDB's real indexes.
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with a file per family (ingest.go,
// trajectory.go), the cluster engine that starts reqlite (engine.go), what
// an external cluster asks a RethinkDB (external.go) and convergence's
// refusal (convergence.go); db/all links it into the binary.
package rethinkdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Name is the adapter's name.
const Name = "rethinkdb"

// NotVerified marks what no server on this machine runs; it goes into
// `list`, the result's database config and the docs.
const NotVerified = "not verified here"

// notVerifiedWhat is what NotVerified applies to.
const notVerifiedWhat = "table configuration (shards, replicas, write acks), persistence, clusters, RethinkDB's own index speed"

func init() { adapter.Register(Adapter{}) }

// Adapter opens rethinkdb:// DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"rethinkdb"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "RethinkDB (rethinkdb-go v6 driver; tested here against reqlite 2.3.0, a JavaScript reimplementation of RethinkDB 2.2 " +
		"whose figures say nothing about RethinkDB's speed); DSN rethinkdb://[user:pass@]host:port/database[?parts=N]; " +
		NotVerified + ": " + notVerifiedWhat
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Config is a parsed DSN.
type Config struct {
	Address  string
	User     string
	Password string
	Database string
	// Parts is how many tables the trajectory records are split into.
	Parts   int
	Timeout time.Duration
}

// maxParts is one table per hour of the week.
const maxParts = 7 * 24

// ParseDSN reads a rethinkdb:// DSN; its errors wrap adapter.ErrBadDSN and
// never show the password.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

func parseDSN(dsn string) (Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return Config{}, fmt.Errorf("rethinkdb: %w", err)
	}
	if u.Scheme != Name || u.Host == "" || u.Port() == "" {
		return Config{}, fmt.Errorf("rethinkdb DSN must look like rethinkdb://[user:password@]host:port[/database][?parts=N] (got %q)", redact.DSN(dsn))
	}
	c := Config{Address: u.Host, User: "admin", Database: strings.Trim(u.Path, "/"), Parts: maxParts, Timeout: 30 * time.Second}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if c.Database == "" {
		c.Database = "fieldbench"
	}
	if !validName(c.Database) {
		return Config{}, fmt.Errorf("rethinkdb DSN: database %q: want letters, digits and _ only", c.Database)
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "parts":
			c.Parts, err = strconv.Atoi(v)
			if err == nil && (c.Parts < 1 || c.Parts > maxParts) {
				err = fmt.Errorf("want 1..%d", maxParts)
			}
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
			if err == nil && c.Timeout <= 0 {
				err = errors.New("want a positive duration")
			}
		default:
			return Config{}, fmt.Errorf("rethinkdb DSN: unknown option %q (known: parts, timeout)", k)
		}
		if err != nil {
			return Config{}, fmt.Errorf("rethinkdb DSN option %s=%q: %w", k, v, err)
		}
	}
	return c, nil
}

// validName is RethinkDB's rule for database and table names.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// DB is a session on one database. It implements adapter.DB and the
// ingest and trajectory Backends.
type DB struct {
	cfg   Config
	s     *r.Session
	relay *netdial.Relay // the driver's way to a load host's dial, or nil
	db    r.Term

	mu     sync.Mutex
	tables map[string]bool // tables this DB knows exist, with their indexes

	// serialPoints sends the requests that hold an r.point term one at a
	// time (pointMu): reqlite evaluates r.point through a variable that
	// every query in flight shares, so with 4 concurrent inserts 150 of 200
	// points got another document's coordinates (measured here). Set when
	// the server is reqlite; a real RethinkDB gets them concurrently.
	serialPoints bool
	pointMu      sync.Mutex
}

var (
	_ adapter.DB         = (*DB)(nil)
	_ ingest.Backend     = (*DB)(nil)
	_ trajectory.Backend = (*DB)(nil)
)

// Open connects and creates the database when it is missing.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	// rethinkdb-go has no dial hook: while an experiment's load runs from
	// a load host (netdial.Hooked), the driver connects to a relay on
	// 127.0.0.1 that opens each connection through netdial.Default, from
	// inside the load host; otherwise it dials the server itself.
	addr := cfg.Address
	var relay *netdial.Relay
	if netdial.Hooked() {
		if relay, err = netdial.NewRelay(cfg.Address, nil); err != nil {
			return nil, fmt.Errorf("rethinkdb: %w", err)
		}
		addr = relay.Addr()
	}
	s, err := r.Connect(r.ConnectOpts{
		Address: addr, Username: cfg.User, Password: cfg.Password,
		Timeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
		InitialCap: 1, MaxOpen: 64,
	})
	if err != nil {
		if relay != nil {
			_ = relay.Close()
		}
		return nil, fmt.Errorf("rethinkdb: connect to %s: %w", redact.DSN(dsn), err)
	}
	db := &DB{cfg: cfg, s: s, relay: relay, db: r.DB(cfg.Database), tables: map[string]bool{}}
	if err := db.ensureDatabase(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	// A user who may not read rethinkdb.server_status is on a real
	// RethinkDB (reqlite checks no permission).
	if srv, err := serverOf(ctx, s); err == nil && srv.IsReqlite() {
		db.serialPoints = true
	}
	return db, nil
}

// withPoints runs fn, a request holding r.point terms, alone among such
// requests when the server is reqlite (serialPoints).
func (db *DB) withPoints(fn func() error) error {
	if db.serialPoints {
		db.pointMu.Lock()
		defer db.pointMu.Unlock()
	}
	return fn()
}

// ensureDatabase creates the DSN's database unless it exists (another
// client creating it at the same moment is fine).
func (db *DB) ensureDatabase(ctx context.Context) error {
	var names []string
	if err := db.all(ctx, r.DBList(), &names); err != nil {
		return fmt.Errorf("rethinkdb: list databases: %w", err)
	}
	for _, n := range names {
		if n == db.cfg.Database {
			return nil
		}
	}
	if err := db.exec(ctx, r.DBCreate(db.cfg.Database)); err != nil && !alreadyExists(err) {
		return fmt.Errorf("rethinkdb: create database %s: %w", db.cfg.Database, err)
	}
	return nil
}

// alreadyExists is the server's answer to creating a database, table or
// index that exists.
func alreadyExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// Config is the parsed DSN.
func (db *DB) Config() Config { return db.cfg }

// Close implements adapter.DB.
func (db *DB) Close() error {
	err := db.s.Close()
	if db.relay != nil {
		_ = db.relay.Close()
	}
	if err != nil {
		return fmt.Errorf("rethinkdb: close: %w", err)
	}
	return nil
}

// Drop drops the whole database (tests use a database each).
func (db *DB) Drop(ctx context.Context) error {
	if err := db.exec(ctx, r.DBDrop(db.cfg.Database)); err != nil {
		return fmt.Errorf("rethinkdb: drop database %s: %w", db.cfg.Database, err)
	}
	db.forget()
	return nil
}

// Info implements adapter.DB: the server that answered (reqlite or
// RethinkDB, from rethinkdb.server_status) and what shapes the figures.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	srv, err := serverOf(ctx, db.s)
	if err != nil {
		return adapter.Info{}, fmt.Errorf("rethinkdb: %w", err)
	}
	cfg := map[string]string{
		"driver":       "gopkg.in/rethinkdb/rethinkdb-go.v6",
		"database":     db.cfg.Database,
		"parts":        strconv.Itoa(db.cfg.Parts),
		"geo":          "getNearest and getIntersecting on a geo index, decided exactly on the client",
		"not_verified": notVerifiedWhat + " (" + NotVerified + ")",
	}
	if db.serialPoints {
		cfg["point_requests"] = "one at a time (reqlite's r.point is not safe for concurrent queries)"
	}
	if srv.IsReqlite() {
		cfg["stand_in"] = "reqlite is a JavaScript reimplementation of RethinkDB 2.2 that keeps data in memory and scans every document " +
			"for an index lookup; these figures say nothing about RethinkDB's speed"
	}
	return adapter.Info{Name: srv.Name, Version: srv.Version, Config: cfg}, nil
}

// run runs t with ctx.
func (db *DB) run(ctx context.Context, t r.Term) (*r.Cursor, error) {
	return t.Run(db.s, r.RunOpts{Context: ctx})
}

// exec runs t for its effect.
func (db *DB) exec(ctx context.Context, t r.Term) error {
	return t.Exec(db.s, r.ExecOpts{Context: ctx})
}

// all runs t and decodes every result into into (a pointer to a slice).
func (db *DB) all(ctx context.Context, t r.Term, into any) error {
	cur, err := db.run(ctx, t)
	if err != nil {
		return err
	}
	defer cur.Close()
	return cur.All(into)
}

// one runs t and decodes its single result into into.
func (db *DB) one(ctx context.Context, t r.Term, into any) error {
	cur, err := db.run(ctx, t)
	if err != nil {
		return err
	}
	defer cur.Close()
	return cur.One(into)
}

// write runs an insert and checks that the server took every document:
// RunWrite turns a write result with errors into an error (its first).
func (db *DB) write(ctx context.Context, t r.Term, want int) error {
	res, err := t.RunWrite(db.s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	if res.Inserted != want {
		return fmt.Errorf("%d of %d documents inserted", res.Inserted, want)
	}
	return nil
}

// tableList lists the database's tables.
func (db *DB) tableList(ctx context.Context) ([]string, error) {
	var names []string
	if err := db.all(ctx, db.db.TableList(), &names); err != nil {
		return nil, fmt.Errorf("rethinkdb: list tables: %w", err)
	}
	return names, nil
}

// index is a secondary index to create with a table.
type index struct {
	name string
	fn   func(row r.Term) any
	opts r.IndexCreateOpts
}

// ensureTable creates table name with its indexes (and waits for them to
// be ready) once per DB; a table that exists already is taken as made by
// this adapter, indexes and all.
func (db *DB) ensureTable(ctx context.Context, name string, idx ...index) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.tables[name] {
		return nil
	}
	err := db.exec(ctx, db.db.TableCreate(name))
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("rethinkdb: create table %s: %w", name, err)
	}
	if err == nil {
		for _, ix := range idx {
			if err := db.exec(ctx, db.db.Table(name).IndexCreateFunc(ix.name, ix.fn, ix.opts)); err != nil && !alreadyExists(err) {
				return fmt.Errorf("rethinkdb: create index %s on %s: %w", ix.name, name, err)
			}
		}
		if len(idx) > 0 {
			if err := db.exec(ctx, db.db.Table(name).IndexWait()); err != nil {
				return fmt.Errorf("rethinkdb: wait for the indexes of %s: %w", name, err)
			}
		}
	}
	db.tables[name] = true
	return nil
}

// dropTables drops the tables whose names keep returns true.
func (db *DB) dropTables(ctx context.Context, keep func(name string) bool) error {
	names, err := db.tableList(ctx)
	if err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, n := range names {
		if !keep(n) {
			continue
		}
		if err := db.exec(ctx, db.db.TableDrop(n)); err != nil {
			return fmt.Errorf("rethinkdb: drop table %s: %w", n, err)
		}
		delete(db.tables, n)
	}
	return nil
}

// forget makes every table be checked again before its next use.
func (db *DB) forget() {
	db.mu.Lock()
	defer db.mu.Unlock()
	clear(db.tables)
}

// count is the number of documents in table name (0 when it does not
// exist).
func (db *DB) count(ctx context.Context, name string) (int64, error) {
	var n int64
	if err := db.one(ctx, db.db.Table(name).Count(), &n); err != nil {
		return 0, fmt.Errorf("count %s: %w", name, err)
	}
	return n, nil
}

// maxParallel bounds the requests one operation has in flight.
const maxParallel = 16

// parallel runs fn for every i in [0, n), at most maxParallel at once, and
// returns the first error (the context of the others is cancelled then).
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallel)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// hasTable reports whether table name exists (from what this DB created,
// else from the server's table list, whose answer is remembered).
func (db *DB) hasTable(ctx context.Context, name string) (bool, error) {
	db.mu.Lock()
	known := db.tables[name]
	db.mu.Unlock()
	if known {
		return true, nil
	}
	names, err := db.tableList(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == name {
			db.mu.Lock()
			db.tables[name] = true
			db.mu.Unlock()
			return true, nil
		}
	}
	return false, nil
}
