package cluster

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// cassandraUp starts a Cassandra cluster for one test and tears it down
// whatever happens. Without java or mvn the test fails (skips under
// -short). The jars are fetched once into the user's cache.
func cassandraUp(t *testing.T, opts Options) (cassandraEngine, *Cluster) {
	t.Helper()
	e := cassandraEngine{}
	if err := e.Check(); err != nil {
		if testing.Short() {
			t.Skipf("cassandra cannot run (scripts/install-servers.sh): %v", err)
		}
		t.Fatalf("cassandra cannot run: run scripts/install-servers.sh: %v", err)
	}
	dir, err := os.MkdirTemp("", "fb-cassandra-*")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // includes a first jar fetch
	defer cancel()
	start := time.Now()
	c, err := e.Up(ctx, dir, opts)
	t.Logf("Up of %d node(s) took %v", opts.Nodes, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if c != nil {
			dctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			if err := e.Down(dctx, c); err != nil {
				t.Errorf("Down: %v", err)
			}
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("cluster directory kept: %s", dir)
		}
	})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	return e, c
}

func cassStatus(t *testing.T, e cassandraEngine, c *Cluster) []NodeStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return st
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

func TestPomFor(t *testing.T) {
	pom, err := pomFor([]string{"org.apache.cassandra:cassandra-all:5.0.9", "a.b:c:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>5.0.9</version>", "<artifactId>c</artifactId>"} {
		if !strings.Contains(pom, want) {
			t.Errorf("pom lacks %q:\n%s", want, pom)
		}
	}
	pom, err = pomFor([]string{"org.apache.hbase:hbase-rest:2.6.1;exclude=org.apache.hbase:*,org.apache.hadoop:*"})
	if err != nil || !strings.Contains(pom, "<exclusion><groupId>org.apache.hbase</groupId><artifactId>*</artifactId></exclusion><exclusion><groupId>org.apache.hadoop</groupId>") {
		t.Errorf("exclusions: %v\n%s", err, pom)
	}
	for _, bad := range []string{"a:b", "a:b:c:d", "a::1", "a:b:<x>", "a:b:1;exclude=nocolon", "a:b:1;exclude=:x"} {
		if _, err := pomFor([]string{bad}); err == nil {
			t.Errorf("pomFor(%q) accepted", bad)
		}
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
		{7, nil, 0, "", true},
		{1, map[string]string{"heap": "lots"}, 0, "", true},
		{1, map[string]string{"version": "4.1.5"}, 0, "", true},
		{1, map[string]string{"nope": "1"}, 0, "", true},
	}
	for _, tt := range tests {
		got, err := parseCassOpts(Options{Nodes: tt.nodes, Extra: tt.extra})
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
	e, c := cassandraUp(t, Options{Nodes: 1})
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
	if Alive(pid) {
		t.Fatal("server alive after Down")
	}
	if st := cassStatus(t, e, c); st[0].State != "stopped" {
		t.Fatalf("status after Down: %+v", st)
	}
}

// TestCassandraThreeNodes starts three nodes on 127.0.0.1-3: all up and
// NORMAL, ownership adds up to 100 %, a QUORUM write with RF 3 is read back
// at QUORUM, and still with one node killed; the killed node restarts.
func TestCassandraThreeNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3 JVMs: not under -short")
	}
	e, c := cassandraUp(t, Options{Nodes: 3})
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
	cfg := gocql.NewCluster(c.Nodes[0].Host, c.Nodes[1].Host, c.Nodes[2].Host)
	cfg.Port = c.Nodes[0].Port
	cfg.Consistency = gocql.Quorum
	cfg.Timeout = 10 * time.Second
	cfg.Logger = gocql.NewLogger(gocql.LogLevelNone)
	// A request sent to the node just killed fails on its connection:
	// retry it on another node, as a client of a cluster would.
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 3}
	s, err := cfg.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, q := range []string{
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE k.t (id int PRIMARY KEY, v text)",
		"INSERT INTO k.t (id, v) VALUES (1, 'one')",
	} {
		if err := s.Query(q).WithContext(ctx).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	read := func() string {
		var v string
		if err := s.Query("SELECT v FROM k.t WHERE id = 1").WithContext(ctx).Idempotent(true).Scan(&v); err != nil {
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
