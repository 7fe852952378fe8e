// Package couchdb is fieldbench's adapter for CouchDB and servers that speak
// its HTTP API (pouchdb-server, which `cluster up couchdb` starts here).
//
// It speaks HTTP with the standard library (net/http, encoding/json), not
// through kivik: CouchDB's API is HTTP and JSON, every operation the
// workloads need is one request whose body we want to shape ourselves
// (_bulk_docs with per-document errors, _all_docs ranges and key lists,
// views with group levels, Mango _find), and the connection pool must be
// sized explicitly for a benchmark (MaxIdleConnsPerHost); a driver layer
// would add reflection and an abstraction over exactly the requests being
// measured. kivik v4 is also not among the Go modules served here.
//
// Each kind of data is a database of its own (<prefix>_wiki,
// <prefix>_mb_tweets...), so counts are a database's doc_count and a reset
// is deleting the database. docs/couchdb.md describes the data models.
//
// DSN:
//
//	couchdb://[user:password@]host:port[/prefix][?options]
//
// Options: peers=host:port,... (other standalone servers that replicate
// the same databases: the adapter creates and resets every database on all
// of them and sets up continuous replication both ways; requests go to the
// first server and move to the next one when it refuses connections),
// pool=N (connections per server, default 64), timeout=DURATION (per
// request, default 60s), spatial=grid|mango (trajectory candidates, see
// trajectory.go), batch=N (documents per _bulk_docs request while loading,
// default 500), tls=1 (https).
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with a file per family (ingest.go,
// microblog.go, trajectory.go, wiki.go), the cluster engine that installs
// and starts pouchdb-server (engine.go), what an external cluster asks a
// CouchDB (external.go), the convergence prober (convergence.go) and
// couchapi, the requests all of them share; db/all links it into the
// binary.
package couchdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name and DSN scheme.
const Name = "couchdb"

func init() { adapter.Register(Adapter{}) }

// Adapter opens CouchDB DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "CouchDB HTTP API (net/http; pouchdb-server here, reported as such); DSN couchdb://host:port[/prefix][?peers=host:port,...&spatial=grid|mango]"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Spatial is how trajectory queries find candidate cells.
type Spatial string

const (
	// SpatialGrid reads grid squares as _all_docs key ranges: a cell's
	// _id starts with its square, so the primary index is the grid.
	SpatialGrid Spatial = "grid"
	// SpatialMango asks Mango _find for the cells whose square lies in
	// the box, through a json index on (gx, gy).
	SpatialMango Spatial = "mango"
)

// Config is a parsed DSN.
type Config struct {
	Nodes    []string // host:port, the first one first
	Prefix   string
	User     string
	Password string
	TLS      bool
	Pool     int
	Timeout  time.Duration
	Spatial  Spatial
	Batch    int
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`)

// ParseDSN reads a couchdb:// DSN; its errors wrap adapter.ErrBadDSN.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil || u.Scheme != Name {
		return Config{}, fmt.Errorf("couchdb DSN must look like couchdb://host:port[/prefix][?peers=host:port,...] (got %q)", redact.DSN(dsn))
	}
	if u.Host == "" {
		return Config{}, fmt.Errorf("couchdb DSN %q has no host:port", redact.DSN(dsn))
	}
	c := Config{Nodes: []string{u.Host}, Prefix: "fb", Pool: 64, Timeout: 60 * time.Second, Spatial: SpatialGrid, Batch: 500}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if !prefixRE.MatchString(p) {
			return Config{}, fmt.Errorf("couchdb DSN: database prefix %q: want a lowercase letter then lowercase letters, digits or _ (at most 41)", p)
		}
		c.Prefix = p
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "peers":
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" {
					if err = adapter.CheckAddr(a); err != nil {
						break
					}
					c.Nodes = append(c.Nodes, a)
				}
			}
		case "pool":
			c.Pool, err = strconv.Atoi(v)
			if err == nil && c.Pool < 1 {
				err = errors.New("want at least 1")
			}
		case "batch":
			c.Batch, err = strconv.Atoi(v)
			if err == nil && c.Batch < 1 {
				err = errors.New("want at least 1")
			}
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
		case "tls":
			c.TLS, err = strconv.ParseBool(v)
		case "spatial":
			c.Spatial = Spatial(v)
			if c.Spatial != SpatialGrid && c.Spatial != SpatialMango {
				err = errors.New("want grid or mango")
			}
		default:
			return Config{}, fmt.Errorf("couchdb DSN: unknown option %q (known: peers, pool, batch, timeout, tls, spatial)", k)
		}
		if err != nil {
			return Config{}, fmt.Errorf("couchdb DSN option %s=%q: %w", k, v, err)
		}
	}
	return c, nil
}

// DB is an open connection to a CouchDB server, or to a set of servers
// replicating each other. It implements adapter.DB, adapter.Sizer and the
// four families' Backends.
type DB struct {
	cfg   Config
	nodes []*couchapi.Client
	cur   atomic.Int32 // index of the node requests go to
	// dials space out reconnections to a server that refuses them, one
	// Backoff per server (the nodes share one Transport); see
	// adapter.Backoff.
	dials *adapter.Backoffs
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ adapter.Sizer       = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ trajectory.Backend  = (*DB)(nil)
)

// Open connects and reads the server's welcome from the first node.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	dials := &adapter.Backoffs{}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The dial is fieldbench's default (netdial), not the Transport's own:
	// during an experiment on hosts it opens each connection inside the
	// load host's namespace, the only place the nodes' addresses are
	// reachable from (docs/network.md). TLS, with tls=1, is the
	// Transport's, over it.
	tr.DialContext = dials.DialFunc(nil)
	tr.MaxIdleConns = cfg.Pool * len(cfg.Nodes)
	tr.MaxIdleConnsPerHost = cfg.Pool
	hc := &http.Client{Transport: tr, Timeout: cfg.Timeout}
	db := &DB{cfg: cfg, dials: dials}
	for _, n := range cfg.Nodes {
		db.nodes = append(db.nodes, &couchapi.Client{Base: scheme + "://" + n, User: cfg.User, Password: cfg.Password, HTTP: hc})
	}
	if _, err := db.welcome(ctx); err != nil {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("couchdb: connect to %s: %w", cfg.Nodes[0], err)
	}
	return db, nil
}

// Close implements adapter.DB.
func (db *DB) Close() error {
	db.nodes[0].HTTP.CloseIdleConnections()
	return nil
}

// Reconnects implements adapter.Reconnector: the dials to every server.
func (db *DB) Reconnects() adapter.BackoffStats { return db.dials.Reconnects() }

// Nodes are the clients of every server the DSN names (tests and tools).
func (db *DB) Nodes() []*couchapi.Client { return db.nodes }

// refused reports an error that shows the request never reached a server
// (so sending it to another one cannot apply it twice).
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// do sends a request to the current node; when that node refuses the
// connection it moves on to the next one the DSN names.
func (db *DB) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var err error
	for range db.nodes {
		i := db.cur.Load()
		err = db.nodes[i].Do(ctx, method, path, q, body, out)
		if err == nil || !refused(err) || len(db.nodes) == 1 {
			return err
		}
		db.cur.CompareAndSwap(i, (i+1)%int32(len(db.nodes)))
	}
	return err
}

func (db *DB) welcome(ctx context.Context) (couchapi.Welcome, error) {
	var m map[string]any
	if err := db.do(ctx, http.MethodGet, "/", nil, nil, &m); err != nil {
		return couchapi.Welcome{}, err
	}
	return couchapi.ParseWelcome(m), nil
}

// Info implements adapter.DB: the server as its welcome names it
// (pouchdb-server is never called CouchDB), its version, and the
// adapter's settings.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	w, err := db.welcome(ctx)
	if err != nil {
		return adapter.Info{}, fmt.Errorf("couchdb: info: %w", err)
	}
	cfg := map[string]string{
		"client":  "net/http",
		"vendor":  w.Vendor,
		"servers": strconv.Itoa(len(db.nodes)),
		"prefix":  db.cfg.Prefix,
		"pool":    strconv.Itoa(db.cfg.Pool),
		"spatial": string(db.cfg.Spatial),
	}
	if len(db.nodes) > 1 {
		cfg["replication"] = "continuous, every server pulls from every other (_replicator)"
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: w.Server, Version: w.Version, Config: cfg}, nil
}

// name is the full name of the database holding kind.
func (db *DB) name(kind string) string { return db.cfg.Prefix + "_" + kind }

// ensure creates the databases of kinds (on every server, replicated).
func (db *DB) ensure(ctx context.Context, kinds ...string) error {
	for _, k := range kinds {
		if err := couchapi.CreateReplicated(ctx, db.nodes, db.name(k), false); err != nil {
			return fmt.Errorf("couchdb: %w", err)
		}
	}
	return nil
}

// drop empties the databases of kinds. On one server it deletes and
// creates them again. On a replicated set it deletes every document
// instead (tombstones, which replicate): deleting a database that a peer's
// continuous replication is reading makes pouchdb-server 4.2.0 exit (its
// _changes handler fails on the vanished database), and deleting a
// database is not replicated anyway.
func (db *DB) drop(ctx context.Context, kinds ...string) error {
	for _, k := range kinds {
		if len(db.nodes) > 1 {
			if err := db.deleteAll(ctx, k); err != nil {
				return fmt.Errorf("couchdb: empty %s: %w", db.name(k), err)
			}
			continue
		}
		if err := couchapi.DropReplicated(ctx, db.nodes, db.name(k)); err != nil {
			return fmt.Errorf("couchdb: %w", err)
		}
		if err := couchapi.CreateReplicated(ctx, db.nodes, db.name(k), true); err != nil {
			return fmt.Errorf("couchdb: %w", err)
		}
	}
	return nil
}

// deleteAll deletes every document of kind's database but its design
// documents, a page of _all_docs at a time.
func (db *DB) deleteAll(ctx context.Context, kind string) error {
	const page = 5000
	type tomb struct {
		ID      string `json:"_id"`
		Rev     string `json:"_rev"`
		Deleted bool   `json:"_deleted"`
	}
	for {
		rows, err := db.allDocs(ctx, kind, url.Values{"limit": {strconv.Itoa(page)}}, nil)
		if err != nil {
			return err
		}
		var docs []any
		for _, r := range rows {
			if !strings.HasPrefix(r.ID, "_design/") {
				docs = append(docs, tomb{r.ID, r.Value.Rev, true})
			}
		}
		if len(docs) == 0 {
			return nil
		}
		if err := db.bulkAll(ctx, kind, docs, true); err != nil {
			return err
		}
	}
}

// SizeBytes implements adapter.Sizer: the file size of fieldbench's
// databases on the server requests go to (sizes.file on CouchDB,
// disk_size on pouchdb-server), one copy.
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	var all []string
	if err := db.do(ctx, http.MethodGet, "/_all_dbs", nil, nil, &all); err != nil {
		return 0, fmt.Errorf("couchdb: size: %w", err)
	}
	var total int64
	for _, name := range all {
		if !strings.HasPrefix(name, db.cfg.Prefix+"_") {
			continue
		}
		var i couchapi.DBInfo
		if err := db.do(ctx, http.MethodGet, couchapi.Path(name), nil, nil, &i); err != nil {
			return 0, fmt.Errorf("couchdb: size of %s: %w", name, err)
		}
		total += max(i.Sizes.File, i.DiskSize)
	}
	return total, nil
}

// count is how many documents kind's database holds, design documents
// not counted (doc_count includes them); 0 when the database is absent.
func (db *DB) count(ctx context.Context, kind string) (int64, error) {
	var i couchapi.DBInfo
	err := db.do(ctx, http.MethodGet, couchapi.Path(db.name(kind)), nil, nil, &i)
	if couchapi.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	rows, err := db.allDocs(ctx, kind, url.Values{"startkey": {`"_design/"`}, "endkey": {`"_design0"`}}, nil)
	if err != nil {
		return 0, err
	}
	return i.DocCount - int64(len(rows)), nil
}

// row is one _all_docs or view row.
type row[V any, D any] struct {
	ID    string `json:"id"`
	Key   any    `json:"key"`
	Value V      `json:"value"`
	Doc   *D     `json:"doc"`
	Error string `json:"error"`
}

type rev struct {
	Rev     string `json:"rev"`
	Deleted bool   `json:"deleted"`
}

// allDocs reads _all_docs of kind's database with query q, or the keys
// given (POST).
func (db *DB) allDocs(ctx context.Context, kind string, q url.Values, keys []string) ([]row[rev, struct{}], error) {
	return allDocsInto[struct{}](ctx, db, kind, q, keys)
}

// allDocsInto is allDocs with the documents (include_docs=true is the
// caller's to set) decoded as D.
func allDocsInto[D any](ctx context.Context, db *DB, kind string, q url.Values, keys []string) ([]row[rev, D], error) {
	var res struct {
		Rows []row[rev, D] `json:"rows"`
	}
	path := couchapi.Path(db.name(kind)) + "/_all_docs"
	var err error
	if keys != nil {
		err = db.do(ctx, http.MethodPost, path, q, map[string]any{"keys": keys}, &res)
	} else {
		err = db.do(ctx, http.MethodGet, path, q, nil, &res)
	}
	return res.Rows, err
}

// bulkResult is one document's outcome in a _bulk_docs answer.
type bulkResult struct {
	ID     string `json:"id"`
	Rev    string `json:"rev"`
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// errConflict is wrapped by bulk when a document exists already.
var errConflict = errors.New("document exists")

// bulk writes docs in one _bulk_docs request and fails unless every one
// was stored; skipConflicts accepts documents that exist already (written
// identically by another client, as cells are).
func (db *DB) bulk(ctx context.Context, kind string, docs []any, skipConflicts bool) error {
	if len(docs) == 0 {
		return nil
	}
	var res []bulkResult
	if err := db.do(ctx, http.MethodPost, couchapi.Path(db.name(kind))+"/_bulk_docs", nil, map[string]any{"docs": docs}, &res); err != nil {
		return err
	}
	if len(res) != len(docs) {
		return fmt.Errorf("_bulk_docs of %d documents answered %d results", len(docs), len(res))
	}
	var errs []error
	for _, r := range res {
		if r.Error == "" || (skipConflicts && r.Error == "conflict") {
			continue
		}
		if r.Error == "conflict" {
			errs = append(errs, fmt.Errorf("%s: %w", r.ID, errConflict))
		} else {
			errs = append(errs, fmt.Errorf("%s: %s: %s", r.ID, r.Error, r.Reason))
		}
		if len(errs) == 5 {
			break
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("_bulk_docs into %s refused documents: %w", db.name(kind), errors.Join(errs...))
	}
	return nil
}

// bulkAll writes docs in _bulk_docs requests of at most cfg.Batch
// documents, up to four in flight.
func (db *DB) bulkAll(ctx context.Context, kind string, docs []any, skipConflicts bool) error {
	n := (len(docs) + db.cfg.Batch - 1) / db.cfg.Batch
	return parallel(ctx, n, 4, func(ctx context.Context, i int) error {
		return db.bulk(ctx, kind, docs[i*db.cfg.Batch:min((i+1)*db.cfg.Batch, len(docs))], skipConflicts)
	})
}

// parallel runs fn(0..n-1) on at most width goroutines and returns the
// first error (the others are cancelled).
func parallel(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	done := make(chan struct{})
	w := min(n, width)
	for range w {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := fn(ctx, int(i)); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	for range w {
		<-done
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// key is a fixed-width decimal, so that _id order is numeric order for
// non-negative v.
func key(v int64) string { return fmt.Sprintf("%019d", v) }

// jsonKey is s as a JSON string, for startkey, endkey and key.
func jsonKey(s string) string { return strconv.Quote(s) }

// idRange bounds q to the _ids written by key (19 digits), so design
// documents stay out whatever the server's _id collation.
func idRange(q url.Values, descending bool) url.Values {
	lo, hi := jsonKey(key(0)), jsonKey("9999999999999999999")
	if descending {
		lo, hi = hi, lo
	}
	q.Set("startkey", lo)
	q.Set("endkey", hi)
	return q
}
