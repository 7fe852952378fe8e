package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// assertNetworkGone: no namespace of dir's network, and no interface of
// it in the root namespace.
func assertNetworkGone(t *testing.T, dir string) {
	t.Helper()
	n := vnet.ForDir(dir)
	if nss, err := n.Namespaces(); err != nil || len(nss) > 0 {
		t.Errorf("namespaces left: %v %v", nss, err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), n.ID) {
		t.Errorf("ip netns list:\n%s", out)
	}
	out, _ = exec.Command("ip", "-o", "link", "show").Output()
	if strings.Contains(string(out), "vredis") || strings.Contains(string(out), "vcass") || strings.Contains(string(out), "vload") || strings.Contains(string(out), "vpg") || strings.Contains(string(out), n.ID) {
		t.Errorf("root namespace links of the network:\n%s", out)
	}
	if pids, _ := cluster.Spawned(dir); len(pids) > 0 {
		t.Errorf("servers still running: %v", pids)
	}
}

// dialThrough points fieldbench's default dial at host h, as an
// experiment's in-process load on a load host does; restore undoes it.
func dialThrough(h vnet.Host) (restore func()) {
	return netdial.Set(func(ctx context.Context, _, addr string) (net.Conn, error) { return vnet.Dial(ctx, h.NS, addr) })
}

// worldSearchableDir makes a directory every user can search, for servers
// that drop root (postgres, mysql): t.TempDir's parents are not.
func worldSearchableDir(t *testing.T, prefix string) string {
	t.Helper()
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// needHostsEngine skips t unless engine's servers can start on hosts
// here: not -short, network namespaces possible, the engine installed.
func needHostsEngine(t *testing.T, engine string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts %s on hosts", engine)
	}
	if err := vnet.Check(); err != nil {
		t.Skipf("hosts need network namespaces: %v", err)
	}
	e, err := cluster.Get(engine)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Check(); err != nil {
		t.Skipf("%s cannot run here (scripts/install-servers.sh): %v", engine, err)
	}
}

func needHostsCLI(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and starts Redis")
	}
	if err := vnet.Check(); err != nil {
		t.Skipf("hosts need network namespaces: %v", err)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis not installed (scripts/install-servers.sh): %v", err)
	}
}

// TestRedisHostsLoadHost: a 3-node Redis Cluster on hosts, loaded and run
// from a load host, then down: the result has operations, no errors and
// the load host's address, and nothing of the network remains. Run again
// from the load host with --load-budget (where budgets can be held), the
// result has the load's budget series, read by the child on the load
// host from the group its parent holds it in. redis2's budget sets its
// host's link (net=100mbit): a tbf on its eth0 at that rate, none on the
// others', shown by status and kept across a kill and restart.
func TestRedisHostsLoadHost(t *testing.T) {
	h := upOnHosts(t, "redis://198.18.0.1:6379?cluster=1&addrs=198.18.0.2:6379,198.18.0.3:6379", "redis", "--nodes", "3", "--budget", "redis2:net=100mbit")
	h.status("198.18.0.1:6379", "198.18.0.2:6379", "198.18.0.3:6379", "budget=net=100mbit")
	linkRate := func(node string) string {
		out, err := exec.Command("tc", "-n", h.node(node).Netns, "qdisc", "show", "dev", vnet.HostIf, "root").CombinedOutput()
		if err != nil {
			t.Fatalf("tc qdisc show on %s's host: %v: %s", node, err, out)
		}
		if !strings.Contains(string(out), "qdisc tbf") {
			return ""
		}
		return string(out)
	}
	for _, step := range []string{"up", "a kill and restart"} {
		if q := linkRate("redis2"); !strings.Contains(q, "rate 100Mbit") {
			t.Errorf("after %s, redis2's host link: %q, want a tbf at 100Mbit (its budget's net=)", step, q)
		}
		if q := linkRate("redis1"); q != "" {
			t.Errorf("after %s, redis1's host link is limited: %q", step, q)
		}
		if step == "up" {
			h.killRestart("redis2")
		}
	}
	h.loadAndRun("100")
	if vnet.Exists(vnet.ForDir(h.dir).HostNS("load1")) {
		t.Error("load host left after the run")
	}
	if err := budget.Check(budget.Budget{CPU: 0.1, Memory: 256 << 20}); err == nil {
		res := filepath.Join(h.base, "results-budget")
		if code, out, stderr := runBin(t, h.bin, "run", "microblog", "--users", "100", "--clients", "2", "--duration", "3s", "--load-host", h.dir, "--load-budget", "cpu=0.1,memory=256MiB", "--results", res); code != 0 {
			t.Fatalf("run --load-budget on the load host: exit %d\n%s\n%s", code, out, stderr)
		}
		run := onlyRun(t, res)
		n := map[string]int{}
		for _, p := range run.Points {
			n[p.Series]++
		}
		if run.Header.LoadBudget != "cpu=0.1,memory=256MiB" || n["load-budget-cpu"] == 0 || n["load-budget-memory"] == 0 {
			t.Errorf("run on the load host with --load-budget: header load_budget %q, series points %v; want the budget and the load's series", run.Header.LoadBudget, n)
		}
	}
	h.down()
}

// TestRunClusterOnHosts: `run --cluster redis:3 --cluster-network hosts`
// starts a Redis Cluster on hosts, runs from load host load1 (the result
// records it, the operations have no error) and stops the cluster: no
// namespace, link or server of it is left. Bad combinations are refused
// before anything starts.
func TestRunClusterOnHosts(t *testing.T) {
	needHostsCLI(t)
	bin := fieldbenchBin(t)
	res := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-network", "hosts"}, "--cluster-network needs --cluster"},
		{[]string{"--cluster", "redis:3", "--cluster-network", "moon"}, "moon"},
		{[]string{"--cluster", "redis:3", "--cluster-network", "hosts", "--load-host", res}, "not both"},
	} {
		code, _, stderr := runBin(t, bin, append([]string{"run", "microblog", "--results", res}, tt.args...)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("run %v: exit %d, want %d with %q:\n%s", tt.args, code, cli.ExitUsage, tt.want, stderr)
		}
	}
	code, out, stderr := runBin(t, bin, "run", "microblog", "--users", "100", "--clients", "4", "--duration", "3s",
		"--cluster", "redis:3", "--cluster-network", "hosts", "--results", res)
	if code != 0 || !strings.Contains(stderr, "on load host load1 (198.18.1.1") {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(res, "*-microblog-redis"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	run, err := result.Read(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.Header.DSN, "198.18.0.1:6379") {
		t.Errorf("DSN %q: not the hosts' addresses", run.Header.DSN)
	}
	assertRanOnLoad1(t, run)
	dirs, _ := filepath.Glob(filepath.Join(res, "cluster-redis-*"))
	if len(dirs) != 1 {
		t.Fatalf("cluster directories %v, want one", dirs)
	}
	assertNetworkGone(t, dirs[0])
}

// TestRedisHostsInterruptedUp sends SIGINT to `cluster up --network hosts`
// once its second host exists: it stops what it started and removes the
// network on its own.
func TestRedisHostsInterruptedUp(t *testing.T) {
	needHostsCLI(t)
	bin := fieldbenchBin(t)
	dir := filepath.Join(t.TempDir(), "redis")
	cmd := exec.Command(bin, "cluster", "up", "redis", "--nodes", "3", "--network", "hosts", "--dir", dir)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cleanupHosts(t, bin, dir)
	deadline := time.Now().Add(time.Minute)
	for !vnet.Exists(vnet.ForDir(dir).HostNS("redis2")) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no second host within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitInterrupted {
		t.Fatalf("interrupted up: %v, want exit %d\n%s", err, cli.ExitInterrupted, errb.String())
	}
	assertNetworkGone(t, dir)
	if code, out, stderr := runBin(t, bin, "cluster", "down", "--dir", dir); code != 0 {
		t.Fatalf("down after the interrupt: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestHostsWithoutRoot: asking for hosts without root is bad input (exit
// 2) with a clear message, before anything is made.
func TestHostsWithoutRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := fieldbenchBin(t)
	dir := filepath.Join(t.TempDir(), "c")
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Skip("runs as root without setpriv to drop it")
		}
		cmd = exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "cluster", "up", "redis", "--network", "hosts", "--dir", dir)
	} else {
		cmd = exec.Command(bin, "cluster", "up", "redis", "--network", "hosts", "--dir", dir)
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitUsage || !strings.Contains(string(out), "needs root") {
		t.Fatalf("hosts without root: %v\n%s", err, out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("the cluster directory was made")
	}
}

// TestNetworkBadInput: the network options refused before anything starts.
func TestNetworkBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lo := filepath.Join(dir, "lo")
	if err := os.MkdirAll(lo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lo, "cluster.json"), []byte(`{"engine":"redis","nodes":[{"name":"redis1","host":"127.0.0.1","port":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown network", []string{"cluster", "up", "redis", "--network", "lan", "--dir", filepath.Join(dir, "x")}, `--network "lan": want one of loopback, hosts`},
		{"engine without hosts", []string{"cluster", "up", "couchbase", "--network", "hosts", "--dir", filepath.Join(dir, "y")}, "the couchbase engine starts on loopback only: CouchbaseMock simulates every node inside one JVM"},
		{"load host of a loopback cluster", []string{"run", "microblog", "--load-host", lo, "--results", dir}, "is on loopback, not on hosts"},
		{"load host of no cluster", []string{"load", "microblog", "--load-host", filepath.Join(dir, "none")}, "no cluster in"},
		{"index without load host", []string{"run", "microblog", "--load-host-index", "2", "--results", dir}, "--load-host-index needs --load-host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
		})
	}
}

// TestRedisHostsShards runs the two shards of a microblog run at once, each
// on a load host of its own (load1 and load2 from --shard I/N), and merges
// them: the shards recorded their hosts, and nothing of them remains.
func TestRedisHostsShards(t *testing.T) {
	needHostsCLI(t)
	bin := fieldbenchBin(t)
	base := t.TempDir()
	dir := filepath.Join(base, "redis")
	if code, out, stderr := upHosts(t, bin, dir, "redis", "--nodes", "2"); code != 0 {
		t.Fatalf("up: exit %d\n%s\n%s", code, out, stderr)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, stderr := runBin(t, bin, "run", "microblog", "--users", "100", "--clients", "4", "--duration", "3s",
				"--shard", fmt.Sprintf("%d/2", i), "--load-host", dir, "--results", filepath.Join(base, fmt.Sprint(i)))
			if code != 0 {
				t.Errorf("shard %d: exit %d\n%s\n%s", i, code, out, stderr)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var dirs []string
	for i := range 2 {
		run := onlyRun(t, filepath.Join(base, fmt.Sprint(i)))
		want := fmt.Sprintf("198.18.1.%d", i+1)
		if lh := run.Header.Machine.LoadHost; lh == nil || lh.Addr != want {
			t.Errorf("shard %d ran on %+v, want %s", i, lh, want)
		}
		dirs = append(dirs, run.Dir)
	}
	merged := mergeShards(t, base, dirs)
	if merged.Summary == nil || merged.Summary.Ops["post"].Count == 0 {
		t.Errorf("merged: %+v", merged.Summary)
	}
	downAndAssertGone(t, bin, dir)
}

// TestRedisHostsKilledUp SIGKILLs `cluster up --network hosts` once its
// second host exists (nothing of it runs after that): the next `cluster
// down` of the directory stops its servers and removes its network.
func TestRedisHostsKilledUp(t *testing.T) {
	needHostsCLI(t)
	bin := fieldbenchBin(t)
	dir := filepath.Join(t.TempDir(), "redis")
	cmd := exec.Command(bin, "cluster", "up", "redis", "--nodes", "3", "--network", "hosts", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vnet.ForDir(dir).Destroy(context.Background()) })
	deadline := time.Now().Add(time.Minute)
	for !vnet.Exists(vnet.ForDir(dir).HostNS("redis2")) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no second host within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if nss, _ := vnet.ForDir(dir).Namespaces(); len(nss) < 2 {
		t.Fatalf("the killed up left %v: the test did not kill it midway", nss)
	}
	if code, out, stderr := runBin(t, bin, "cluster", "down", "--dir", dir); code != 0 {
		t.Fatalf("down after the kill: exit %d\n%s\n%s", code, out, stderr)
	}
	assertNetworkGone(t, dir)
}

// downAndAssertGone runs `cluster down` on dir and asserts that nothing of
// its network is left.
func downAndAssertGone(t *testing.T, bin, dir string) {
	t.Helper()
	if code, out, stderr := runBin(t, bin, "cluster", "down", "--dir", dir); code != 0 {
		t.Fatalf("down: exit %d\n%s\n%s", code, out, stderr)
	}
	assertNetworkGone(t, dir)
}

// upHosts runs `cluster up` of args (the engine and its flags) on hosts
// in dir, and has the cluster stopped and its network removed when t
// ends, whatever the up did.
func upHosts(t *testing.T, bin, dir string, args ...string) (int, string, string) {
	t.Helper()
	code, out, stderr := runBin(t, bin, append(append([]string{"cluster", "up"}, args...), "--network", "hosts", "--dir", dir)...)
	cleanupHosts(t, bin, dir)
	return code, out, stderr
}

// cleanupHosts has the cluster of dir stopped and its network removed
// when t ends, also after a failed or interrupted up.
func cleanupHosts(t *testing.T, bin, dir string) {
	t.Helper()
	t.Cleanup(func() {
		runBin(t, bin, "cluster", "down", "--dir", dir)
		_ = vnet.ForDir(dir).Destroy(context.Background())
	})
}

// statusHas runs `cluster status` on dir, a cluster on hosts, and fails t
// for each of want (and each host's counters, the network line) that its
// output lacks; it returns the output.
func statusHas(t *testing.T, bin, dir string, want ...string) string {
	t.Helper()
	code, out, _ := runBin(t, bin, "cluster", "status", "--dir", dir)
	for _, a := range append(want, "net_rx_bytes=", "network: hosts") {
		if code != 0 || !strings.Contains(out, a) {
			t.Errorf("status lacks %q: exit %d\n%s", a, code, out)
		}
	}
	return out
}

// loadAndRunOnLoadHostUsers loads microblog (users users) into the
// cluster of dir and runs it for 3 s with 4 clients, both from its first
// load host (load1, 198.18.1.1), the run's results in res: the run names
// that load host in its header and measured operations, none of them
// failed.
func loadAndRunOnLoadHostUsers(t *testing.T, bin, dir, res, users string) {
	t.Helper()
	if code, out, stderr := runBin(t, bin, "load", "microblog", "--users", users, "--load-host", dir); code != 0 || !strings.Contains(stderr, "on load host load1 (198.18.1.1") {
		t.Fatalf("load: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := runBin(t, bin, "run", "microblog", "--users", users, "--clients", "4", "--duration", "3s", "--load-host", dir, "--results", res); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	assertRanOnLoad1(t, onlyRun(t, res))
}

// assertRanOnLoad1: run's header records load host load1 (198.18.1.1),
// and it measured operations, none failed.
func assertRanOnLoad1(t *testing.T, run *result.Run) {
	t.Helper()
	if lh := run.Header.Machine.LoadHost; lh == nil || lh.Addr != "198.18.1.1" || lh.Name != "load1" {
		t.Errorf("header's load host: %+v", lh)
	}
	sum, err := run.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	var ops int64
	for name, o := range sum.Ops {
		ops += o.Count
		if len(o.Errors) > 0 {
			t.Errorf("%s: errors %v", name, o.Errors)
		}
	}
	if ops == 0 {
		t.Error("no operation measured")
	}
}

// TestCassandraHostsLoadHost: a 3-node Cassandra on hosts, each node on its
// own address and the standard ports, the ring of three NORMAL nodes seen
// by status with each host's counters; loaded and run from a load host;
// one node killed and restarted; then down, which leaves no namespace. The
// JVMs run with a 256 MB heap (about 700 MB RSS each measured here) and a
// 10 s server timeout, for a shared, loaded machine.
func TestCassandraHostsLoadHost(t *testing.T) {
	onlyLong(t, "5–7 min here, three Cassandra JVMs on hosts, killed and restarted: a fifth of CI's 35 min for one test")
	start := time.Now()
	h := upOnHosts(t, "cassandra://198.18.0.1:9042,198.18.0.2:9042,198.18.0.3:9042/fieldbench?consistency=QUORUM&rf=3",
		"cassandra", "--nodes", "3", "--opt", "heap=256m", "--opt", "request_timeout=10s")
	t.Logf("up: %v", time.Since(start).Round(time.Second))
	bin, dir := h.bin, h.dir
	cl, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range cl.Nodes {
		want := vnet.NodeAddr(i + 1).String()
		if n.Host != want || n.Port != 9042 || fmt.Sprint(n.Ports) != "[7000 7199]" || n.Netns != vnet.ForDir(dir).HostNS(n.Name) {
			t.Errorf("%s: %s:%d %v in %q, want %s:9042, storage 7000 and JMX 7199 in its own host", n.Name, n.Host, n.Port, n.Ports, n.Netns, want)
		}
		conf, err := os.ReadFile(n.Config)
		if err != nil || !strings.Contains(string(conf), "listen_address: "+want+"\n") || !strings.Contains(string(conf), `- seeds: "198.18.0.`) {
			t.Errorf("%s's config: %v\n%s", n.Name, err, conf)
		}
	}
	// The ring as status shows it: three NORMAL nodes with their tokens,
	// on their addresses, with their hosts' counters.
	out := h.status("198.18.0.1:9042", "198.18.0.2:9042", "198.18.0.3:9042")
	if strings.Count(out, "gossip=NORMAL") != 3 || strings.Count(out, "tokens=16 ") != 3 {
		t.Errorf("status: want three NORMAL nodes of 16 tokens each\n%s", out)
	}
	t0 := time.Now()
	h.loadAndRun("100")
	t.Logf("load and run: %v", time.Since(t0).Round(time.Second))
	t0 = time.Now()
	h.killRestart("cass3")
	// Restart returns once cass3 answers CQL; the others' view of it may
	// take a gossip round or two to say NORMAL again.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, st, _ := runBin(t, bin, "cluster", "status", "--dir", dir)
		if code == 0 && strings.Count(st, " up ") == 3 && strings.Count(st, "gossip=NORMAL") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart of cass3, not three nodes up and NORMAL:\n%s", st)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("kill and restart: %v", time.Since(t0).Round(time.Second))
	h.down()
	t.Logf("whole test: %v", time.Since(start).Round(time.Second))
}
