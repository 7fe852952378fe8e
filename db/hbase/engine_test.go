package hbase

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// upOwn starts an HBase of the test's own through the engine, stopped
// when the test ends, and a context that ends after timeout
// (clustertest.OwnClusterContext), for a test that calls the engine's
// methods beyond cluster.Engine's (Add, Kill, Restart, Moving). The
// package's adapter tests share another server (hbase_test.go).
func upOwn(t *testing.T, opts cluster.Options, timeout time.Duration) (context.Context, hbaseEngine, *cluster.Cluster) {
	t.Helper()
	ctx, e, c := clustertest.OwnClusterContext(t, Name, opts, timeout)
	he, ok := e.(hbaseEngine)
	if !ok {
		t.Fatalf("engine %s is a %T, not an hbaseEngine", Name, e)
	}
	return ctx, he, c
}

// TestHBaseUpStatusAddDown starts HBase with two in-process region
// servers, writes through the REST gateway, checks that Status shows the
// regions and the requests per region server, adds a region server process,
// kills and restarts it, and stops everything by PID.
func TestHBaseUpStatusAddDown(t *testing.T) {
	start := time.Now()
	ctx, e, c := upOwn(t, cluster.Options{Nodes: 2, Extra: map[string]string{"balancer-period": "2000"}}, 8*time.Minute)
	t.Logf("up in %v (jars cached in %s)", time.Since(start).Round(time.Millisecond), c.Options["jars"])
	if !strings.HasPrefix(c.DSN, "hbase://127.0.0.1:") {
		t.Errorf("DSN = %q, want hbase://127.0.0.1:PORT", c.DSN)
	}
	if l, err := cluster.Load(c.Dir); err != nil || len(l.Nodes) != 2 {
		t.Fatalf("Load(cluster.json) = %v, %v; want master and rest", l, err)
	}
	// The master's Jetty unpacks its web application into java.io.tmpdir:
	// the node's own tmp/, not /tmp, where a killed node would leave it.
	for _, n := range c.Nodes {
		if n.Role != "master" {
			continue
		}
		if jetty, _ := filepath.Glob(filepath.Join(n.DataDir, "tmp", "jetty-*")); len(jetty) == 0 {
			t.Errorf("master %s: no jetty-* in %s: the JVM's temporary files are elsewhere (java.io.tmpdir)", n.Name, filepath.Join(n.DataDir, "tmp"))
		}
	}

	// Write rows through the gateway: the region server holding the table
	// must show the writes.
	rest, err := c.Node("rest")
	if err != nil {
		t.Fatal(err)
	}
	const rows = 50
	hbaseTestPut(t, ctx, rest, rows)

	regionServers := func(st []cluster.NodeStatus) []cluster.NodeStatus {
		var out []cluster.NodeStatus
		for _, s := range st {
			if strings.HasPrefix(s.Role, "regionserver") && s.State == "up" {
				out = append(out, s)
			}
		}
		return out
	}
	var st []cluster.NodeStatus
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err = e.Status(ctx, c)
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		var writes, regions int64
		for _, s := range regionServers(st) {
			w, _ := strconv.ParseInt(s.Detail["write_requests"], 10, 64)
			r, _ := strconv.ParseInt(s.Detail["regions"], 10, 64)
			writes += w
			regions += r
		}
		// hbase:meta plus the test table (hbase:namespace too on 2.x).
		if len(regionServers(st)) == 2 && writes >= rows && regions >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Status never showed 2 region servers with %d writes over >= 2 regions: %+v", rows, st)
		}
		time.Sleep(time.Second) // region servers report every 3 s
	}
	for _, s := range st {
		t.Logf("%s %s %s %s pid=%d %v", s.Name, s.Role, s.Addr, s.State, s.PID, s.Detail)
	}
	master, _ := c.Node("master")
	if rss := hbaseTestRSS(master.PID); rss > 0 {
		t.Logf("master JVM RSS: %d MB", rss>>20)
	}

	// A table pre-split into hbaseTestSplits regions (RegionSplitter, a
	// client JVM: the REST gateway cannot create split tables), so an added
	// region server has regions to take.
	t0 := time.Now()
	hbaseTestSplitTable(t, ctx, c, "fbsplit", hbaseTestSplits)
	t.Logf("created fbsplit with %d regions in %v", hbaseTestSplits, time.Since(t0).Round(time.Millisecond))
	hbaseTestSettled(t, ctx, e, c, 120*time.Second)

	// Grow by one region server process.
	t0 = time.Now()
	n, err := e.Add(ctx, c)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	t.Logf("added %s (%s, pid %d) in %v", n.Name, n.Addr(), n.PID, time.Since(t0).Round(time.Millisecond))
	st, err = e.Status(ctx, c)
	if err != nil {
		t.Fatalf("Status after Add: %v", err)
	}
	if got := len(regionServers(st)); got != 3 {
		t.Errorf("after Add: %d region servers up, want 3: %+v", got, st)
	}
	found := false
	for _, s := range st {
		found = found || (s.Name == n.Name && s.State == "up" && s.PID == n.PID)
	}
	if !found {
		t.Errorf("Status does not list %s as up with its PID: %+v", n.Name, st)
	}

	// With balancer-period=2000 the balancer moves regions to it: Moving
	// says so until the counts are even, and then the new server holds
	// some of the pre-split table's regions.
	m, d, err := e.Moving(ctx, c)
	if err != nil {
		t.Fatalf("Moving right after Add: %v", err)
	}
	t.Logf("Moving right after Add: %v %q", m, d)
	hbaseTestSettled(t, ctx, e, c, 120*time.Second)
	st, err = e.Status(ctx, c)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if s := hbaseTestFind(st, n.Name); s == nil || s.Detail["regions"] == "0" || s.Detail["regions"] == "" {
		t.Errorf("settled %v after Add, but %s holds no regions: %+v", time.Since(t0).Round(time.Millisecond), n.Name, st)
	} else {
		t.Logf("balanced %v after Add: %s holds %s region(s)", time.Since(t0).Round(time.Millisecond), n.Name, s.Detail["regions"])
	}
	for _, s := range regionServers(st) {
		t.Logf("  %s %s regions=%s", s.Name, s.Addr, s.Detail["regions"])
	}

	// Kill the added region server and start it again while another
	// process holds its port (issue 43: a restart on a port taken in
	// between failed "Address already in use"): it moves to a new one,
	// which it registers, and the master lists it there.
	t0 = time.Now()
	if err := e.Kill(ctx, c, n.Name); err != nil {
		t.Fatalf("Kill %s: %v", n.Name, err)
	}
	oldPort := n.Port
	held := hbaseTestHold(t, n.Host, oldPort)
	if err := e.Restart(ctx, c, n.Name); err != nil {
		t.Fatalf("Restart %s with its port %d taken: %v", n.Name, oldPort, err)
	}
	held.Close()
	t.Logf("killed and restarted %s in %v (port %d taken: now %d)", n.Name, time.Since(t0).Round(time.Millisecond), oldPort, n.Port)
	if !cluster.Alive(n.PID) || n.Port == oldPort {
		t.Errorf("%s after Restart: alive %v on port %d (the taken port was %d)", n.Name, cluster.Alive(n.PID), n.Port, oldPort)
	}

	// The master: ZooKeeper's port cannot move under the gateway and the
	// region servers, so a restart while another process holds it is
	// refused at once, naming the holder, and starts nothing (the master
	// stays down for Down below: a restart of it costs 50 s here).
	if err := e.Kill(ctx, c, "master"); err != nil {
		t.Fatalf("Kill master: %v", err)
	}
	zk := hbaseTestHold(t, master.Host, master.Port)
	t0 = time.Now()
	err = e.Restart(ctx, c, "master")
	if err == nil || !strings.Contains(err.Error(), "ZooKeeper's port") || !strings.Contains(err.Error(), fmt.Sprintf("by pid %d", os.Getpid())) {
		t.Fatalf("Restart of the master with ZooKeeper's port held = %v; want a refusal naming the port and this process", err)
	}
	t.Logf("refused in %v: %v", time.Since(t0).Round(time.Millisecond), err)
	if master.PID != 0 {
		t.Errorf("the refused restart started pid %d", master.PID)
	}
	zk.Close()

	pids := []int{}
	for _, n := range c.Nodes {
		pids = append(pids, n.PID)
	}
	t0 = time.Now()
	if err := e.Down(ctx, c); err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("down in %v", time.Since(t0).Round(time.Millisecond))
	for _, p := range pids {
		if cluster.Alive(p) {
			t.Errorf("pid %d still alive after Down", p)
		}
	}
	c = nil
}

// hbaseTestHold listens on host:port until the test closes it (or ends):
// another process's listener, as far as a restarting node can tell. A
// killed JVM's port is let go a moment after it is gone: it waits for it.
func hbaseTestHold(t *testing.T, host string, port int) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	for deadline := time.Now().Add(cluster.PortLinger); ; time.Sleep(50 * time.Millisecond) {
		if l, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("hold %s:%d: %v", host, port, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func hbaseTestPut(t *testing.T, ctx context.Context, rest *cluster.Node, rows int) {
	t.Helper()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	do := func(method, path, body string) {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+rest.Addr()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, b.String())
		}
	}
	do(http.MethodPut, "/fbtest/schema", `{"name":"fbtest","ColumnSchema":[{"name":"f"}]}`)
	for i := 0; i < rows; i++ { // one request each, so each is a write
		k := fmt.Sprintf("row%03d", i)
		do(http.MethodPut, "/fbtest/"+k, fmt.Sprintf(`{"Row":[{"key":%q,"Cell":[{"column":%q,"$":%q}]}]}`, b64(k), b64("f:v"), b64("x")))
	}
}

// hbaseTestRSS is the resident set size of pid in bytes (0 if unknown).
func hbaseTestRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func hbaseTestFind(st []cluster.NodeStatus, name string) *cluster.NodeStatus {
	for i := range st {
		if st[i].Name == name {
			return &st[i]
		}
	}
	return nil
}

// hbaseTestSplits is how many regions the test's pre-split table has: more
// than the region servers, so an added one must get some.
const hbaseTestSplits = 6

// hbaseTestSplitTable creates table with family f split into n regions
// (HexStringSplit) with HBase's own RegionSplitter tool, run on the
// cluster's jars and the master's configuration (ZooKeeper address).
func hbaseTestSplitTable(t *testing.T, ctx context.Context, c *cluster.Cluster, table string, n int) {
	t.Helper()
	m, err := c.Node("master")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-Xmx256m"}, hbaseJVMFlags...)
	args = append(args, "-Dlog4j.configuration=file:"+filepath.Join(filepath.Dir(m.Config), "log4j.properties"),
		"-cp", filepath.Dir(m.Config)+string(os.PathListSeparator)+filepath.Join(c.Options["jars"], "*"),
		"org.apache.hadoop.hbase.util.RegionSplitter", table, "HexStringSplit", "-c", strconv.Itoa(n), "-f", "f")
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "java", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("RegionSplitter %s: %v\n%s\nmaster log ends:\n%s", table, err, cluster.Tail(string(out), 2000), cluster.LogTail(m.LogFile, 1500))
	}
}

// hbaseTestSettled polls Moving every second until it reports nothing
// moving, failing after limit.
func hbaseTestSettled(t *testing.T, ctx context.Context, e hbaseEngine, c *cluster.Cluster, limit time.Duration) {
	t.Helper()
	start := time.Now()
	var last string
	for {
		m, d, err := e.Moving(ctx, c)
		if err != nil {
			last = "error: " + err.Error()
		} else if !m {
			t.Logf("settled after %v", time.Since(start).Round(time.Millisecond))
			return
		} else {
			last = d
		}
		if time.Since(start) > limit {
			t.Fatalf("still moving after %v: %s", limit, last)
		}
		time.Sleep(time.Second)
	}
}

func TestHBaseUneven(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   bool
	}{
		{nil, false},
		{[]int{7}, false},
		{[]int{4, 4}, false},
		{[]int{4, 4, 0}, true},  // a new server, idle
		{[]int{1, 1, 0}, false}, // idle, but no server has more than one
		{[]int{3, 3, 2}, false},
		{[]int{5, 2, 1}, true}, // avg 2.67: ceil(3.2) = 4 < 5
		{[]int{3, 3, 3, 1}, true},
		{[]int{10, 10, 9, 8}, false},
	} {
		if got := hbaseUneven(tc.counts); got != tc.want {
			t.Errorf("hbaseUneven(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
}

// TestHBaseStatusRegionNames: the gateway's region names are base64; read
// as bytes, hbase:meta's region is recognised (Moving counts regions with
// and without it, so a name never matched made both counts the same).
func TestHBaseStatusRegionNames(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "external", "status-dead.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st hbaseClusterStatus
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var meta, other int
	for _, rs := range st.LiveNodes {
		for _, r := range rs.RegionsList {
			if strings.HasPrefix(string(r.Name), "hbase:meta,") {
				meta++
			} else {
				other++
			}
		}
	}
	if meta != 1 || other == 0 {
		t.Fatalf("hbase:meta regions %d, others %d: want 1 and some", meta, other)
	}
}

// TestHBaseSiteConfigHosts: on hosts each process's hbase-site.xml binds
// and names its host's address, finds ZooKeeper on the master's host, and
// uses the standard ports; only the master's embedded ZooKeeper listens on
// every address of its host (MiniZooKeeperCluster checks it on localhost);
// on loopback nothing changes (127.0.0.1 everywhere, ZooKeeper's default
// address).
func TestHBaseSiteConfigHosts(t *testing.T) {
	hosts := &cluster.Cluster{Network: cluster.NetworkHosts, Dir: "/d", Options: map[string]string{"rootdir": "file:///d/data/hbase", "balancer-period": "10000"}, Nodes: []*cluster.Node{
		{Name: "master", Role: "master", Host: "198.18.0.1", Netns: "fbn-x-master", Port: hbaseZKPort, Ports: []int{hbaseMasterInfoPort}},
		{Name: "rest", Role: "rest", Host: "198.18.0.1", Netns: "fbn-x-master", Port: hbaseRESTPort},
		{Name: "rs2", Role: "regionserver", Host: "198.18.0.2", Netns: "fbn-x-rs2", Port: hbaseRSPort},
	}}
	bounded := &cluster.Cluster{Network: cluster.NetworkHosts, Dir: "/d", Nodes: hosts.Nodes, Options: map[string]string{"rootdir": "file:///d/data/hbase", "balancer-period": "10000", "rest-client-timeout": "1500"}}
	loop := &cluster.Cluster{Dir: "/d", Options: hosts.Options, Nodes: []*cluster.Node{
		{Name: "master", Role: "master", Host: cluster.Loopback, Port: 40000, Ports: []int{40001}},
		{Name: "rs2", Role: "regionserver", Host: cluster.Loopback, Port: 40002},
	}}
	for _, tc := range []struct {
		c    *cluster.Cluster
		node string
		want map[string]string // "" for a key that must be absent
	}{
		{hosts, "master", map[string]string{
			"hbase.zookeeper.quorum": "198.18.0.1", "hbase.zookeeper.property.clientPort": "2181",
			"hbase.zookeeper.property.clientPortAddress": "0.0.0.0",
			"hbase.master.ipc.address":                   "198.18.0.1", "hbase.master.hostname": "198.18.0.1", "hbase.master.port": "16000",
			"hbase.master.info.bindAddress": "198.18.0.1", "hbase.master.info.port": "16010",
			"hbase.regionserver.ipc.address": "198.18.0.1", "hbase.regionserver.hostname": "198.18.0.1", "hbase.regionserver.port": "0",
		}},
		{hosts, "rest", map[string]string{
			"hbase.zookeeper.quorum": "198.18.0.1", "hbase.rest.host": "198.18.0.1", "hbase.rest.port": "8080", "hbase.rest.info.port": "-1",
			"hbase.zookeeper.property.clientPortAddress": "", "hbase.client.operation.timeout": "", "hbase.rpc.timeout": "",
		}},
		{bounded, "rest", map[string]string{
			"hbase.client.operation.timeout": "1500", "hbase.client.meta.operation.timeout": "1500",
			"hbase.client.scanner.timeout.period": "1500", "hbase.client.meta.scanner.timeout.period": "1500",
			"hbase.rpc.timeout": "1500", "hbase.ipc.client.socket.timeout.connect": "1500",
		}},
		{bounded, "rs2", map[string]string{"hbase.client.operation.timeout": "", "hbase.client.scanner.timeout.period": "", "hbase.rpc.timeout": ""}},
		{hosts, "rs2", map[string]string{
			"hbase.zookeeper.quorum": "198.18.0.1", "hbase.zookeeper.property.clientPort": "2181",
			"hbase.regionserver.ipc.address": "198.18.0.2", "hbase.regionserver.hostname": "198.18.0.2", "hbase.regionserver.port": "16020",
			"hbase.cluster.distributed": "true", "hbase.zookeeper.property.clientPortAddress": "",
		}},
		{loop, "master", map[string]string{
			"hbase.zookeeper.quorum": cluster.Loopback, "hbase.zookeeper.property.clientPort": "40000",
			"hbase.master.ipc.address": cluster.Loopback, "hbase.master.port": "0", "hbase.master.info.port": "40001",
			"hbase.zookeeper.property.clientPortAddress": "",
		}},
		{loop, "rs2", map[string]string{
			"hbase.zookeeper.quorum": cluster.Loopback, "hbase.regionserver.ipc.address": cluster.Loopback, "hbase.regionserver.port": "40002",
		}},
	} {
		n, err := tc.c.Node(tc.node)
		if err != nil {
			t.Fatal(err)
		}
		p, err := hbaseEngine{}.siteConfig(tc.c, n)
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range tc.want {
			if got, ok := p[k]; got != want || (want == "") == ok {
				t.Errorf("%s on %s: %s = %q (set %v), want %q", tc.node, tc.c.Network, k, got, ok, want)
			}
		}
	}
}

// TestParseHBaseOpts: rs-hosts starts the region servers on hosts of
// their own, so it is refused off a virtual network and on a bad value;
// rest-heap is the gateway's heap, 256 MB unless given.
func TestParseHBaseOpts(t *testing.T) {
	for _, tc := range []struct {
		network string
		extra   map[string]string
		rsHosts bool
		rest    int
		err     string
	}{
		{cluster.NetworkHosts, map[string]string{"rs-hosts": "true"}, true, 256, ""},
		{cluster.NetworkHosts, map[string]string{"rs-hosts": "false", "rest-heap": "1024"}, false, 1024, ""},
		{"", map[string]string{"rs-hosts": "false"}, false, 256, ""},
		{"", map[string]string{"rs-hosts": "true"}, false, 0, "need --network hosts"},
		{cluster.NetworkHosts, map[string]string{"rs-hosts": "yes"}, false, 0, "invalid syntax"},
		{"", map[string]string{"rest-heap": "64"}, false, 0, "at least 128"},
		{"", map[string]string{"rest-client-timeout": "50"}, false, 0, "at least 100"},
		{"", map[string]string{"rest-client-timeout": "1500"}, false, 256, ""},
	} {
		h, err := parseHBaseOpts(cluster.Options{Nodes: 3, Network: tc.network, Extra: tc.extra})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v on %q: err %v, want one with %q", tc.extra, tc.network, err, tc.err)
		case tc.err == "" && (err != nil || h.rsHosts != tc.rsHosts || h.restHeapMB != tc.rest || h.regionServers != 3):
			t.Errorf("%v on %q: %+v, %v; want rsHosts %v, rest heap %d, 3 region servers", tc.extra, tc.network, h, err, tc.rsHosts, tc.rest)
		}
	}
}

// TestHBaseNodeNames: the names a scenario may give hbase nodes, as Up and
// Add name them.
func TestHBaseNodeNames(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		extra map[string]string
		adds  int
		want  string
	}{
		{3, map[string]string{"rs-hosts": "true"}, 0, "master rest rs1 rs2 rs3"},
		{3, map[string]string{"rs-hosts": "true"}, 1, "master rest rs1 rs2 rs3 rs4"},
		{1, nil, 2, "master rest rs2 rs3"},
		{2, nil, 0, "master rest"},
		{0, nil, 1, "master rest rs2"},
	} {
		if got := strings.Join(hbaseEngine{}.NodeNames(tc.nodes, tc.extra, tc.adds), " "); got != tc.want {
			t.Errorf("NodeNames(%d, %v, %d) = %s, want %s", tc.nodes, tc.extra, tc.adds, got, tc.want)
		}
	}
}
