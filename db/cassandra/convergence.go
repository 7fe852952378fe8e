package cassandra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
)

func init() { convergence.Register(Name, openCassandra) }

// cassProber writes through the first running node and reads each other
// node through a driver session that knows that node alone (a host
// whitelist, no token awareness, no peer hosts): the node is the read's
// coordinator. Cassandra has no way to read one node's own copy: at
// consistency ONE the coordinator asks the replica its snitch ranks first,
// which need not be itself even when it is a replica. The probe's table
// turns off speculative retry so that a read goes to one replica only;
// which replica that was can be checked with tracing (readSources). See
// docs/convergence.md.
type cassProber struct {
	writer      string
	names       []string
	admin       *gocql.Session
	sessions    map[string]*gocql.Session
	hosts       map[string]string // node name -> host address
	ks          string
	write, read gocql.Consistency
	settings    map[string]string
}

var cassIdent = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

func cassSession(hosts []string, port int, pinned bool, timeout time.Duration) (*gocql.Session, error) {
	cfg := gocql.NewCluster(hosts...)
	cfg.Port = port
	if pinned {
		cfg.HostFilter = gocql.WhiteListHostFilter(hosts...)
	}
	cfg.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	cfg.Timeout, cfg.ConnectTimeout = timeout, 10*time.Second
	cfg.NumConns = 1
	cfg.ProtoVersion = 4
	cfg.MaxWaitSchemaAgreement = 2 * time.Minute
	cfg.Logger = gocql.NewLogger(gocql.LogLevelNone)
	cfg.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 3, Interval: time.Second}
	return cfg.CreateSession()
}

func parseConsistency(what, v string) (gocql.Consistency, error) {
	if v == "" {
		return gocql.One, nil
	}
	c, err := gocql.ParseConsistencyWrapper(strings.ToUpper(v))
	if err != nil {
		return 0, fmt.Errorf("convergence: cassandra %s consistency %q: %w", what, v, err)
	}
	return c, nil
}

func openCassandra(ctx context.Context, c *cluster.Cluster, opts convergence.Options) (_ convergence.Prober, err error) {
	nodes, err := convergence.Running(c)
	if err != nil {
		return nil, err
	}
	wc, err := parseConsistency("write", opts.CassandraWrite)
	if err != nil {
		return nil, err
	}
	rc, err := parseConsistency("read", opts.CassandraRead)
	if err != nil {
		return nil, err
	}
	rf := opts.CassandraRF
	if rf == 0 {
		rf = min(len(nodes), 3)
	}
	if rf < 1 {
		return nil, fmt.Errorf("convergence: cassandra: replication factor %d", rf)
	}
	ks := opts.CassandraKeyspace
	if ks == "" {
		ks = convergence.Table
	}
	if !cassIdent.MatchString(ks) {
		return nil, fmt.Errorf("convergence: cassandra: keyspace %q: want lower-case letters, digits and _", ks)
	}
	p := &cassProber{writer: nodes[0].Name, sessions: map[string]*gocql.Session{}, hosts: map[string]string{},
		ks: ks, write: wc, read: rc, settings: map[string]string{"engine": "cassandra"}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	var all []string
	for _, n := range nodes {
		all = append(all, n.Host)
		p.hosts[n.Name] = n.Host
	}
	port := nodes[0].Port
	if p.admin, err = cassSession(all, port, false, 30*time.Second); err != nil {
		return nil, fmt.Errorf("convergence: cassandra: connect to %v: %w", all, err)
	}
	ddl := func(stmt string) error {
		if err := p.admin.Query(stmt).Consistency(gocql.All).ExecContext(ctx); err != nil {
			return fmt.Errorf("convergence: cassandra: %s: %w", stmt, err)
		}
		if err := p.admin.AwaitSchemaAgreement(ctx); err != nil {
			return fmt.Errorf("convergence: cassandra: schema agreement after %q: %w", stmt, err)
		}
		return nil
	}
	// A fresh keyspace each time, so that its RF is the one asked for.
	for _, stmt := range []string{
		"DROP KEYSPACE IF EXISTS " + ks,
		fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}", ks, rf),
		"CREATE TABLE " + ks + ".kv (k text PRIMARY KEY, v text) WITH speculative_retry = 'NONE'",
	} {
		if err := ddl(stmt); err != nil {
			return nil, err
		}
	}
	for _, n := range nodes {
		s, err := cassSession([]string{n.Host}, n.Port, true, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("convergence: cassandra %s: %w", n.Name, err)
		}
		p.sessions[n.Name] = s
		p.names = append(p.names, n.Name)
	}
	// Each pinned session must see the new table (its node's schema).
	for _, n := range p.names {
		s := p.sessions[n]
		if err := convergence.WaitAll(ctx, 30*time.Second, "table "+ks+".kv on "+n, func(ctx context.Context) error {
			var k string
			err := s.Query("SELECT k FROM "+ks+".kv LIMIT 1").Consistency(gocql.One).ScanContext(ctx, &k)
			if errors.Is(err, gocql.ErrNotFound) {
				return nil
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	p.settings["write_consistency"] = wc.String()
	p.settings["read_consistency"] = rc.String()
	p.settings["replication_factor"] = strconv.Itoa(rf)
	p.settings["keyspace"] = ks + " (SimpleStrategy)"
	p.settings["nodes"] = strconv.Itoa(len(nodes))
	p.settings["writer"] = p.writer
	p.settings["read"] = "a session pinned to each node (host whitelist, round robin, no token awareness): the node coordinates; the replica it reads is its snitch's choice"
	p.settings["speculative_retry"] = "NONE (probe table)"
	p.settings["snitch"] = "SimpleSnitch wrapped by the dynamic snitch (engine default)"
	var v string
	if err := p.admin.Query("SELECT release_version FROM system.local").ScanContext(ctx, &v); err == nil {
		p.settings["version"] = v
	}
	return p, nil
}

func (p *cassProber) Nodes() []string             { return p.names }
func (p *cassProber) Settings() map[string]string { return p.settings }

func (p *cassProber) Write(ctx context.Context, key, value string) (string, error) {
	err := p.sessions[p.writer].Query("INSERT INTO "+p.ks+".kv (k, v) VALUES (?, ?)", key, value).
		Consistency(p.write).ExecContext(ctx)
	if err != nil {
		return p.writer, fmt.Errorf("convergence: cassandra write through %s at %s: %w", p.writer, p.write, err)
	}
	return p.writer, nil
}

func (p *cassProber) Read(ctx context.Context, node, key string) (string, bool, error) {
	s, ok := p.sessions[node]
	if !ok {
		return "", false, fmt.Errorf("convergence: cassandra: no node %q", node)
	}
	var v string
	err := s.Query("SELECT v FROM "+p.ks+".kv WHERE k = ?", key).Consistency(p.read).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("convergence: cassandra read through %s at %s: %w", node, p.read, err)
	}
	return v, true, nil
}

// traceIDs collects the trace session ids of traced queries.
type traceIDs struct {
	mu  sync.Mutex
	ids [][]byte
}

func (t *traceIDs) Trace(id []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ids = append(t.ids, id)
}

// readSources reads key through node with tracing on and returns the
// addresses of the nodes that read their local data for it (trace events
// "Executing single-partition query"): which replica a read "on node"
// actually consulted. Traces are written asynchronously, so it waits for
// the events a little.
func (p *cassProber) readSources(ctx context.Context, node, key string) ([]string, error) {
	s, ok := p.sessions[node]
	if !ok {
		return nil, fmt.Errorf("convergence: cassandra: no node %q", node)
	}
	tr := &traceIDs{}
	var v string
	err := s.Query("SELECT v FROM "+p.ks+".kv WHERE k = ?", key).Consistency(p.read).Trace(tr).ScanContext(ctx, &v)
	if err != nil && !errors.Is(err, gocql.ErrNotFound) {
		return nil, err
	}
	if len(tr.ids) == 0 {
		return nil, errors.New("convergence: cassandra: no trace id")
	}
	// The driver traces the statement's PREPARE too: look at every trace.
	var ids []gocql.UUID
	for _, b := range tr.ids {
		id, err := gocql.UUIDFromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("convergence: cassandra: trace id: %w", err)
		}
		ids = append(ids, id)
	}
	var srcs, activities []string
	err = convergence.WaitAll(ctx, 10*time.Second, "trace events", func(ctx context.Context) error {
		srcs, activities = srcs[:0], activities[:0]
		seen := map[string]bool{}
		for _, id := range ids {
			iter := p.admin.Query("SELECT activity, source FROM system_traces.events WHERE session_id = ?", id).
				Consistency(gocql.One).IterContext(ctx)
			var activity string
			var source net.IP
			for iter.Scan(&activity, &source) {
				activities = append(activities, activity+" @"+source.String())
				if localRead(activity) && !seen[source.String()] {
					seen[source.String()] = true
					srcs = append(srcs, source.String())
				}
			}
			if err := iter.Close(); err != nil {
				return err
			}
		}
		if len(srcs) == 0 {
			return fmt.Errorf("no local read among %d trace events %q", len(activities), activities)
		}
		return nil
	})
	return srcs, err
}

// localRead tells the trace events of a node reading its own copy of a
// partition (memtables and sstables).
func localRead(activity string) bool {
	for _, a := range []string{"Executing single-partition query", "Merged data from memtables", "Merging memtable contents", "live rows and"} {
		if strings.Contains(activity, a) {
			return true
		}
	}
	return false
}

// Close closes the sessions; the keyspace stays until the next Open.
func (p *cassProber) Close() error {
	for _, s := range p.sessions {
		s.Close()
	}
	if p.admin != nil {
		p.admin.Close()
	}
	return nil
}
