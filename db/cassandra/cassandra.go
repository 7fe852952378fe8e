// Package cassandra is fieldbench's adapter for Apache Cassandra, through
// the Apache Cassandra Go driver (github.com/apache/cassandra-gocql-driver,
// "gocql"). Tables are designed query-first, one partition per read, as the
// studies' Cassandra setups were; docs/cassandra.md describes every table.
//
// DSN:
//
//	cassandra://host:port[,host:port...]/keyspace[?options]
//
// Options: consistency=LEVEL (ONE, QUORUM, ALL, LOCAL_QUORUM...; default
// ONE), rf=N (replication factor of the keyspace: created with it, or,
// when the DSN names it, altered to it if it exists with another; default
// 1), or rf=DC:N,DC:N... (a factor per data centre: NetworkTopologyStrategy),
// dc=NAME (the data centre whose nodes the client sends its requests to,
// as a client at that site does; LOCAL_* consistency levels count that
// data centre's replicas), batch=logged|unlogged (the microblog fan-out batch;
// default logged), conns=N (connections per host, default 2),
// timeout=DURATION (per request, default 12s), concurrency=N (requests in
// flight while loading, default 64), insert=batch|single (ingest: one
// unlogged batch per partition, the study's way, or every record as its
// own INSERT — plain single-row inserts, as latte and cassandra-stress
// send; default batch).
package cassandra

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name and DSN scheme.
const Name = "cassandra"

func init() { adapter.Register(Adapter{}) }

// Adapter opens Cassandra DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "Apache Cassandra (gocql); DSN cassandra://host:port[,host:port...]/keyspace[?consistency=ONE&rf=1]"
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
	Hosts       []string
	Keyspace    string
	Consistency gocql.Consistency
	RF          int
	// RFGiven: the DSN named rf. Only then is an existing keyspace of
	// another factor altered: a keyspace the user made is not changed by
	// a default.
	RFGiven bool
	// DCRF is the replication factor per data centre (rf=dc1:2,dc2:2):
	// the keyspace uses NetworkTopologyStrategy and RF is their sum. Nil
	// for SimpleStrategy.
	DCRF map[string]int
	// LocalDC is the data centre (dc=) requests go to first: gocql's
	// data-centre-aware round robin under token awareness. "" = any node.
	LocalDC string
	// ShuffleReplicas (replicas=shuffle) makes the token-aware routing
	// try a key's replicas in a random order for each request instead of
	// the first replica first (gocql's default, replicas=first): a retry
	// then has a chance to reach another replica when the first stopped
	// answering without the driver marking it down (a partition), as the
	// DataStax Java driver's default policy does. It changes which replica
	// a read at ONE reaches, and so convergence and audit figures.
	ShuffleReplicas bool
	Logged          bool // microblog fan-out as a logged batch
	Conns           int
	Timeout         time.Duration
	Concurrency     int
	// SingleInserts makes ingest send one INSERT per record instead of
	// one batch per partition.
	SingleInserts bool
}

var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// ParseDSN reads a cassandra:// DSN.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Config, error) {
	rest, ok := strings.CutPrefix(dsn, Name+"://")
	if !ok {
		return Config{}, fmt.Errorf("cassandra DSN must look like cassandra://host:port[,host:port...]/keyspace (got %q)", redact.DSN(dsn))
	}
	if strings.Contains(rest, "@") {
		// No user or password is supported; refuse before cutting the
		// DSN into hosts and keyspace, whose messages quote them.
		return Config{}, fmt.Errorf("cassandra DSN %s: a user or password is not supported (the servers fieldbench starts need none)", redact.DSN(dsn))
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, ks, _ := strings.Cut(rest, "/")
	c := Config{Keyspace: strings.ToLower(strings.Trim(ks, "/")), Consistency: gocql.One, RF: 1, Logged: true,
		Conns: 2, Timeout: 12 * time.Second, Concurrency: 64}
	for i, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		// The host is not quoted: without its '@' a userinfo reads as
		// one (cassandra://user:pw/ks), which Redact masks whole.
		if err := adapter.CheckAddr(h); err != nil {
			return Config{}, fmt.Errorf("cassandra DSN %s: host %d: %w", redact.DSN(dsn), i+1, err)
		}
		c.Hosts = append(c.Hosts, h)
	}
	if len(c.Hosts) == 0 {
		return Config{}, fmt.Errorf("cassandra DSN %q has no host:port", redact.DSN(dsn))
	}
	if c.Keyspace == "" {
		c.Keyspace = "fieldbench"
	}
	if !identRE.MatchString(c.Keyspace) {
		return Config{}, fmt.Errorf("cassandra DSN: keyspace %q: want letters, digits and _ (at most 48, starting with a letter)", c.Keyspace)
	}
	if query == "" {
		return c, nil
	}
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "consistency":
			c.Consistency, err = gocql.ParseConsistencyWrapper(strings.ToUpper(v))
		case "rf":
			c.RFGiven = true
			if strings.Contains(v, ":") {
				c.DCRF, err = parseDCRF(v)
				c.RF = 0
				for _, n := range c.DCRF {
					c.RF += n
				}
				break
			}
			c.RF, err = strconv.Atoi(v)
			if err == nil && c.RF < 1 {
				err = errors.New("want at least 1, or a factor per data centre like dc1:2,dc2:2")
			}
		case "dc":
			if !dcRE.MatchString(v) {
				err = errors.New("want a data centre's name (letters, digits, _ and -)")
			}
			c.LocalDC = v
		case "batch":
			switch v {
			case "logged":
				c.Logged = true
			case "unlogged":
				c.Logged = false
			default:
				err = errors.New("want logged or unlogged")
			}
		case "conns":
			c.Conns, err = strconv.Atoi(v)
			if err == nil && c.Conns < 1 {
				err = errors.New("want at least 1")
			}
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
		case "concurrency":
			c.Concurrency, err = strconv.Atoi(v)
			if err == nil && c.Concurrency < 1 {
				err = errors.New("want at least 1")
			}
		case "replicas":
			switch v {
			case "first":
				c.ShuffleReplicas = false
			case "shuffle":
				c.ShuffleReplicas = true
			default:
				err = errors.New("want first or shuffle")
			}
		case "insert":
			switch v {
			case "batch":
				c.SingleInserts = false
			case "single":
				c.SingleInserts = true
			default:
				err = errors.New("want batch or single")
			}
		default:
			return Config{}, fmt.Errorf("cassandra DSN: unknown option %q (known: consistency, rf, dc, batch, conns, timeout, concurrency, insert, replicas)", k)
		}
		if err != nil {
			return Config{}, fmt.Errorf("cassandra DSN option %s=%q: %w", k, v, err)
		}
	}
	return c, nil
}

// dcRE is a data centre's name as the DSN may give it (it is quoted into
// CQL, so nothing else is let through).
var dcRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parseDCRF reads rf=dc1:2,dc2:2.
func parseDCRF(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, p := range strings.Split(v, ",") {
		dc, n, _ := strings.Cut(p, ":")
		f, err := strconv.Atoi(n)
		if !dcRE.MatchString(dc) || err != nil || f < 0 {
			return nil, fmt.Errorf("want DC:N,DC:N... with a data centre's name and a factor of at least 0 (got %q)", p)
		}
		if _, dup := out[dc]; dup {
			return nil, fmt.Errorf("data centre %s named twice", dc)
		}
		out[dc] = f
	}
	return out, nil
}

// replication is the keyspace's replication map in CQL.
func (c Config) replication() string {
	if c.DCRF == nil {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", c.RF)
	}
	s := "{'class': 'NetworkTopologyStrategy'"
	for _, dc := range slices.Sorted(maps.Keys(c.DCRF)) {
		s += fmt.Sprintf(", '%s': %d", dc, c.DCRF[dc])
	}
	return s + "}"
}

// sameReplication reports whether a keyspace's replication map (as
// system_schema.keyspaces holds it) is the one c asks for.
func (c Config) sameReplication(repl map[string]string) bool {
	if c.DCRF == nil {
		return strings.HasSuffix(repl["class"], "SimpleStrategy") && repl["replication_factor"] == strconv.Itoa(c.RF)
	}
	if !strings.HasSuffix(repl["class"], "NetworkTopologyStrategy") || len(repl) != len(c.DCRF)+1 {
		return false
	}
	for dc, n := range c.DCRF {
		if repl[dc] != strconv.Itoa(n) {
			return false
		}
	}
	return true
}

// rfText is the replication factor as a result's header reports it: N, or
// dc1:N,dc2:N.
func (c Config) rfText() string {
	if c.DCRF == nil {
		return strconv.Itoa(c.RF)
	}
	var ps []string
	for _, dc := range slices.Sorted(maps.Keys(c.DCRF)) {
		ps = append(ps, dc+":"+strconv.Itoa(c.DCRF[dc]))
	}
	return strings.Join(ps, ",")
}

// DB is an open Cassandra session on one keyspace. It implements
// adapter.DB and the four families' Backends.
type DB struct {
	cfg Config
	s   *gocql.Session
	ks  string
	// dials space out reconnections to a node that refuses them, one
	// Backoff per node; see adapter.Backoff.
	dials *adapter.Backoffs
	gate  *adapter.Backoff // requests that found no connection; see gatedPolicy

	mu     sync.Mutex
	tables map[string]bool // created by this DB (skip the DDL next time)
	// partSchema makes the parts a process loads at once create their
	// tables one after the other (createPartTables).
	partSchema sync.Mutex
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ trajectory.Backend  = (*DB)(nil)
)

// Open connects and creates the keyspace when absent (SimpleStrategy with
// the DSN's rf).
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cc := gocql.NewCluster(cfg.Hosts...)
	cc.Consistency = cfg.Consistency
	cc.Timeout, cc.ConnectTimeout = cfg.Timeout, 10*time.Second
	cc.NumConns = cfg.Conns
	cc.ProtoVersion = 4
	cc.Logger = gocql.NewLogger(gocql.LogLevelNone)
	cc.MaxWaitSchemaAgreement = 2 * time.Minute
	cc.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 3, Interval: time.Second}
	// A node marked down is tried again every second (gocql's default is
	// every 60 s: a single node restarted after a crash stayed unused for
	// up to a minute), its dials spaced further by the backoff.
	cc.ReconnectInterval = adapter.DefaultBackoffMax
	dials := &adapter.Backoffs{}
	cc.Dialer = dials
	// Token-aware routing: a single-partition request goes straight to a
	// replica, as the study's clients did.
	gate := adapter.NewBackoff()
	// With dc= the fallback prefers that data centre's nodes, as a client
	// at one site of several sends its requests to its own site.
	fallback := gocql.RoundRobinHostPolicy()
	if cfg.LocalDC != "" {
		fallback = gocql.DCAwareRoundRobinPolicy(cfg.LocalDC)
	}
	tokenAware := gocql.TokenAwareHostPolicy(fallback)
	if cfg.ShuffleReplicas {
		tokenAware = gocql.TokenAwareHostPolicy(fallback, gocql.ShuffleReplicas())
	}
	cc.PoolConfig.HostSelectionPolicy = gatedPolicy{HostSelectionPolicy: tokenAware, b: gate}
	s, err := cc.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect to %s: %w", strings.Join(cfg.Hosts, ","), err)
	}
	db := &DB{cfg: cfg, s: s, ks: cfg.Keyspace, tables: map[string]bool{}, dials: dials, gate: gate}
	q := fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", db.ks, cfg.replication())
	if err := db.ddl(ctx, q); err != nil {
		s.Close()
		return nil, err
	}
	if err := db.alignRF(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return db, nil
}

// alignRF alters the keyspace to the DSN's rf when it exists with another
// replication (strategy or factors): a result's header reports the DSN's rf, and a
// cluster grown step by step with rf: nodes (cluster package) asks for a
// larger factor at every step. Rows written before are not re-replicated
// (no repair is run): the workloads that grow clusters in steps reset and
// reload their data at each step. A DSN that names no rf leaves the
// keyspace as it is (one the user made is not changed by a default).
func (db *DB) alignRF(ctx context.Context) error {
	var repl map[string]string
	err := db.s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", db.ks).ScanContext(ctx, &repl)
	if err != nil {
		return fmt.Errorf("cassandra: replication of keyspace %s: %w", db.ks, err)
	}
	if !db.cfg.RFGiven || db.cfg.sameReplication(repl) {
		return nil
	}
	return db.ddl(ctx, fmt.Sprintf("ALTER KEYSPACE %s WITH replication = %s", db.ks, db.cfg.replication()))
}

// Reconnects implements adapter.Reconnector: the dials to every node, and
// the time requests that found no connection waited at the gate.
func (db *DB) Reconnects() adapter.BackoffStats {
	st := db.dials.Reconnects()
	g := db.gate.Stats()
	st.Waited += g.Waited
	st.Down = st.Down || g.Down // or requests find no host at all
	return st
}

// Session is the driver session (for tests and tools).
func (db *DB) Session() *gocql.Session { return db.s }

// Keyspace is the keyspace the DB works in.
func (db *DB) Keyspace() string { return db.ks }

// Close implements adapter.DB.
func (db *DB) Close() error { db.s.Close(); return nil }

// t is a table's qualified name.
func (db *DB) t(table string) string { return db.ks + "." + table }

// ddl runs a schema statement and waits until every node agrees on the
// schema, so the next statement finds the table on whichever node it hits.
func (db *DB) ddl(ctx context.Context, stmt string) error {
	if err := db.s.Query(stmt).Consistency(gocql.All).ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s: %w", firstWords(stmt, 6), err)
	}
	return db.awaitSchema(ctx, stmt)
}

// awaitSchema waits until every node agrees on the schema after stmt. A
// node that missed the change's gossip pulls the schema only on its next
// round: on a loaded machine (3 JVMs on 2 cores) the versions were seen
// to disagree past the driver's 2-minute wait (MaxWaitSchemaAgreement),
// so the wait is made once more before the statement is called failed.
func (db *DB) awaitSchema(ctx context.Context, stmt string) error {
	err := db.s.AwaitSchemaAgreement(ctx)
	if err != nil && ctx.Err() == nil {
		err = db.s.AwaitSchemaAgreement(ctx)
	}
	if err != nil {
		return fmt.Errorf("cassandra: schema agreement after %s: %w", firstWords(stmt, 6), err)
	}
	return nil
}

// createTables runs CREATE TABLE IF NOT EXISTS statements once per DB.
// Each statement is "name (columns...) [WITH ...]".
func (db *DB) createTables(ctx context.Context, defs ...string) error {
	return db.createTablesWith(ctx, func(_, stmt string) error { return db.ddl(ctx, stmt) }, defs...)
}

// createTablesWith is createTables with exec running each statement (name
// is the table's): the tables this DB made already are skipped.
func (db *DB) createTablesWith(ctx context.Context, exec func(name, stmt string) error, defs ...string) error {
	for _, d := range defs {
		name, _, _ := strings.Cut(d, " ")
		db.mu.Lock()
		done := db.tables[name]
		db.mu.Unlock()
		if done {
			continue
		}
		if err := exec(name, "CREATE TABLE IF NOT EXISTS "+db.t(name)+" "+strings.TrimPrefix(d, name+" ")); err != nil {
			return err
		}
		db.mu.Lock()
		db.tables[name] = true
		db.mu.Unlock()
	}
	return nil
}

// truncate empties tables (TRUNCATE needs every replica up).
func (db *DB) truncate(ctx context.Context, tables ...string) error {
	for _, t := range tables {
		if err := db.s.Query("TRUNCATE " + db.t(t)).ExecContext(ctx); err != nil {
			return fmt.Errorf("cassandra: truncate %s: %w", t, err)
		}
	}
	return nil
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// Info implements adapter.DB: the server version and what shapes the
// figures (consistency, replication, node count).
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	var version string
	if err := db.s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &version); err != nil {
		return adapter.Info{}, fmt.Errorf("cassandra: info: %w", err)
	}
	peers := 0
	it := db.s.Query("SELECT peer FROM system.peers").IterContext(ctx)
	var p net.IP
	for it.Scan(&p) {
		peers++
	}
	if err := it.Close(); err != nil {
		return adapter.Info{}, fmt.Errorf("cassandra: info: %w", err)
	}
	cfg := map[string]string{
		"driver":      "github.com/apache/cassandra-gocql-driver/v2",
		"keyspace":    db.ks,
		"consistency": db.cfg.Consistency.String(),
		"rf":          db.cfg.rfText(),
		"nodes":       strconv.Itoa(peers + 1),
		"batch":       map[bool]string{true: "logged", false: "unlogged"}[db.cfg.Logged],
		"insert":      map[bool]string{true: "single", false: "batch"}[db.cfg.SingleInserts],
		"replicas":    map[bool]string{true: "shuffle", false: "first"}[db.cfg.ShuffleReplicas],
	}
	if db.cfg.SingleInserts {
		// The ingest inserts do not go through gocql (pipeline.go): a
		// result says which client sent them.
		cfg["insert_driver"] = "CQL v4 pipeline (adapter/cassandra/pipeline.go)"
	}
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// parallel runs fn for every i in [0, n) with at most db.cfg.Concurrency
// in flight; it returns the first error and stops starting new ones.
func (db *DB) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, db.cfg.Concurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// tokenSlices splits the Murmur3 token ring into n contiguous ranges
// (lo, hi], for full scans that each stay within a read timeout.
func tokenSlices(n int) [][2]int64 {
	out := make([][2]int64, 0, n)
	const minTok = -1 << 63
	step := uint64(1<<63) / uint64(n) * 2
	lo := int64(minTok)
	for i := 0; i < n; i++ {
		hi := int64(uint64(lo) + step)
		if i == n-1 {
			hi = 1<<63 - 1
		}
		out = append(out, [2]int64{lo, hi})
		lo = hi
	}
	return out
}

// scanSlices is how many token ranges a full scan is split into.
const scanSlices = 32

// scan reads cols of every row of table, token range by token range in
// parallel: each range's iterator goes to each (concurrently: each must
// lock what it shares). pk is the partition key's column list, e.g. "id"
// or "source, bucket". Murmur3 never assigns the token -2^63 to data, so
// the (lo, hi] ranges cover every row.
func (db *DB) scan(ctx context.Context, table, pk, cols string, each func(it *gocql.Iter)) error {
	slices := tokenSlices(scanSlices)
	q := fmt.Sprintf("SELECT %s FROM %s WHERE token(%s) > ? AND token(%s) <= ?", cols, db.t(table), pk, pk)
	return db.parallel(ctx, len(slices), func(ctx context.Context, i int) error {
		it := db.s.Query(q, slices[i][0], slices[i][1]).PageSize(2000).IterContext(ctx)
		each(it)
		if err := it.Close(); err != nil {
			return fmt.Errorf("cassandra: scan %s: %w", table, err)
		}
		return nil
	})
}

// count counts the rows of table with one COUNT(*) per token range, in
// parallel: a single COUNT(*) over a large table would outlive the read
// timeout.
func (db *DB) count(ctx context.Context, table, pk string) (int64, error) {
	slices := tokenSlices(scanSlices)
	var mu sync.Mutex
	var total int64
	q := fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE token(%s) > ? AND token(%s) <= ?", db.t(table), pk, pk)
	err := db.parallel(ctx, len(slices), func(ctx context.Context, i int) error {
		var n int64
		if err := db.s.Query(q, slices[i][0], slices[i][1]).ScanContext(ctx, &n); err != nil {
			return fmt.Errorf("cassandra: count %s: %w", table, err)
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return nil
	})
	return total, err
}
