// Package mongodb is fieldbench's adapter for MongoDB, through the official
// Go driver (go.mongodb.org/mongo-driver/v2). It speaks only the MongoDB
// wire protocol, so it works against a real MongoDB and against FerretDB,
// the MongoDB-compatible server that `cluster up mongodb` starts here
// (MongoDB itself cannot be installed on these machines). Info reports
// which one answered (buildInfo's ferretdbVersion field), so a result
// measured on FerretDB never says MongoDB. docs/mongodb.md describes every
// collection and index.
//
// DSN: any MongoDB connection string; fieldbench reads its own options and
// passes every other one (w, journal, readPreference, authSource,
// replicaSet, tls...) to the driver unchanged:
//
//	mongodb://[user:password@]host:port[,host:port...]/database[?options]
//	mongodb+srv://...
//
// fieldbench's options: geo=grid|2dsphere (trajectory: grid buckets with
// the exact test on the client, which every server here answers — the
// default — or MongoDB's own 2dsphere index with $geoNear and $geoWithin,
// which FerretDB lacks, so that path is NOT VERIFIED HERE);
// ingest=insertmany|bulkwrite (how an ingest batch is sent; default
// insertmany); batch=N (documents per insertMany while loading; default
// 1000); parts=N (how many collections the microblog lines and tweets and
// the trajectory records are partitioned into; default 64, see
// docs/mongodb.md). The database defaults to "fieldbench". One driver
// default is changed: serverSelectionTimeoutMS is 1000 unless the DSN sets
// it (see serverSelectionTimeout). The driver dials through the adapter's
// reconnection backoff (adapter.Backoffs; DB.Reconnects).
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with a file per family (ingest.go,
// microblog.go, trajectory.go, wiki.go), the cluster engine that builds
// and starts FerretDB (engine.go), what an external cluster asks a
// MongoDB (external.go) and convergence's refusal (convergence.go);
// db/all links it into the binary.
package mongodb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name.
const Name = "mongodb"

// NotVerified marks code paths that no server on this machine runs
// (FerretDB has no geospatial index or operator); it goes into `list`,
// the result's database config and the docs.
const NotVerified = "not verified here"

func init() { adapter.Register(Adapter{}) }

// Adapter opens MongoDB DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"mongodb", "mongodb+srv"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "MongoDB wire protocol (official driver; tested here against FerretDB, whose figures say nothing about MongoDB's speed); " +
		"DSN mongodb://host:port/database[?geo=grid|2dsphere] (geo=2dsphere: " + NotVerified + ")"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Geo is how the trajectory family finds cells near a point or in a box.
type Geo string

const (
	// GeoGrid buckets cells on a square grid (an ordinary compound index
	// on the bucket numbers) and decides every answer exactly on the
	// client, as the Cassandra and HBase adapters do: every server that
	// speaks the protocol answers it.
	GeoGrid Geo = "grid"
	// Geo2DSphere uses MongoDB's 2dsphere index, $geoNear and $geoWithin
	// to narrow the candidates, then the same exact test on the client.
	// FerretDB has no geo support: this path is not verified here.
	Geo2DSphere Geo = "2dsphere"
)

// IngestMode is how an ingest batch is sent.
type IngestMode string

const (
	// InsertMany sends one unordered insertMany command per batch.
	InsertMany IngestMode = "insertmany"
	// BulkWrite sends one unordered bulkWrite of insertOne models.
	BulkWrite IngestMode = "bulkwrite"
)

// Config is a parsed DSN.
type Config struct {
	// URI is the connection string without fieldbench's own options.
	URI      string
	Database string
	Geo      Geo
	Ingest   IngestMode
	// Batch is the documents per insertMany while loading.
	Batch int
	// Parts is how many collections the microblog lines and tweets are
	// partitioned into (by user or tweet id modulo Parts).
	Parts int
}

// ownOptions are the query options fieldbench reads and removes before
// the driver sees the URI.
var ownOptions = []string{"geo", "ingest", "batch", "parts"}

// ParseDSN reads a mongodb:// or mongodb+srv:// DSN; its errors wrap
// adapter.ErrBadDSN.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") || u.Host == "" {
		return Config{}, fmt.Errorf("mongodb DSN must look like mongodb://host:port[,host:port...]/database[?options] (got %q)", redact.DSN(dsn))
	}
	c := Config{Database: strings.Trim(u.Path, "/"), Geo: GeoGrid, Ingest: InsertMany, Batch: 1000, Parts: 64}
	if c.Database == "" {
		c.Database = "fieldbench"
	}
	if strings.ContainsAny(c.Database, `/\. "$`) || len(c.Database) > 63 {
		return Config{}, fmt.Errorf("mongodb DSN: database %q: want at most 63 characters, none of / \\ . \" $ or space", c.Database)
	}
	q := u.Query()
	for _, k := range ownOptions {
		if !q.Has(k) {
			continue
		}
		v := q.Get(k)
		q.Del(k)
		var err error
		switch k {
		case "geo":
			switch Geo(v) {
			case GeoGrid, Geo2DSphere:
				c.Geo = Geo(v)
			default:
				err = errors.New("want grid or 2dsphere")
			}
		case "ingest":
			switch IngestMode(v) {
			case InsertMany, BulkWrite:
				c.Ingest = IngestMode(v)
			default:
				err = errors.New("want insertmany or bulkwrite")
			}
		case "batch":
			c.Batch, err = strconv.Atoi(v)
			if err == nil && (c.Batch < 1 || c.Batch > 100_000) {
				err = errors.New("want 1..100000")
			}
		case "parts":
			c.Parts, err = strconv.Atoi(v)
			if err == nil && (c.Parts < 1 || c.Parts > 1024) {
				err = errors.New("want 1..1024")
			}
		}
		if err != nil {
			return Config{}, fmt.Errorf("mongodb DSN option %s=%q: %w", k, v, err)
		}
	}
	u.RawQuery = q.Encode()
	c.URI = u.String()
	return c, nil
}

// DB is a client on one database. It implements adapter.DB and the four
// families' Backends.
type DB struct {
	cfg    Config
	client *mongo.Client
	db     *mongo.Database
	// dials space out reconnections to a server that refuses them, one
	// Backoff per server address (the driver's one dialer serves every
	// server of a replica set, and their monitors); see adapter.Backoff.
	dials *adapter.Backoffs

	mu      sync.Mutex
	indexed map[string]bool // collections whose indexes this DB created
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ trajectory.Backend  = (*DB)(nil)
)

// serverSelectionTimeout is how long an operation waits for a server it
// can use (the driver's default: 30 s) unless the DSN says otherwise
// (serverSelectionTimeoutMS). With the server gone, the driver marks it
// unknown and every operation waits for it in server selection instead of
// failing; an operation in flight when the outage begins, which the run's
// outage bound does not cover, held its client for 30 s (TestOutage: no
// error from 5 s after the kill to the end, the load ending 10 s late).
// It fails now within adapter.OutageBound, the longest an operation takes
// while its database is down, as a timeout. It only matters when no
// server can be used: an outage, or a replica set between primaries.
const serverSelectionTimeout = adapter.OutageBound

// Open connects and pings the server.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	// Every connection the driver opens, the pools' and the monitors'
	// heartbeats alike, dials through the backoff (TLS, when the URI asks
	// for it, is the driver's own, over the connection dialled).
	dials := &adapter.Backoffs{}
	opts := options.Client().ApplyURI(cfg.URI).SetAppName("fieldbench").SetDialer(dials)
	if opts.ServerSelectionTimeout == nil { // the DSN's serverSelectionTimeoutMS wins
		opts.SetServerSelectionTimeout(serverSelectionTimeout)
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("mongodb DSN %s: %w", redact.DSN(dsn), err)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("mongodb: connect to %s: %w", redact.DSN(dsn), err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A server not found within the short selection timeout is asked
	// again until the 30 s: the driver's first heartbeat can take longer
	// on a loaded machine.
	for err = client.Ping(pctx, nil); err != nil && errors.Is(err, context.DeadlineExceeded) && pctx.Err() == nil; {
		err = client.Ping(pctx, nil)
	}
	if err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("mongodb: ping %s: %w", redact.DSN(dsn), err)
	}
	return &DB{cfg: cfg, client: client, db: client.Database(cfg.Database), dials: dials, indexed: map[string]bool{}}, nil
}

// Reconnects implements adapter.Reconnector: the dials to every server.
func (db *DB) Reconnects() adapter.BackoffStats { return db.dials.Reconnects() }

// Database is the driver's handle on the DB's database (for tests and
// tools).
func (db *DB) Database() *mongo.Database { return db.db }

// Config is the parsed DSN.
func (db *DB) Config() Config { return db.cfg }

// Close implements adapter.DB.
func (db *DB) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("mongodb: disconnect: %w", err)
	}
	return nil
}

// Drop drops the whole database (tests use a database each).
func (db *DB) Drop(ctx context.Context) error {
	if err := db.db.Drop(ctx); err != nil {
		return fmt.Errorf("mongodb: drop database %s: %w", db.cfg.Database, err)
	}
	return nil
}

// Server is what buildInfo says about the server.
type Server struct {
	// Name is "FerretDB" when the server reports a ferretdbVersion, else
	// "MongoDB".
	Name string
	// Version is the server's own version (FerretDB's, not the MongoDB
	// version it claims for compatibility).
	Version string
	// Compat is the MongoDB version the server claims (buildInfo's
	// version); for MongoDB itself, Version.
	Compat string
}

// IsFerretDB reports whether the server is FerretDB.
func (s Server) IsFerretDB() bool { return s.Name == "FerretDB" }

// ServerOf asks buildInfo which server answers: FerretDB adds a
// ferretdbVersion field ("v1.24.2") next to the MongoDB version it emulates.
func ServerOf(ctx context.Context, client *mongo.Client) (Server, error) {
	var bi mongoBuildInfo
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err != nil {
		return Server{}, fmt.Errorf("mongodb: buildInfo: %w", err)
	}
	if bi.FerretDBVersion != "" {
		return Server{Name: "FerretDB", Version: strings.TrimPrefix(bi.FerretDBVersion, "v"), Compat: bi.Version}, nil
	}
	return Server{Name: "MongoDB", Version: bi.Version, Compat: bi.Version}, nil
}

// Info implements adapter.DB: the server that answered (FerretDB or
// MongoDB, from buildInfo) and what shapes the figures.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	srv, err := ServerOf(ctx, db.client)
	if err != nil {
		return adapter.Info{}, err
	}
	cfg := map[string]string{
		"driver":   "go.mongodb.org/mongo-driver/v2",
		"database": db.cfg.Database,
		"geo":      string(db.cfg.Geo),
		"ingest":   string(db.cfg.Ingest),
		"parts":    strconv.Itoa(db.cfg.Parts),
	}
	if db.cfg.Geo == Geo2DSphere {
		cfg["geo"] += " (" + NotVerified + ")"
	}
	if srv.IsFerretDB() {
		cfg["mongodb_compat"] = srv.Compat
		cfg["stand_in"] = "FerretDB speaks the MongoDB wire protocol; these figures say nothing about MongoDB's speed"
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: srv.Name, Version: srv.Version, Config: cfg}, nil
}

// c is a collection of the DB's database.
func (db *DB) c(name string) *mongo.Collection { return db.db.Collection(name) }

// ensureIndexes creates coll's indexes once per DB (createIndexes of an
// existing index is a no-op on the server, but a round trip).
func (db *DB) ensureIndexes(ctx context.Context, coll string, idx ...mongo.IndexModel) error {
	db.mu.Lock()
	done := db.indexed[coll]
	db.mu.Unlock()
	if done {
		return nil
	}
	if len(idx) > 0 {
		if _, err := db.c(coll).Indexes().CreateMany(ctx, idx); err != nil {
			return fmt.Errorf("mongodb: create indexes on %s: %w", coll, err)
		}
	} else if err := db.db.CreateCollection(ctx, coll); err != nil && !isNamespaceExists(err) {
		return fmt.Errorf("mongodb: create collection %s: %w", coll, err)
	}
	db.mu.Lock()
	db.indexed[coll] = true
	db.mu.Unlock()
	return nil
}

// forget makes the next ensureIndexes of colls create their indexes again
// (after a drop).
func (db *DB) forget(colls ...string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, c := range colls {
		delete(db.indexed, c)
	}
}

// isNamespaceExists is the server's answer to creating a collection that
// exists (code 48).
func isNamespaceExists(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == 48
}

// insertChunks inserts docs in unordered insertMany commands of at most
// db.cfg.Batch documents. With skipDuplicates, documents whose _id is
// stored already are not an error (the rest of each command is inserted:
// it is unordered).
func (db *DB) insertChunks(ctx context.Context, coll string, docs []any, skipDuplicates bool) error {
	for i := 0; i < len(docs); i += db.cfg.Batch {
		_, err := db.c(coll).InsertMany(ctx, docs[i:min(i+db.cfg.Batch, len(docs))], options.InsertMany().SetOrdered(false))
		if err != nil && !(skipDuplicates && onlyDuplicates(err)) {
			return fmt.Errorf("insert into %s: %w", coll, err)
		}
	}
	return nil
}

// idx is an index on keys (field, 1|-1 pairs).
func idx(name string, unique bool, keys ...any) mongo.IndexModel {
	var d bson.D
	for i := 0; i+1 < len(keys); i += 2 {
		d = append(d, bson.E{Key: keys[i].(string), Value: keys[i+1]})
	}
	o := options.Index().SetName(name)
	if unique {
		o.SetUnique(true)
	}
	return mongo.IndexModel{Keys: d, Options: o}
}

// Partitions. FerretDB reads every document of a collection for any query
// but a findOne by a string or ObjectId _id (measured here: about 2 s for
// a query over 10,000 small documents), so the collections that reads
// filter on another field are split into partitions, collections named
// base_K, and a read scans only its own. On MongoDB the same code runs with
// an index in each partition; parts=1 gives one collection per kind.

// part is the name of partition k of base.
func part(base string, k int64) string { return base + "_" + strconv.FormatInt(k, 10) }

// partOf is the partition of base that key falls into (key modulo Parts).
func (db *DB) partOf(base string, key int64) string {
	n := int64(db.cfg.Parts)
	return part(base, ((key%n)+n)%n)
}

// partitions lists the existing partitions of base (base_K collections).
func (db *DB) partitions(ctx context.Context, base string) ([]string, error) {
	names, err := db.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("mongodb: list collections: %w", err)
	}
	var out []string
	for _, n := range names {
		if k, ok := strings.CutPrefix(n, base+"_"); ok {
			if _, err := strconv.ParseInt(k, 10, 64); err == nil {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// countAll counts the documents of every partition of base.
func (db *DB) countAll(ctx context.Context, base string) (int64, error) {
	parts, err := db.partitions(ctx, base)
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	var total int64
	err = parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		n, err := db.c(parts[i]).CountDocuments(ctx, bson.D{})
		if err != nil {
			return fmt.Errorf("count %s: %w", parts[i], err)
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return nil
	})
	return total, err
}

// dropAll drops every partition of each base.
func (db *DB) dropAll(ctx context.Context, bases ...string) error {
	for _, b := range bases {
		parts, err := db.partitions(ctx, b)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if err := db.c(p).Drop(ctx); err != nil {
				return fmt.Errorf("mongodb: drop %s: %w", p, err)
			}
		}
		db.forget(parts...)
	}
	return nil
}

// maxParallel bounds the requests one operation has in flight.
const maxParallel = 16

// parallel runs fn for every i in [0, n), at most maxParallel at once, and
// returns the first error (the others are not started once one failed).
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	return first
}

// insertGrouped inserts docs grouped by collection name, the collections in
// parallel, after ensure prepared each (its indexes); skipDuplicates as for
// insertChunks.
func (db *DB) insertGrouped(ctx context.Context, groups map[string][]any, skipDuplicates bool, ensure func(ctx context.Context, coll string) error) error {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return parallel(ctx, len(names), func(ctx context.Context, i int) error {
		if ensure != nil {
			if err := ensure(ctx, names[i]); err != nil {
				return err
			}
		}
		return db.insertChunks(ctx, names[i], groups[names[i]], skipDuplicates)
	})
}
