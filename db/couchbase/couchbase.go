// Package couchbase is fieldbench's adapter for Couchbase, through the
// official Go SDK (github.com/couchbase/gocb/v2): key-value operations and
// views (map/reduce design documents), the two things the microblog study
// used on Couchbase 2.0; it runs no N1QL. Couchbase Server cannot be
// installed here: `cluster up couchbase` starts CouchbaseMock, and Info
// says which one answered (its REST port's /pools), so a result measured
// on the mock never says Couchbase Server. docs/couchbase.md describes
// every document and view.
//
// DSN:
//
//	couchbase://[user[:password]@]host[:kvport][,host[:kvport]...]/bucket[?options]
//
// The user defaults to the bucket's name with an empty password (a bucket
// without a password, as CouchbaseMock's and Couchbase 2.0's were); a
// Couchbase Server 5 or later needs an RBAC user. The port is the
// key-value port (11210 when absent). Options: prefix=NAME (every document
// key starts with it and the design document is fb_NAME, so several
// databases share a bucket; default fb); stale=false|ok|update_after (the
// views' consistency: false, the default, waits for the index to include
// every write before a view answers; the study ran stale=ok);
// persist_to=N, replicate_to=N (the SDK's observe-based durability, waited
// for on every write); durability=majority|majority_and_persist_active|
// persist_to_majority (synchronous durability levels: CouchbaseMock has
// none, NOT VERIFIED HERE); timeline=view|doc (how microblog timelines
// are kept, see microblog.go; default view, the study's); timeout=DURATION
// (each operation's; default 30s).
package couchbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/couchbase/gocb/v2"
	"golang.org/x/sync/semaphore"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Name is the adapter's name.
const Name = "couchbase"

// NotVerified marks the code paths that CouchbaseMock, the only server
// here, cannot exercise; it goes into `list`, results and the docs.
const NotVerified = "not verified here"

// mockGaps is what CouchbaseMock lacks, for results measured on it.
const mockGaps = "N1QL (unused by this adapter), durability levels, persistence: CouchbaseMock has none of them (" + NotVerified + ")"

func init() { adapter.Register(Adapter{}) }

// Adapter opens Couchbase DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"couchbase"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "Couchbase key-value and views (official gocb/v2 SDK; tested here against CouchbaseMock 1.5.27, whose figures say nothing about Couchbase Server's speed); " +
		"DSN couchbase://[user:password@]host:kvport/bucket[?prefix=fb&stale=false|ok&durability=majority] (durability levels, persistence: " + NotVerified + ")"
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
	// ConnStr is the SDK's connection string: couchbase://host:port,...
	// without credentials.
	ConnStr     string
	User        string
	Password    string
	Bucket      string
	Prefix      string
	Stale       string // false, ok or update_after
	PersistTo   uint
	ReplicateTo uint
	// Durability is "" (none) or a synchronous durability level's name.
	Durability string
	Timeout    time.Duration
	// Timeline is how the microblog timelines are kept: "view" (the
	// study's: one document per entry, read through a view) or "doc" (one
	// document per user, appended to).
	Timeline string
}

// durabilities are the DSN's durability levels.
var durabilities = map[string]gocb.DurabilityLevel{
	"majority":                    gocb.DurabilityLevelMajority,
	"majority_and_persist_active": gocb.DurabilityLevelMajorityAndPersistOnMaster,
	"persist_to_majority":         gocb.DurabilityLevelPersistToMajority,
}

var (
	nameRE   = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
	bucketRE = regexp.MustCompile(`^[A-Za-z0-9_.%-]{1,100}$`)
)

// ParseDSN reads a couchbase:// DSN; its errors wrap adapter.ErrBadDSN and
// show no password.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

func parseDSN(dsn string) (Config, error) {
	c := Config{Bucket: "default", Prefix: "fb", Stale: "false", Timeout: 30 * time.Second, Timeline: "view"}
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return c, fmt.Errorf("couchbase: %w", err)
	}
	if u.Scheme != Name || u.Host == "" {
		return c, errors.New("couchbase DSN: want couchbase://[user:password@]host[:port][,host[:port]...]/bucket")
	}
	for _, h := range strings.Split(u.Host, ",") {
		host, port := h, ""
		if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
			host, port = h[:i], h[i+1:]
		}
		if host == "" || strings.ContainsAny(host, "/?#@ ") {
			return c, errors.New("couchbase DSN: a host is empty or malformed")
		}
		if port != "" {
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				return c, errors.New("couchbase DSN: a port is not a number in 1..65535")
			}
		}
	}
	c.ConnStr = "couchbase://" + u.Host
	if b := strings.Trim(u.Path, "/"); b != "" {
		if !bucketRE.MatchString(b) {
			return c, errors.New("couchbase DSN: the bucket name: letters, digits, _ . % - only, at most 100")
		}
		c.Bucket = b
	}
	c.User = c.Bucket
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	for k, v := range u.Query() {
		val := v[0]
		var err error
		switch k {
		case "prefix":
			if !nameRE.MatchString(val) {
				err = errors.New("letters, digits and _ only, 1 to 32")
			}
			c.Prefix = val
		case "stale":
			if val != "false" && val != "ok" && val != "update_after" {
				err = errors.New("want false, ok or update_after")
			}
			c.Stale = val
		case "persist_to", "replicate_to":
			var n uint64
			n, err = strconv.ParseUint(val, 10, 8)
			if err == nil && n > 4 {
				err = errors.New("want 0..4")
			}
			if k == "persist_to" {
				c.PersistTo = uint(n)
			} else {
				c.ReplicateTo = uint(n)
			}
		case "durability":
			if _, ok := durabilities[val]; !ok && val != "none" {
				err = errors.New("want none, majority, majority_and_persist_active or persist_to_majority")
			}
			if val != "none" {
				c.Durability = val
			}
		case "timeline":
			if val != "view" && val != "doc" {
				err = errors.New("want view or doc")
			}
			c.Timeline = val
		case "timeout":
			c.Timeout, err = time.ParseDuration(val)
			if err == nil && c.Timeout <= 0 {
				err = errors.New("want a positive duration")
			}
		default:
			return c, fmt.Errorf("couchbase DSN: unknown option %q (known: prefix, stale, timeline, persist_to, replicate_to, durability, timeout)", k)
		}
		if err != nil {
			return c, fmt.Errorf("couchbase DSN: option %s: %w", k, err)
		}
	}
	if c.Durability != "" && (c.PersistTo > 0 || c.ReplicateTo > 0) {
		return c, errors.New("couchbase DSN: durability and persist_to/replicate_to exclude each other (the SDK takes one or the other)")
	}
	return c, nil
}

// DB is an SDK connection to one bucket, with its documents under one key
// prefix. It implements adapter.DB and the ingest and microblog Backends.
type DB struct {
	cfg     Config
	cluster *gocb.Cluster
	bucket  *gocb.Bucket
	col     *gocb.Collection

	mu       sync.Mutex
	designed bool // the design document was written by this DB

	// bulk bounds the operations of every bulk request in flight at once
	// (doBulk): the SDK queues each node's requests on one connection,
	// up to 2,048 (gocbcore's default max_queue_size), and refuses the
	// rest with "queue overflowed" — 8 ingest sources of batches of 1,000
	// overflowed it (2026-12-02, CouchbaseMock).
	bulk *semaphore.Weighted
}

// Bulk requests: at most bulkInFlight operations in flight over every
// caller, sent in chunks of at most bulkChunk.
const (
	bulkInFlight = 1024
	bulkChunk    = 256
)

var (
	_ adapter.DB        = (*DB)(nil)
	_ ingest.Backend    = (*DB)(nil)
	_ microblog.Backend = (*DB)(nil)
)

// Open connects and waits until the bucket is ready.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cl, err := gocb.Connect(cfg.ConnStr, gocb.ClusterOptions{
		Authenticator:  gocb.PasswordAuthenticator{Username: cfg.User, Password: cfg.Password},
		TimeoutsConfig: gocb.TimeoutsConfig{KVTimeout: cfg.Timeout, ViewTimeout: cfg.Timeout, ManagementTimeout: cfg.Timeout, ConnectTimeout: cfg.Timeout},
	})
	if err != nil {
		return nil, fmt.Errorf("couchbase: connect to %s: %w", redact.DSN(dsn), redacted(err))
	}
	b := cl.Bucket(cfg.Bucket)
	wait := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	if err := b.WaitUntilReady(wait, &gocb.WaitUntilReadyOptions{Context: ctx, ServiceTypes: []gocb.ServiceType{gocb.ServiceTypeKeyValue}}); err != nil {
		_ = cl.Close(nil)
		return nil, fmt.Errorf("couchbase: bucket %s at %s: %w", cfg.Bucket, redact.DSN(dsn), redacted(err))
	}
	return &DB{cfg: cfg, cluster: cl, bucket: b, col: b.DefaultCollection(), bulk: semaphore.NewWeighted(bulkInFlight)}, nil
}

// redacted hides any DSN an SDK error quotes.
func redacted(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(redact.Text(err.Error()))
}

// Config is the parsed DSN.
func (db *DB) Config() Config { return db.cfg }

// Close implements adapter.DB.
func (db *DB) Close() error {
	if err := db.cluster.Close(nil); err != nil {
		return fmt.Errorf("couchbase: close: %w", err)
	}
	return nil
}

// Server is what the cluster's REST port says it is.
type Server struct {
	// Name is "CouchbaseMock" or "Couchbase Server".
	Name    string
	Version string
}

// IsMock reports whether the server is CouchbaseMock.
func (s Server) IsMock() bool { return s.Name == "CouchbaseMock" }

// ServerOf asks the first management endpoint's /pools: Couchbase Server
// reports its version as implementationVersion, CouchbaseMock reports
// "CouchbaseMock" there and its version in the Server header
// ("CouchbaseMock/1.5.27 (mcd; views) ...").
func (db *DB) ServerOf(ctx context.Context) (Server, error) {
	agent, err := db.bucket.Internal().IORouter()
	if err != nil {
		return Server{}, fmt.Errorf("couchbase: %w", err)
	}
	eps := agent.MgmtEps()
	if len(eps) == 0 {
		return Server{}, errors.New("couchbase: no management endpoint in the cluster configuration")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, eps[0]+"/pools", nil)
	if err != nil {
		return Server{}, fmt.Errorf("couchbase: %w", err)
	}
	req.SetBasicAuth(db.cfg.User, db.cfg.Password)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return Server{}, fmt.Errorf("couchbase: GET /pools: %w", err)
	}
	defer resp.Body.Close()
	var pools struct {
		Version string `json:"implementationVersion"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, &pools)
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		return Server{}, fmt.Errorf("couchbase: GET /pools: %s: %v", resp.Status, err)
	}
	if pools.Version == "CouchbaseMock" {
		v, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Server"), "CouchbaseMock/"), " ")
		return Server{Name: "CouchbaseMock", Version: v}, nil
	}
	return Server{Name: "Couchbase Server", Version: pools.Version}, nil
}

// Info implements adapter.DB: the server that answered and what shapes
// the figures.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	srv, err := db.ServerOf(ctx)
	if err != nil {
		return adapter.Info{}, err
	}
	cfg := map[string]string{
		"driver":             "github.com/couchbase/gocb/v2",
		"bucket":             db.cfg.Bucket,
		"prefix":             db.cfg.Prefix,
		"stale":              db.cfg.Stale,
		"microblog_timeline": db.cfg.Timeline,
	}
	if db.cfg.PersistTo > 0 || db.cfg.ReplicateTo > 0 {
		cfg["persist_to"] = strconv.FormatUint(uint64(db.cfg.PersistTo), 10)
		cfg["replicate_to"] = strconv.FormatUint(uint64(db.cfg.ReplicateTo), 10)
		if srv.IsMock() && db.cfg.PersistTo > 0 {
			cfg["persist_to"] += " (CouchbaseMock writes nothing to disk: " + NotVerified + ")"
		}
	}
	if db.cfg.Durability != "" {
		cfg["durability"] = db.cfg.Durability + " (" + NotVerified + ")"
	}
	if srv.IsMock() {
		cfg["stand_in"] = "CouchbaseMock simulates a cluster in one JVM; these figures say nothing about Couchbase Server's speed"
		cfg["not_verified_here"] = mockGaps
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: srv.Name, Version: srv.Version, Config: cfg}, nil
}

// key is a document key under the DB's prefix.
func (db *DB) key(parts ...string) string {
	return db.cfg.Prefix + ":" + strings.Join(parts, ":")
}

// Kinds of documents (the "k" field every document carries, with "fb",
// the prefix, which the views test).
const (
	kindIngest   = "i"
	kindMeta     = "m"
	kindUser     = "u"
	kindTweet    = "t"
	kindUserline = "ul"
	kindTimeline = "l"
	kindTLDoc    = "tl"
	kindStats    = "s"
)

// Views of the design document fb_PREFIX.
const (
	viewAll      = "all"      // every document of the prefix, for Drop
	viewIngest   = "ingest"   // ingest records; _count
	viewTimeline = "timeline" // timeline documents by [owner, µs, id]
)

// designDoc is the prefix's design document: its views select the prefix's
// documents of one kind.
func (db *DB) designDoc() gocb.DesignDocument {
	p := db.cfg.Prefix // letters, digits and _ (ParseDSN): safe in a JavaScript string
	sel := func(kind string) string {
		return `function (doc, meta) { if (doc.fb === "` + p + `" && doc.k === "` + kind + `") { `
	}
	return gocb.DesignDocument{Name: "fb_" + p, Views: map[string]gocb.View{
		viewAll:    {Map: `function (doc, meta) { if (doc.fb === "` + p + `") { emit(null, null); } }`, Reduce: "_count"},
		viewIngest: {Map: sel(kindIngest) + `emit(null, null); } }`, Reduce: "_count"},
		// Denormalized timeline documents carry the body: the value is
		// [author, body]; normalized ones [author].
		viewTimeline: {Map: sel(kindTimeline) + `emit([doc.o, doc.us, doc.id], doc.b === undefined ? [doc.a] : [doc.a, doc.b]); } }`},
	}}
}

// ensureDesign writes the design document once per DB (writing it again
// is harmless: the same views).
func (db *DB) ensureDesign(ctx context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.designed {
		return nil
	}
	err := db.bucket.ViewIndexes().UpsertDesignDocument(db.designDoc(), gocb.DesignDocumentNamespaceProduction,
		&gocb.UpsertDesignDocumentOptions{Context: ctx})
	if err != nil {
		return fmt.Errorf("couchbase: write design document fb_%s: %w", db.cfg.Prefix, err)
	}
	db.designed = true
	return nil
}

// viewOpts are a query's options with the DSN's consistency.
func (db *DB) viewOpts(ctx context.Context, o gocb.ViewOptions) *gocb.ViewOptions {
	switch db.cfg.Stale {
	case "ok":
		o.ScanConsistency = gocb.ViewScanConsistencyNotBounded
	case "update_after":
		o.ScanConsistency = gocb.ViewScanConsistencyUpdateAfter
	default:
		o.ScanConsistency = gocb.ViewScanConsistencyRequestPlus
	}
	o.Namespace = gocb.DesignDocumentNamespaceProduction
	o.Context = ctx
	return &o
}

// viewRow is one row of a view answer.
type viewRow struct {
	ID    string
	Key   json.RawMessage
	Value json.RawMessage
}

// query runs a view query and returns its rows.
func (db *DB) query(ctx context.Context, view string, o gocb.ViewOptions) ([]viewRow, error) {
	if err := db.ensureDesign(ctx); err != nil {
		return nil, err
	}
	res, err := db.bucket.ViewQuery("fb_"+db.cfg.Prefix, view, db.viewOpts(ctx, o))
	if err != nil {
		return nil, fmt.Errorf("couchbase: view %s: %w", view, err)
	}
	var rows []viewRow
	for res.Next() {
		r := res.Row()
		row := viewRow{ID: r.ID}
		if err := r.Key(&row.Key); err != nil {
			return nil, fmt.Errorf("couchbase: view %s: key: %w", view, err)
		}
		if err := r.Value(&row.Value); err != nil {
			return nil, fmt.Errorf("couchbase: view %s: value: %w", view, err)
		}
		rows = append(rows, row)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("couchbase: view %s: %w", view, err)
	}
	return rows, nil
}

// count is a _count view's total (0 for no rows).
func (db *DB) count(ctx context.Context, view string) (int64, error) {
	rows, err := db.query(ctx, view, gocb.ViewOptions{Reduce: true})
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	n, err := integer(rows[0].Value)
	if err != nil {
		return 0, fmt.Errorf("couchbase: view %s: count %s: %w", view, rows[0].Value, err)
	}
	return n, nil
}

// durable reports whether writes wait for a durability requirement.
func (db *DB) durable() bool {
	return db.cfg.Durability != "" || db.cfg.PersistTo > 0 || db.cfg.ReplicateTo > 0
}

// writeAll stores docs (key → value): one bulk request of upserts, or,
// with durability asked for (which the SDK's bulk operations cannot
// carry), one upsert each, 32 at a time. It fails if any write failed.
func (db *DB) writeAll(ctx context.Context, keys []string, docs []any) error {
	if !db.durable() {
		ops := make([]gocb.BulkOp, len(keys))
		for i := range keys {
			ops[i] = &gocb.UpsertOp{ID: keys[i], Value: docs[i]}
		}
		if err := db.doBulk(ctx, ops); err != nil {
			return err
		}
		for _, o := range ops {
			if err := o.(*gocb.UpsertOp).Err; err != nil {
				return fmt.Errorf("upsert %s: %w", o.(*gocb.UpsertOp).ID, err)
			}
		}
		return nil
	}
	opts := &gocb.UpsertOptions{Context: ctx, PersistTo: db.cfg.PersistTo, ReplicateTo: db.cfg.ReplicateTo}
	if db.cfg.Durability != "" {
		opts.DurabilityLevel = durabilities[db.cfg.Durability]
	}
	return parallel(ctx, len(keys), func(i int) error {
		var err error
		for attempt := 1; ; attempt++ {
			if _, err = db.col.Upsert(keys[i], docs[i], opts); err == nil {
				return nil
			}
			if attempt == upsertAttempts || !connectionLost(err) || ctx.Err() != nil {
				return fmt.Errorf("upsert %s (attempt %d): %w", keys[i], attempt, err)
			}
		}
	})
}

// doBulk sends ops in bulk requests of at most bulkChunk, each holding
// its size of db.bulk while in flight; each op's own error is left in it
// for the caller.
func (db *DB) doBulk(ctx context.Context, ops []gocb.BulkOp) error {
	for lo := 0; lo < len(ops); lo += bulkChunk {
		chunk := ops[lo:min(lo+bulkChunk, len(ops))]
		if err := db.bulk.Acquire(ctx, int64(len(chunk))); err != nil {
			return err
		}
		err := db.col.Do(chunk, &gocb.BulkOpOptions{Context: ctx})
		db.bulk.Release(int64(len(chunk)))
		if err != nil {
			return err
		}
	}
	return nil
}

// upsertAttempts bounds the writes of one document whose connection was
// lost in flight. The SDK does not retry an upsert then (it cannot know
// the write is idempotent); ours are: each key holds one deterministic
// document, so writing it again stores the same thing once. Seen once on
// a loaded machine: CouchbaseMock closed a connection during an
// observe-based (replicate_to) write.
const upsertAttempts = 3

// connectionLost reports whether err is the server closing the connection
// with the request in flight.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// parallel runs fn(i) for i in [0, n), 32 at a time, and returns the first
// error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				once.Do(func() { first = err })
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// removeView deletes every document a view lists (its map rows), in bulk
// requests, until the view lists none.
func (db *DB) removeView(ctx context.Context, view string) error {
	for range 100 {
		rows, err := db.query(ctx, view, gocb.ViewOptions{Limit: 10_000})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ops := make([]gocb.BulkOp, len(rows))
		for i, r := range rows {
			ops[i] = &gocb.RemoveOp{ID: r.ID}
		}
		if err := db.doBulk(ctx, ops); err != nil {
			return fmt.Errorf("couchbase: remove: %w", err)
		}
		for _, o := range ops {
			if err := o.(*gocb.RemoveOp).Err; err != nil && !errors.Is(err, gocb.ErrDocumentNotFound) {
				return fmt.Errorf("couchbase: remove %s: %w", o.(*gocb.RemoveOp).ID, err)
			}
		}
	}
	return fmt.Errorf("couchbase: view %s still lists documents after 100 rounds of removal", view)
}

// Drop removes every document of the DB's prefix and its design document
// (tests use a prefix each).
func (db *DB) Drop(ctx context.Context) error {
	if err := db.removeView(ctx, viewAll); err != nil {
		return err
	}
	err := db.bucket.ViewIndexes().DropDesignDocument("fb_"+db.cfg.Prefix, gocb.DesignDocumentNamespaceProduction,
		&gocb.DropDesignDocumentOptions{Context: ctx})
	if err != nil && !errors.Is(err, gocb.ErrDesignDocumentNotFound) {
		return fmt.Errorf("couchbase: drop design document: %w", err)
	}
	db.mu.Lock()
	db.designed = false
	db.mu.Unlock()
	return nil
}
