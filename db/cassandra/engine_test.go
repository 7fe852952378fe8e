package cassandra

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

func cassStatus(t *testing.T, e cassandraEngine, c *cluster.Cluster) []cluster.NodeStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return st
}

// upCassandra starts a cluster for the test alone
// (clustertest.OwnCluster) and returns the engine as its own type, for
// its methods beyond cluster.Engine's (Moving, Remove).
func upCassandra(t *testing.T, opts cluster.Options, timeout time.Duration) (cassandraEngine, *cluster.Cluster) {
	t.Helper()
	e, c := clustertest.OwnCluster(t, Name, opts, timeout)
	ce, ok := e.(cassandraEngine)
	if !ok {
		t.Fatalf("engine %s is a %T, not a cassandraEngine", Name, e)
	}
	return ce, c
}

// rssMB is a process's resident set in MB (0 when unknown).
func rssMB(pid int) int {
	out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0
	}
	kb, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return kb / 1024
}

func TestOwnership(t *testing.T) {
	const q = math.MaxInt64/2 + 1 // a quarter of the ring
	tests := []struct {
		name   string
		tokens map[string][]int64
		want   map[string]float64
	}{
		{"empty", map[string][]int64{}, map[string]float64{}},
		{"one token owns all", map[string][]int64{"a": {42}}, map[string]float64{"a": 1}},
		{"two halves", map[string][]int64{"a": {0}, "b": {math.MinInt64}}, map[string]float64{"a": 0.5, "b": 0.5}},
		{"quarters wrap", map[string][]int64{"a": {-q, q}, "b": {0, math.MinInt64}}, map[string]float64{"a": 0.5, "b": 0.5}},
		{"three to one", map[string][]int64{"a": {-q, 0, q}, "b": {math.MinInt64}}, map[string]float64{"a": 0.75, "b": 0.25}},
		{"node without tokens", map[string][]int64{"a": {5, 7}, "b": nil}, map[string]float64{"a": 1, "b": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ownership(tt.tokens)
			if len(got) != len(tt.want) {
				t.Fatalf("Ownership = %v, want %v", got, tt.want)
			}
			for a, w := range tt.want {
				if math.Abs(got[a]-w) > 1e-9 {
					t.Errorf("%s owns %v, want %v", a, got[a], w)
				}
			}
		})
	}
}

func TestParseCassOpts(t *testing.T) {
	tests := []struct {
		nodes   int
		extra   map[string]string
		rf      int
		cl      string
		wantErr bool
	}{
		{1, nil, 1, "ONE", false},
		{3, nil, 3, "QUORUM", false},
		{5, map[string]string{"rf": "4", "consistency": "one"}, 4, "ONE", false},
		{3, map[string]string{"rf": "nodes", "consistency": "quorum"}, 0, "QUORUM", false},
		{1, map[string]string{"rf": "all"}, 0, "", true},
		{1, map[string]string{"rf": "0"}, 0, "", true},
		{7, nil, 0, "", true},
		{1, map[string]string{"heap": "lots"}, 0, "", true},
		{1, map[string]string{"version": "4.1.5"}, 0, "", true},
		{1, map[string]string{"nope": "1"}, 0, "", true},
		{1, map[string]string{"request_timeout": "10s"}, 1, "ONE", false},
		{1, map[string]string{"request_timeout": "soon"}, 0, "", true},
		{4, map[string]string{"dcs": "2"}, 2, "LOCAL_QUORUM", false},
		{6, map[string]string{"dcs": "2", "consistency": "each_quorum"}, 3, "EACH_QUORUM", false},
		{4, map[string]string{"dcs": "2", "rf": "nodes"}, 0, "", true},
		{1, map[string]string{"dcs": "2"}, 0, "", true},
		{2, map[string]string{"dcs": "0"}, 0, "", true},
		{3, map[string]string{"replicas": "shuffle"}, 3, "QUORUM", false},
		{3, map[string]string{"replicas": "random"}, 0, "", true},
	}
	for _, tt := range tests {
		got, err := parseCassOpts(cluster.Options{Nodes: tt.nodes, Extra: tt.extra})
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCassOpts(%d, %v) error %v, want error %v", tt.nodes, tt.extra, err, tt.wantErr)
			continue
		}
		if err == nil && (got.rf != tt.rf || got.consistency != tt.cl) {
			t.Errorf("parseCassOpts(%d, %v) = rf %d cl %s, want %d %s", tt.nodes, tt.extra, got.rf, got.consistency, tt.rf, tt.cl)
		}
	}
}

func TestCassandraOneNode(t *testing.T) {
	t.Parallel()
	e, c := upCassandra(t, cluster.Options{Nodes: 1}, 10*time.Minute) // a first jar fetch included
	if len(c.Nodes) != 1 || !strings.HasPrefix(c.DSN, "cassandra://127.0.0.1:") || !strings.Contains(c.DSN, "rf=1") {
		t.Fatalf("cluster %+v dsn %q", c.Nodes, c.DSN)
	}
	t.Logf("RSS of %s: %d MB", c.Nodes[0].Name, rssMB(c.Nodes[0].PID))
	st := cassStatus(t, e, c)
	if len(st) != 1 || st[0].State != "up" || st[0].Detail["gossip"] != "NORMAL" ||
		st[0].Detail["tokens"] != "16" || ownsPercent(st[0].Detail["owns"]) != 100 ||
		!strings.HasPrefix(st[0].Detail["version"], "5.0") {
		t.Fatalf("status %+v", st)
	}
	// NodeTool from the cached jars through the node's JMX port (what
	// Remove runs), Moving on a settled node, and Remove of the only node.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := nodetool(ctx, c, c.Nodes[0], "status"); err != nil || !strings.Contains(out, "UN  127.0.0.1") {
		t.Errorf("nodetool status: %v\n%s", err, out)
	}
	if moving, detail, err := e.Moving(ctx, c); err != nil || moving {
		t.Errorf("Moving on one settled node = %v %q %v", moving, detail, err)
	}
	if err := e.Remove(ctx, c, "cass1"); err == nil || !strings.Contains(err.Error(), "only running node") {
		t.Errorf("Remove of the only node: %v", err)
	}
	// The node's disk use as the node itself reports it (an external
	// cluster's "disk" probe): a whole number of MiB, at least one (a
	// fresh node has flushed its system tables), and no CPU or memory
	// figure, which Cassandra does not report through CQL.
	res, err := cassResources(ctx, c)
	r, ok := res["cass1"]
	if err != nil || len(res) != 1 || !ok || r.DiskBytes < 1<<20 || r.DiskBytes > 10<<30 || math.Mod(r.DiskBytes, 1<<20) != 0 ||
		!math.IsNaN(r.CPUSeconds) || !math.IsNaN(r.RSSBytes) {
		t.Errorf("cassResources = %+v, %v; want cass1 with disk in whole MiB, 1 MiB to 10 GiB, CPU and RSS NaN", res, err)
	}
	t.Logf("system_views.disk_usage on cass1: %.0f MiB", r.DiskBytes/(1<<20))
	conf, err := os.ReadFile(c.Nodes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listen_address: 127.0.0.1\n", "rpc_address: 127.0.0.1\n", "num_tokens: 16\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	pid := c.Nodes[0].PID
	start := time.Now()
	if err := e.Down(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Logf("Down took %v", time.Since(start).Round(time.Millisecond))
	if cluster.Alive(pid) {
		t.Fatal("server alive after Down")
	}
	if st := cassStatus(t, e, c); st[0].State != "stopped" {
		t.Fatalf("status after Down: %+v", st)
	}
	if res, err := cassResources(ctx, c); err != nil || len(res) != 0 {
		t.Errorf("cassResources after Down = %+v, %v; want no figure for a stopped node", res, err)
	}
}

// TestCassandraThreeNodes starts three nodes on 127.0.0.1-3 and shares
// them between two steps run in order (one cluster: each JVM takes ~10 s
// to start and ~1 GB): the QUORUM kill/restart step, then the join and
// decommission step. About 2-3 minutes on the 2-core machine.
func TestCassandraThreeNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3-4 JVMs: not under -short")
	}
	e, c := upCassandra(t, cluster.Options{Nodes: 3}, 10*time.Minute) // a first jar fetch included
	if !t.Run("quorum kill restart", func(t *testing.T) { cassQuorumKillRestart(t, e, c) }) {
		return
	}
	t.Run("join and decommission", func(t *testing.T) { cassJoinDecommission(t, e, c) })
}

// cassQuorumKillRestart: all three up and NORMAL, ownership adds up to
// 100 %, a QUORUM write with RF 3 is read back at QUORUM, and still with
// one node killed; the killed node restarts.
func cassQuorumKillRestart(t *testing.T, e cassandraEngine, c *cluster.Cluster) {
	for i, n := range c.Nodes {
		if n.Host != cassandraHost(i+1) {
			t.Errorf("node %d on %s", i, n.Host)
		}
		t.Logf("RSS of %s: %d MB", n.Name, rssMB(n.PID))
	}
	st := cassStatus(t, e, c)
	var total float64
	for _, s := range st {
		if s.State != "up" || s.Detail["gossip"] != "NORMAL" {
			t.Errorf("%s: %+v", s.Name, s)
		}
		total += ownsPercent(s.Detail["owns"])
	}
	if math.Abs(total-100) > 0.3 {
		t.Errorf("ownership sums to %.2f%%: %+v", total, st)
	}
	s := dialCluster(t, c, gocql.Quorum)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, q := range []string{
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE k.t (id int PRIMARY KEY, v text)",
		"INSERT INTO k.t (id, v) VALUES (1, 'one')",
	} {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	read := func() string {
		var v string
		if err := s.Query("SELECT v FROM k.t WHERE id = 1").Idempotent(true).ScanContext(ctx, &v); err != nil {
			t.Fatalf("read at QUORUM: %v", err)
		}
		return v
	}
	if v := read(); v != "one" {
		t.Fatalf("read %q", v)
	}
	if err := e.Kill(ctx, c, "cass3"); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != "one" {
		t.Fatalf("read with a node down: %q", v)
	}
	start := time.Now()
	if err := e.Restart(ctx, c, "cass3"); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart after kill took %v", time.Since(start).Round(time.Millisecond))
	if st := cassStatus(t, e, c); st[2].State != "up" {
		t.Errorf("cass3 after restart: %+v", st[2])
	}
}

// cassJoinDecommission writes rows at RF 2, adds a fourth node while
// polling Moving every 500 ms (the node must be seen joining or end up
// joined), waits for the data to stop moving, decommissions cass2 (seen
// leaving), and reads every row back at ONE from the three nodes left;
// status shows three nodes up and cass2 removed, and Restart refuses it.
func cassJoinDecommission(t *testing.T, e cassandraEngine, c *cluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if moving, detail, err := e.Moving(ctx, c); err != nil || moving {
		t.Fatalf("Moving on a settled cluster = %v %q %v", moving, detail, err)
	}
	const rows = 2000
	s := dialCluster(t, c, gocql.Quorum)
	for _, q := range []string{
		"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE TABLE k2.t (id int PRIMARY KEY, v text)",
	} {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := 0; i < rows; i++ {
		if err := s.Query("INSERT INTO k2.t (id, v) VALUES (?, ?)", i, strings.Repeat("x", 100)).ExecContext(ctx); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	s.Close()

	// watch polls Moving until stop is closed and says what it saw. It
	// asks a copy of c: Add and Remove change c while it runs.
	watch := func(stop <-chan struct{}) <-chan []string {
		snap := *c
		snap.Nodes = nil
		for _, n := range c.Nodes {
			cp := *n
			snap.Nodes = append(snap.Nodes, &cp)
		}
		out := make(chan []string, 1)
		go func() {
			var seen []string
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				moving, detail, err := e.Moving(ctx, &snap)
				switch {
				case err != nil:
					seen = append(seen, "error: "+err.Error())
				case moving:
					seen = append(seen, detail)
				}
				select {
				case <-stop:
					out <- seen
					return
				case <-tick.C:
				}
			}
		}()
		return out
	}
	stop := make(chan struct{})
	seenCh := watch(stop)
	start := time.Now()
	n4, err := e.Add(ctx, c)
	close(stop)
	seen := <-seenCh
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	t.Logf("join of %s took %v; Moving said: %s", n4.Name, time.Since(start).Round(time.Millisecond), firstLast(seen))
	st := cassStatus(t, e, c)
	if len(st) != 4 || st[3].State != "up" || st[3].Detail["gossip"] != "NORMAL" {
		t.Fatalf("after the join: %+v", st)
	}
	checkNoMovingErrors(t, seen)
	if len(movesOnly(seen)) == 0 {
		t.Logf("Moving never saw the join (it was quicker than a poll); the node ended joined")
	} else if moves := strings.Join(movesOnly(seen), "\n"); !strings.Contains(moves, n4.Host+" BOOT") && !strings.Contains(moves, " streaming ") {
		t.Errorf("Moving during the join said %q: want %s BOOT or a stream", seen, n4.Host)
	}
	settled := time.Now()
	for {
		moving, detail, err := e.Moving(ctx, c)
		if err == nil && !moving {
			break
		}
		if ctx.Err() != nil || time.Since(settled) > time.Minute {
			t.Fatalf("still moving a minute after the join: %q %v", detail, err)
		}
		time.Sleep(500 * time.Millisecond)
	}

	stop = make(chan struct{})
	leaving := watch(stop)
	start = time.Now()
	err = e.Remove(ctx, c, "cass2")
	close(stop)
	seen = <-leaving
	if err != nil {
		t.Fatalf("Remove: %v", err)
	}
	t.Logf("decommission of cass2 took %v; Moving said: %s", time.Since(start).Round(time.Millisecond), firstLast(seen))
	checkNoMovingErrors(t, seen)
	if moves := strings.Join(movesOnly(seen), "\n"); moves != "" && !strings.Contains(moves, "127.0.0.2 LEAVING") && !strings.Contains(moves, " streaming ") {
		t.Errorf("Moving during the decommission said %q: want 127.0.0.2 LEAVING or a stream", seen)
	}
	if strings.Contains(c.DSN, "127.0.0.2:") {
		t.Errorf("DSN still lists the removed node: %s", c.DSN)
	}
	st = cassStatus(t, e, c)
	up := 0
	for _, s := range st {
		switch {
		case s.Name == "cass2" && s.State != "removed":
			t.Errorf("cass2 after Remove: %+v", s)
		case s.Name != "cass2" && s.State == "up":
			up++
		}
	}
	if up != 3 {
		t.Errorf("%d nodes up after the decommission, want 3: %+v", up, st)
	}
	s = dialCluster(t, c, gocql.One)
	defer s.Close()
	var n int
	it := s.Query("SELECT id FROM k2.t").PageSize(500).IterContext(ctx)
	for it.Scan(new(int)) {
		n++
	}
	if err := it.Close(); err != nil || n != rows {
		t.Fatalf("read %d of %d rows at ONE after the decommission: %v", n, rows, err)
	}
	for _, id := range []int{0, rows / 2, rows - 1} {
		var v string
		if err := s.Query("SELECT v FROM k2.t WHERE id = ?", id).ScanContext(ctx, &v); err != nil || len(v) != 100 {
			t.Errorf("row %d at ONE: %q %v", id, v, err)
		}
	}
	if err := e.Restart(ctx, c, "cass2"); err == nil || !strings.Contains(err.Error(), "decommissioned") {
		t.Errorf("Restart of a decommissioned node: %v", err)
	}
	if err := e.Remove(ctx, c, "cass2"); err == nil {
		t.Error("a second Remove of cass2 succeeded")
	}
}

// dialCluster connects to the nodes of the cluster's DSN (those running and
// not decommissioned). A request sent to a node just killed fails on its
// connection: the session retries it on another node, as a client of a
// cluster would.
func dialCluster(t *testing.T, c *cluster.Cluster, cl gocql.Consistency) *gocql.Session {
	t.Helper()
	var hosts []string
	for _, n := range c.Nodes {
		if !cassRemoved(n) && !n.Stopped {
			hosts = append(hosts, n.Host)
		}
	}
	cfg := gocql.NewCluster(hosts...)
	cfg.Port = c.Nodes[0].Port
	cfg.Consistency = cl
	cfg.Timeout = 30 * time.Second // DDL on a loaded 2-core machine
	cfg.Logger = gocql.NewLogger(gocql.LogLevelNone)
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 3}
	s, err := cfg.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkNoMovingErrors fails when every poll of Moving failed: a node may
// not answer for a moment (a JVM busy streaming), but gossip and streaming
// must be readable from some node.
func checkNoMovingErrors(t *testing.T, seen []string) {
	t.Helper()
	errs := 0
	for _, s := range seen {
		if strings.HasPrefix(s, "error: ") {
			errs++
		}
	}
	if errs > 0 {
		t.Logf("%d polls of Moving failed, e.g. %s", errs, seen[slices.IndexFunc(seen, func(s string) bool { return strings.HasPrefix(s, "error: ") })])
	}
	if errs > 0 && errs == len(seen) {
		t.Errorf("every poll of Moving failed")
	}
}

// movesOnly drops the failed polls.
func movesOnly(seen []string) []string {
	return slices.DeleteFunc(slices.Clone(seen), func(s string) bool { return strings.HasPrefix(s, "error: ") })
}

// firstLast shortens a list of Moving details for the log.
func firstLast(seen []string) string {
	switch len(seen) {
	case 0:
		return "nothing moving at any poll"
	case 1:
		return "1 poll moving: " + seen[0]
	}
	return fmt.Sprintf("%d polls moving, first %q, last %q", len(seen), seen[0], seen[len(seen)-1])
}

func TestReseed(t *testing.T) {
	dir := t.TempDir()
	c := &cluster.Cluster{Options: map[string]string{"storage_port": "7000"}}
	for i := 1; i <= 3; i++ {
		n := &cluster.Node{Name: fmt.Sprintf("cass%d", i), Host: cassandraHost(i), Config: filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))}
		seed := cassandraSeed(c, n)
		if err := os.WriteFile(n.Config, []byte("seed_provider:\n  - class_name: x\n    parameters:\n      - seeds: \""+seed+":7000\"\nlisten_address: "+n.Host+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	c.Nodes[0].Role = cluster.RoleDecommissioned
	if err := reseed(c); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ node, seed string }{{"c2", "127.0.0.3"}, {"c3", "127.0.0.2"}} {
		b, err := os.ReadFile(filepath.Join(dir, tt.node+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `- seeds: "`+tt.seed+`:7000"`) {
			t.Errorf("%s after reseed:\n%s", tt.node, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c1.yaml")); !strings.Contains(string(b), `- seeds: "127.0.0.1:7000"`) {
		t.Errorf("the removed node's own config was rewritten:\n%s", b)
	}
}

// TestCassandraDSNRF checks the DSN's rf: the option's number as given,
// and with rf: nodes the count of nodes still in the ring (a decommissioned
// node no longer holds a replica).
// TestCassandraNodeDC: with dcs, nodes go round robin into the data
// centres (so a join keeps them even), each with the snitch that reads
// its data centre; with one, no data centre and SimpleSnitch.
func TestCassandraNodeDC(t *testing.T) {
	for _, tt := range []struct {
		dcs    string
		want   []string
		snitch string
	}{
		{"", []string{"", "", ""}, "SimpleSnitch"},
		{"2", []string{"dc1", "dc2", "dc1", "dc2", "dc1"}, "GossipingPropertyFileSnitch"},
		{"3", []string{"dc1", "dc2", "dc3", "dc1"}, "GossipingPropertyFileSnitch"},
	} {
		c := &cluster.Cluster{Options: map[string]string{"dcs": tt.dcs}}
		for i, want := range tt.want {
			n := &cluster.Node{DC: cassNodeDC(c, i+1)}
			if n.DC != want || cassSnitch(n) != tt.snitch {
				t.Errorf("dcs %q node %d: dc %q snitch %s, want %q %s", tt.dcs, i+1, n.DC, cassSnitch(n), want, tt.snitch)
			}
		}
	}
}

func TestCassandraDSNRF(t *testing.T) {
	node := func(i int, role string) *cluster.Node {
		return &cluster.Node{Name: fmt.Sprintf("cass%d", i), Host: cassandraHost(i), Port: 9042, Role: role}
	}
	tests := []struct {
		rf    string
		nodes []*cluster.Node
		want  string
	}{
		{"2", []*cluster.Node{node(1, ""), node(2, ""), node(3, "")}, "rf=2"},
		{"nodes", []*cluster.Node{node(1, "")}, "rf=1"},
		{"nodes", []*cluster.Node{node(1, ""), node(2, ""), node(3, "")}, "rf=3"},
		{"nodes", []*cluster.Node{node(1, ""), node(2, cluster.RoleDecommissioned), node(3, "")}, "rf=2"},
		{"2/2", []*cluster.Node{node(1, ""), node(2, ""), node(3, ""), node(4, "")}, "rf=dc1:2,dc2:2&dc=dc1"},
		{"3//shuffle", []*cluster.Node{node(1, ""), node(2, ""), node(3, "")}, "rf=3&replicas=shuffle"},
	}
	for _, tt := range tests {
		parts := strings.SplitN(tt.rf+"//", "/", 4)
		rf, dcs, replicas := parts[0], parts[1], parts[2]
		c := &cluster.Cluster{Nodes: tt.nodes, Options: map[string]string{"rf": rf, "consistency": "QUORUM", "dcs": dcs, "replicas": replicas}}
		if got := cassandraDSN(c); !strings.HasSuffix(got, "?consistency=QUORUM&"+tt.want) {
			t.Errorf("rf %s with %d node(s): DSN %q, want it to end in %s", tt.rf, len(tt.nodes), got, tt.want)
		}
	}
}
