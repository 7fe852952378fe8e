package cli_test

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/result"
)

// localRedis starts a Redis Cluster with the CLI for a test to treat as
// external, and stops it when the test ends.
func localRedis(t *testing.T, args ...string) *cluster.Cluster {
	t.Helper()
	return localCluster(t, "redis", args...)
}

// localCluster starts a cluster of engine with the CLI for a test to treat
// as external, and stops it when the test ends.
func localCluster(t *testing.T, engine string, args ...string) *cluster.Cluster {
	t.Helper()
	dir := filepath.Join(t.TempDir(), engine)
	code, out, stderr := execute(context.Background(), append([]string{"cluster", "up", engine, "--dir", dir}, args...)...)
	if code != 0 {
		t.Fatalf("cluster up: exit %d\n%s\n%s", code, out, stderr)
	}
	t.Cleanup(func() {
		if code, _, stderr := execute(context.Background(), "cluster", "down", "--dir", dir); code != 0 {
			t.Errorf("cluster down: %s", stderr)
		}
	})
	cl, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// externalCluster writes the cluster part of a scenario that treats cl as
// external: its nodes as members, and commands (action: arguments of
// `fieldbench cluster`) that call the built binary on cl's directory.
func externalCluster(bin string, cl *cluster.Cluster, commands map[string]string) string {
	var b strings.Builder
	b.WriteString("cluster:\n  engine: external\n  database: " + cl.Engine + "\n  command_timeout: 3m\n  join_timeout: 3m\n  members:\n")
	for _, n := range cl.Nodes {
		b.WriteString("    - {name: " + n.Name + ", host: " + n.Host + ", port: " + strconv.Itoa(n.Port) + "}\n")
	}
	b.WriteString("  commands:\n")
	for _, a := range cluster.ExternalActions {
		if c, ok := commands[a]; ok {
			b.WriteString("    " + a + ": \"'" + bin + "' cluster " + c + " --dir '" + cl.Dir + "'\"\n")
		}
	}
	return b.String()
}

// checkExternalHeader: the run names the engine external and the server
// as the database answered its version query, and says which probes came
// from the database (Redis: CPU and RSS from INFO; Cassandra: disk use
// from system_views.disk_usage) and which were not available.
func checkExternalHeader(t *testing.T, run *result.Run, cl *cluster.Cluster) {
	t.Helper()
	ci := run.Header.Cluster
	if ci == nil || ci.Engine != "external" || ci.Database != cl.Engine || ci.Version == "" || ci.Version != cl.Version {
		t.Errorf("cluster in the result: %+v; want engine external, database %s, version %q", ci, cl.Engine, cl.Version)
	}
	fromDB, unavailable, source := "node-cpu, node-rss", "node-read, node-write, node-disk", "used_memory_rss"
	switch cl.Engine {
	case "cassandra":
		fromDB, unavailable, source = "node-disk", "node-cpu, node-rss, node-read, node-write", "system_views.disk_usage"
	case "hbase":
		fromDB, unavailable, source = "node-disk", "node-cpu, node-rss, node-read, node-write", "storefileSizeMB"
	}
	if run.Header.Options["probes_unavailable"] != unavailable || run.Header.Options["probes_from_database"] != fromDB {
		t.Errorf("probes recorded as %v / %v", run.Header.Options["probes_from_database"], run.Header.Options["probes_unavailable"])
	}
	if src, _ := run.Header.Options["probes_database_source"].(string); !strings.Contains(src, source) {
		t.Errorf("probes_database_source %q does not name %s", src, source)
	}
	if evs := eventsNamed(run, "probes"); len(evs) != 1 || !strings.Contains(evs[0].Detail, source) {
		t.Errorf("want one probes event naming %s and saying what was not available: %+v", source, run.Events)
	}
}

// externalCrash runs the crash experiment on cl through the external
// engine (more holds more cluster keys, indented as they are): a microblog
// run of duration whose second node is killed at kill and restarted at
// restart by the built `fieldbench cluster kill|restart`, then the audit.
// It checks what every database must give — one event per action, the
// restart's end, the header, audit figures that add up — and returns the
// run and the command's output.
//
// With stopAfter set, the load stops that long after the restart is done
// (duration then only bounds it): a JVM's restart takes 10 s on a quiet
// machine and a minute on a loaded one, and a fixed duration long enough
// for the second made the first wait.
func externalCrash(t *testing.T, bin string, cl *cluster.Cluster, more, duration, kill, restart, stopAfter string, limit time.Duration) (*result.Run, string) {
	t.Helper()
	victim := cl.Nodes[1].Name
	stop := ""
	if stopAfter != "" {
		stop = "  - {when: restarted, after: " + stopAfter + ", do: stop}\n"
	}
	runs, out := experimentRun(t, "name: ext-crash-"+cl.Engine+"\n"+externalCluster(bin, cl, map[string]string{"kill": "kill {name}", "restart": "restart {name}"})+more+
		"workload: {name: microblog, options: {users: 100, clients: 4, duration: "+duration+"}}\nprobe_every: 2s\ntimeline:\n"+
		"  - {at: "+kill+", do: kill, nodes: ["+victim+"]}\n  - {at: "+restart+", do: restart, nodes: ["+victim+"]}\n"+stop+"audit: true\n", limit)
	run := runs[0]
	for _, ev := range []string{"kill", "restart", "restart-done", "audit"} {
		if len(eventsNamed(run, ev)) != 1 {
			t.Errorf("want one %q event; events: %+v", ev, run.Events)
		}
	}
	checkExternalHeader(t, run, cl)
	x := run.Summary.Extra
	if acked := x["audit_acknowledged"]; acked == 0 || acked != x["audit_ok"]+x["audit_lost"]+x["audit_stale"] {
		t.Errorf("audit figures do not add up: %v", x)
	}
	return run, out
}

// TestExperimentExternalCrashRedis runs the crash experiment through the
// external engine: the kill and restart are commands (the built
// `fieldbench cluster kill/restart` on a Redis Cluster this test started),
// the restart is done when Redis answers again, probes come from INFO, and
// the audit reads back every acknowledged post. A command that fails ends
// the experiment with its exit code.
func TestExperimentExternalCrashRedis(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("builds fieldbench and starts Redis (install with scripts/install-servers.sh)")
	}
	bin := fieldbenchBin(t)
	cl := localRedis(t, "--nodes", "3", "--opt", "replicas=1", "--opt", "node-timeout=2000")
	victim := cl.Nodes[1].Name
	run, out := externalCrash(t, bin, cl, "", "18s", "5s", "10s", "", 4*time.Minute)
	cpu := map[string]bool{}
	for _, p := range run.Points {
		if p.Series == "node-cpu" {
			cpu[p.Labels["node"]] = true
		}
	}
	if len(cpu) < len(cl.Nodes)-1 {
		t.Errorf("CPU from INFO for %v, want the %d nodes", cpu, len(cl.Nodes))
	}
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(run.Dir), "cluster", cluster.CommandLog))
	if len(logs) != 1 {
		t.Fatalf("command log: %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(b), "cluster kill "+victim) || !strings.Contains(string(b), victim+": kill done") || strings.Count(string(b), "--- exit 0") != 2 {
		t.Errorf("command log:\n%s", b)
	}
	if html, err := os.ReadFile(filepath.Join(run.Dir, "report.html")); err != nil || !strings.Contains(string(html), "external (redis "+cl.Version+" as the database reports it)") {
		t.Errorf("the report does not name the engine and the server as Redis reported it (%v)", err)
	}
	if !strings.Contains(out, "microblog on redis "+cl.Version) {
		t.Errorf("the summary does not name the server as Redis reported it:\n%s", out)
	}

	// A command that fails: the experiment fails, naming the exit code.
	base := t.TempDir()
	path := filepath.Join(base, "fail.yaml")
	src := "name: ext-fail\n" + externalCluster(bin, cl, nil) + `    kill: sh -c "echo no such unit >&2; exit 3"
workload: {name: microblog, options: {users: 100, clients: 2, duration: 6s}}
probe_every: -1s
timeline:
  - {at: 1s, do: kill, nodes: [` + victim + `]}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, _, stderr := execute(ctx, "experiment", path, "--results", base)
	if code == 0 || !strings.Contains(stderr, "exited with code 3") || !strings.Contains(stderr, "no such unit") {
		t.Errorf("a failing kill command: exit %d\n%s", code, stderr)
	}
}

// TestExperimentExternalJoinRedis runs the join experiment through the
// external engine: the add command is the built `fieldbench cluster add`
// on a Redis Cluster this test started; the new node is found in CLUSTER
// NODES, data movement and ownership are what Redis reports.
func TestExperimentExternalJoinRedis(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("builds fieldbench and starts Redis (install with scripts/install-servers.sh)")
	}
	bin := fieldbenchBin(t)
	cl := localRedis(t, "--nodes", "2")
	runs, _ := experimentRun(t, "name: ext-join\n"+externalCluster(bin, cl, map[string]string{"add": "add"})+`
workload: {name: wiki, options: {articles: 500, requests: 2000, threads: 2}}
stability: {warmup_sets: 1, baseline_sets: 3, window: 2, max_sets: 150, after_stable: 2}
probe_every: 1s
timeline:
  - {when: baseline, do: add, count: 1}
`, 6*time.Minute)
	run := runs[0]
	for _, ev := range []string{"baseline", "join", "node-added", "joined", "data-settled"} {
		if len(eventsNamed(run, ev)) != 1 {
			t.Errorf("want one %q event; events: %+v", ev, run.Events)
		}
	}
	checkExternalHeader(t, run, cl)
	var first, last string
	owned := 0
	for _, p := range run.Points {
		switch p.Series {
		case "request-set":
			if first == "" {
				first = p.Labels["nodes"]
			}
			last = p.Labels["nodes"]
		case "ownership":
			owned++
		}
	}
	if first != "2" || last != "3" {
		t.Errorf("request sets ran on %s then %s nodes, want 2 then 3", first, last)
	}
	if owned != 3 {
		t.Errorf("ownership of %d nodes, want 3 (slots as Redis reports them)", owned)
	}
}

// TestExperimentExternalJoinHBase runs a join under microblog load through
// the external engine on HBase (a wiki elasticity run took 8.6 minutes
// here, over the CI budget): a master with one region server this test
// started, treated as a user's cluster whose only member is that region
// server (by the address HBase names it) and whose DSN names the REST
// gateway. The add command is the built `fieldbench cluster add`, which
// starts a region server at an address the scenario does not know: the
// new node is the one the master lists live that it did not list before.
// Version, membership, data movement (hbase:meta's region states, and the
// new server holding no region yet), ownership (regions per server) and
// each server's disk (its regions' store files) are all asked of the
// gateway.
func TestExperimentExternalJoinHBase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fieldbench and starts HBase (install with scripts/install-servers.sh)")
	}
	onlyLong(t, "about 2.5 min here, HBase started, then driven as an external cluster while a region server joins: the external engine is covered in CI with Redis and Cassandra")
	bin := fieldbenchBin(t)
	cl := localCluster(t, "hbase", "--nodes", "1", "--opt", "balancer-period=2000")
	eng, err := cluster.Get("hbase")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	sts, err := eng.Status(ctx, cl)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	var rs string
	for _, st := range sts {
		if strings.HasPrefix(st.Role, "regionserver") && st.State == "up" {
			rs = st.Addr
		}
	}
	host, port, err := net.SplitHostPort(rs)
	if err != nil {
		t.Fatalf("the in-process region server's address %q: %v (status %+v)", rs, err, sts)
	}
	runs, out := experimentRun(t, "name: ext-join-hbase\ncluster:\n  engine: external\n  database: hbase\n  dsn: "+cl.DSN+
		"\n  command_timeout: 3m\n  join_timeout: 3m\n  members:\n    - {name: rs1, host: "+host+", port: "+port+"}\n"+
		"  commands:\n    add: \"'"+bin+"' cluster add --dir '"+cl.Dir+"'\"\n"+`
workload: {name: microblog, options: {users: 100, clients: 2, duration: 90s}}
probe_every: 2s
timeline:
  - {at: 2s, do: add, count: 1}
`, 6*time.Minute)
	run := runs[0]
	for _, ev := range []string{"join", "node-added", "joined", "data-settled"} {
		if len(eventsNamed(run, ev)) != 1 {
			t.Errorf("want one %q event; events: %+v", ev, run.Events)
		}
	}
	checkExternalHeader(t, run, cl)
	owned, disk := 0, map[string]int{}
	for _, p := range run.Points {
		switch p.Series {
		case "ownership":
			owned++
		case "node-disk":
			disk[p.Labels["node"]]++
			if p.Y < 0 || math.Mod(p.Y, 1<<20) != 0 {
				t.Errorf("node-disk %.0f bytes: want whole MiB (storefileSizeMB)", p.Y)
			}
		}
	}
	if owned != 2 {
		t.Errorf("ownership of %d nodes, want 2 (regions per server as the master reports them)", owned)
	}
	if disk["rs1"] == 0 {
		t.Errorf("no node-disk point for rs1: %v", disk)
	}
	if !strings.Contains(out, "microblog on HBase "+cl.Version) {
		t.Errorf("the summary does not name the server as HBase reported it:\n%s", out)
	}
	for _, ev := range eventsNamed(run, "data-settled") {
		t.Logf("data-settled: %s", ev.Detail)
	}
}

// TestExperimentExternalCrashCassandra runs the crash experiment through
// the external engine on Cassandra: a 2-node cluster this test started,
// whose node is killed and restarted by commands (the built `fieldbench
// cluster kill/restart`, as ssh or kubectl would); membership and the
// restart's end come from Cassandra's own ring, the version from
// system.local, each node's disk use from its system_views.disk_usage,
// and the audit reads back every acknowledged post at the DSN's
// consistency.
func TestExperimentExternalCrashCassandra(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fieldbench and starts Cassandra (install with scripts/install-servers.sh)")
	}
	bin := fieldbenchBin(t)
	cl := localCluster(t, "cassandra", "--nodes", "2")
	victim := cl.Nodes[1].Name
	// QUORUM of 2 replicas is both: with one node down every post fails,
	// and what is acknowledged is on both nodes.
	dsn := strings.Replace(cl.DSN, "consistency=QUORUM", "consistency=ONE", 1)
	if dsn == cl.DSN {
		t.Fatalf("DSN %q has no consistency=QUORUM to set to ONE", cl.DSN)
	}
	run, out := externalCrash(t, bin, cl, "  dsn: \""+dsn+"\"\n", "5m", "8s", "14s", "8s", 8*time.Minute)
	// Disk use as each node reports it: whole MiB (the table rounds each
	// table up), more than none (the system tables alone take some) and
	// far below 10 GiB for this run's few thousand posts.
	disk := map[string]int{}
	for _, p := range run.Points {
		if p.Series != "node-disk" {
			continue
		}
		disk[p.Labels["node"]]++
		if p.Y <= 0 || p.Y >= 10<<30 || math.Mod(p.Y, 1<<20) != 0 {
			t.Errorf("node-disk of %s at %.0f s: %.0f bytes; want whole MiB, above 0, below 10 GiB", p.Labels["node"], p.X, p.Y)
		}
	}
	for _, n := range cl.Nodes {
		if disk[n.Name] == 0 {
			t.Errorf("no node-disk point for %s (points per node: %v)", n.Name, disk)
		}
	}
	t.Logf("node-disk points per node: %v; first and last of %s: %s", disk, victim, firstLastDisk(run, victim))
	if !strings.Contains(out, "microblog on cassandra "+cl.Version) {
		t.Errorf("the summary does not name the server as Cassandra reported it:\n%s", out)
	}
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(run.Dir), "cluster", cluster.CommandLog))
	if len(logs) != 1 {
		t.Fatalf("command log: %v", logs)
	}
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "cluster restart "+victim) || strings.Count(string(b), "--- exit 0") != 2 {
		t.Errorf("command log:\n%s", b)
	}
}

// firstLastDisk shows a node's first and last node-disk points, for the
// test's log.
func firstLastDisk(run *result.Run, node string) string {
	var got []string
	for _, p := range run.Points {
		if p.Series == "node-disk" && p.Labels["node"] == node {
			got = append(got, strconv.FormatFloat(p.Y/(1<<20), 'f', 0, 64)+" MiB at "+strconv.FormatFloat(p.X, 'f', 0, 64)+" s")
		}
	}
	if len(got) == 0 {
		return "none"
	}
	return got[0] + ", " + got[len(got)-1]
}
