package couchbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// The couchbase engine starts CouchbaseMock (Maven Central
// com.couchbase.mock:CouchbaseMock), not Couchbase Server, which cannot be
// installed here: the cluster description, `cluster status` and results
// name it as CouchbaseMock. CouchbaseMock is one JVM that simulates a
// cluster of N nodes serving one bucket ("default", no password, 64
// vBuckets, one replica; option buckets=N adds fb1..fbN alike): key-value (memcached binary protocol, each
// simulated node on a port of its own) and views (map/reduce in
// JavaScript, over its REST port). It has no N1QL, no durability levels
// and keeps nothing on disk.
//
// Its REST port binds every address whatever --host says, so the JVM runs
// only inside a network namespace of its own (see cluster/netns.go): fieldbench
// creates it, reaches the REST and key-value ports through a forwarder
// bound to 127.0.0.1 on the same port numbers, and deletes it in Down.
// docs/couchbase.md describes the design.
func init() { cluster.Register(couchbaseEngine{}) }

type couchbaseEngine struct{}

var (
	_ cluster.Hoster        = couchbaseEngine{}
	_ cluster.OptionChecker = couchbaseEngine{}
	_ cluster.NodeLimiter   = couchbaseEngine{}
	_ cluster.NodeNamer     = couchbaseEngine{}
	_ cluster.Remoter       = couchbaseEngine{}
)

// CouchbaseMockVersion is the CouchbaseMock release the engine runs.
const CouchbaseMockVersion = "1.5.27"

// CouchbaseMockServer is how results and `cluster status` name the server.
const CouchbaseMockServer = "CouchbaseMock " + CouchbaseMockVersion + " (simulated nodes in one JVM)"

// couchbaseMockGAV is the Maven artifact (one jar, no dependencies).
const couchbaseMockGAV = "com.couchbase.mock:CouchbaseMock:" + CouchbaseMockVersion

// couchbaseMockCache is its directory in the jar cache, the one
// scripts/install-servers.sh fills too.
const couchbaseMockCache = "couchbasemock-" + CouchbaseMockVersion

// couchbaseNetnsPrefix starts the names of the engine's namespaces.
const couchbaseNetnsPrefix = "fbcb-"

// couchbaseMaxNodes bounds the simulated nodes (each is a few threads and
// a port in one JVM; past this the figures describe the mock's threads).
const couchbaseMaxNodes = 8

// couchbaseMaxBuckets bounds the extra buckets (option buckets=N): tests
// give each check a bucket of its own, since CouchbaseMock's views read
// every document of their bucket at each query.
const couchbaseMaxBuckets = 32

// Name implements Engine.
func (couchbaseEngine) Name() string { return Name }

// Hosts implements Hoster: CouchbaseMock starts on loopback only.
// Budgets implements cluster.BudgetHolder: it cannot, CouchbaseMock
// simulates every node of the cluster in one JVM, so no node is a process
// of its own to hold to a budget.
func (couchbaseEngine) Budgets() (bool, string) {
	return false, "CouchbaseMock simulates every node in one JVM: no node is a process of its own"
}

func (couchbaseEngine) Hosts() (bool, string) {
	return false, "CouchbaseMock simulates every node inside one JVM that advertises one address, " +
		"so its nodes cannot be hosts of their own (they differ by port only, and a fault on one host would hit them all); " +
		"and the Couchbase SDK (gocbcore) dials key-value ports with a net.Dialer of its own, at addresses it reads from the bucket's configuration, " +
		"so an experiment's load cannot reach them from a load host. The mock already runs in a network namespace of its own (fbcb-*), " +
		"reached through a forwarder on 127.0.0.1; see docs/network.md"
}

// CheckOptions implements OptionChecker.
func (couchbaseEngine) CheckOptions(o cluster.Options) error {
	_, err := parseCouchbaseOpts(o)
	return err
}

// CheckNodes implements NodeLimiter.
func (e couchbaseEngine) CheckNodes(nodes int, _ map[string]string) error {
	return cluster.NodeLimit(e.Name(), nodes, couchbaseMaxNodes, "CouchbaseMock simulates every node in one JVM: more nodes are more threads of that one process")
}

// Check implements Engine: java and mvn (to fetch the jar once), and the
// rights to create a network namespace.
func (couchbaseEngine) Check() error {
	return errors.Join(cluster.CheckMaven(), cluster.CheckNetns())
}

// NodeNames: cb1, cb2... (simulated nodes).
func (couchbaseEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return cluster.Numbered("cb", nodes+adds)
}

// CouchbaseMockJar fetches the CouchbaseMock jar into the jar cache once
// and returns its path.
func CouchbaseMockJar(ctx context.Context) (string, error) {
	dir, err := cluster.FetchJars(ctx, []string{couchbaseMockGAV}, couchbaseMockCache)
	if err != nil {
		return "", err
	}
	jar := filepath.Join(dir, "CouchbaseMock-"+CouchbaseMockVersion+".jar")
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("couchbase: %w", err)
	}
	return jar, nil
}

// Up implements Engine.
func (e couchbaseEngine) Up(ctx context.Context, dir string, opts cluster.Options) (*cluster.Cluster, error) {
	extra, err := parseCouchbaseOpts(opts)
	if err != nil {
		return nil, err
	}
	nodes := max(opts.Nodes, 1)
	if err := cluster.CheckNodes(e.Name(), nodes, nil); err != nil {
		return nil, err
	}
	if err := e.Check(); err != nil {
		return nil, fmt.Errorf("couchbase: %w", err)
	}
	jar, err := CouchbaseMockJar(ctx)
	if err != nil {
		return nil, err
	}
	mdir := filepath.Join(dir, "mock")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return nil, fmt.Errorf("couchbase: cluster directory: %w", err)
	}
	ns := cluster.NetnsName(couchbaseNetnsPrefix, dir)
	c := &cluster.Cluster{Engine: e.Name(), Dir: dir, Started: time.Now().UTC(), Version: CouchbaseMockServer, Options: map[string]string{
		"server": CouchbaseMockServer, "jar": jar, "netns": ns, "bucket": "default",
		"replicas": "1", "vbuckets": "64",
		"not_verified_here": "N1QL, durability levels, persistence (CouchbaseMock has none of them)"}}
	if err := cluster.CreateNetns(ctx, ns); err != nil {
		return nil, fmt.Errorf("couchbase: %w", err)
	}
	buckets := "default:"
	for i := 1; i <= extra; i++ {
		buckets += fmt.Sprintf(",fb%d:", i)
	}
	if extra > 0 {
		c.Options["buckets"] = buckets
	}
	err = cluster.Retry(5, func(int) error { return startCouchbaseMock(ctx, c, mdir, nodes, buckets) })
	if err != nil {
		_ = cluster.DeleteNetns(context.WithoutCancel(ctx), ns)
		return c, fmt.Errorf("couchbase: %w", err)
	}
	c.DSN = fmt.Sprintf("couchbase://%s/default", c.Nodes[0].Addr())
	return c, nil
}

// mockConfig is the part of /pools/default/buckets/default the engine
// reads: each simulated node's key-value port.
type mockConfig struct {
	NodesExt []struct {
		Hostname string         `json:"hostname"`
		Services map[string]int `json:"services"`
	} `json:"nodesExt"`
}

// startCouchbaseMock starts the JVM in c's namespace on a REST port free
// on the host, reads the key-value ports of every bucket (buckets is the
// mock's --buckets list), and starts the forwarder for all of them; it stops what it started when a step fails (a key-value
// port the mock chose may be taken on the host: Retry starts again).
func startCouchbaseMock(ctx context.Context, c *cluster.Cluster, mdir string, nodes int, buckets string) error {
	ns := c.Options["netns"]
	rest, err := cluster.FreePort(cluster.Loopback)
	if err != nil {
		return err
	}
	logFile := filepath.Join(mdir, "couchbasemock.log")
	pid, err := cluster.Start(cluster.Proc{Path: "ip", Args: []string{"netns", "exec", ns, "java", "-Xmx512m", "-jar", c.Options["jar"],
		"--host", cluster.Loopback, "--port", strconv.Itoa(rest), "--nodes", strconv.Itoa(nodes),
		"--replicas", "1", "--vbuckets", "64", "--buckets", buckets, "--cccp"},
		Dir: mdir, LogFile: logFile})
	if err != nil {
		return err
	}
	fail := func(err error) error { _ = cluster.Kill(pid); return err }
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	inside := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return cluster.DialNetns(ctx, ns, addr) }}}
	defer inside.CloseIdleConnections()
	ports := []int{rest}
	var kv []int // the default bucket's, one per node
	var bucketKV []string
	for i, bucket := range strings.Split(buckets, ",") {
		name := strings.TrimSuffix(bucket, ":")
		var cfg mockConfig
		for {
			cfg, err = readMockConfig(wctx, inside, rest, name)
			if err == nil && len(cfg.NodesExt) == nodes {
				break
			}
			if !cluster.Alive(pid) {
				return fmt.Errorf("CouchbaseMock (pid %d) exited; log %s ends:\n%s", pid, logFile, cluster.LogTail(logFile, 1500))
			}
			if wctx.Err() != nil {
				return fail(fmt.Errorf("CouchbaseMock did not answer on its REST port %d in %s: %v: %w; log ends:\n%s", rest, ns, err, wctx.Err(), cluster.LogTail(logFile, 1500)))
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Each bucket has a key-value port on each simulated node.
		for k, n := range cfg.NodesExt {
			p := n.Services["kv"]
			if p <= 0 || n.Hostname != cluster.Loopback {
				return fail(fmt.Errorf("CouchbaseMock bucket %s node %d: host %q, kv port %d: want %s and a port", name, k+1, n.Hostname, p, cluster.Loopback))
			}
			if i == 0 {
				kv = append(kv, p)
			}
			ports = append(ports, p)
		}
		if i > 0 {
			bucketKV = append(bucketKV, fmt.Sprintf("%s=%d", name, cfg.NodesExt[0].Services["kv"]))
		}
	}
	if !cluster.PortsFree(cluster.Loopback, ports) {
		return fail(fmt.Errorf("a port CouchbaseMock chose in its namespace (%v) is taken on the host", ports))
	}
	list := make([]string, len(ports))
	for i, p := range ports {
		list[i] = strconv.Itoa(p)
	}
	self, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("forwarder: %w", err))
	}
	fwdLog := filepath.Join(mdir, "forwarder.log")
	fpid, err := cluster.Start(cluster.Proc{Path: self, Dir: mdir, LogFile: fwdLog,
		Env: []string{cluster.ForwardEnv + "=" + ns + " " + strconv.Itoa(pid) + " " + strings.Join(list, ",")}})
	if err != nil {
		return fail(err)
	}
	for _, p := range ports {
		if err := cluster.WaitPort(wctx, cluster.Loopback, p, fpid, fwdLog); err != nil {
			_ = cluster.Kill(fpid)
			return fail(fmt.Errorf("forwarder: %w", err))
		}
	}
	c.Options["rest_port"] = strconv.Itoa(rest)
	if len(bucketKV) > 0 {
		// A client bootstraps on a key-value port of its own bucket.
		c.Options["bucket_kv_ports"] = strings.Join(bucketKV, ",")
	}
	c.Options["forwarder_pid"] = strconv.Itoa(fpid)
	c.Nodes = c.Nodes[:0]
	for i, p := range kv {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: fmt.Sprintf("cb%d", i+1), Role: "simulated node (CouchbaseMock)", Host: cluster.Loopback,
			Port: p, Ports: []int{rest}, DataDir: mdir, LogFile: logFile, PID: pid})
	}
	return nil
}

// readMockConfig reads a bucket's configuration from the REST port through
// client.
func readMockConfig(ctx context.Context, client *http.Client, rest int, bucket string) (mockConfig, error) {
	var cfg mockConfig
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:%d/pools/default/buckets/%s", cluster.Loopback, rest, bucket), nil)
	if err != nil {
		return cfg, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return cfg, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return cfg, err
	}
	if resp.StatusCode != http.StatusOK {
		return cfg, fmt.Errorf("GET /pools/default/buckets/%s: %s", bucket, resp.Status)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("bucket configuration: %w", err)
	}
	return cfg, nil
}

// Status implements Engine: each simulated node is up when the JVM runs
// and the bucket configuration, read from the host through the forwarder,
// lists it on its port.
func (couchbaseEngine) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	rest, _ := strconv.Atoi(c.Options["rest_port"])
	var cfg mockConfig
	var cerr error
	if rest > 0 {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		client := &http.Client{Timeout: 5 * time.Second}
		cfg, cerr = readMockConfig(sctx, client, rest, "default")
		client.CloseIdleConnections()
		cancel()
	}
	listed := map[int]bool{}
	for _, n := range cfg.NodesExt {
		listed[n.Services["kv"]] = true
	}
	fpid, _ := strconv.Atoi(c.Options["forwarder_pid"])
	out := make([]cluster.NodeStatus, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		st := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, State: "down", PID: n.PID, Detail: map[string]string{
			"server": CouchbaseMockServer, "netns": c.Options["netns"], "forwarder": "down"}}
		if cluster.Alive(fpid) {
			st.Detail["forwarder"] = "pid " + strconv.Itoa(fpid)
		}
		switch {
		case n.Stopped || !cluster.Alive(n.PID):
			if n.Stopped {
				st.State = "stopped"
			}
			st.PID = 0
		case cerr != nil || rest == 0:
			st.State = "unreachable"
			if cerr != nil {
				st.Detail["error"] = cerr.Error()
			}
		case listed[n.Port]:
			st.State = "up"
		default:
			st.State = "not in the bucket configuration"
		}
		out = append(out, st)
	}
	return out, nil
}

// Down implements Engine: the forwarder and the JVM (SIGTERM, SIGKILL after
// 15 s), then the namespace (named after the directory, so an interrupted
// Up's is found too).
func (couchbaseEngine) Down(ctx context.Context, c *cluster.Cluster) error {
	var errs []error
	if fpid, _ := strconv.Atoi(c.Options["forwarder_pid"]); fpid > 0 {
		if err := cluster.Stop(fpid, 5*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("couchbase: stop the forwarder: %w", err))
		} else {
			delete(c.Options, "forwarder_pid")
		}
	}
	errs = append(errs, c.StopNodes("couchbase", 15*time.Second))
	if err := cluster.DeleteNetns(ctx, cluster.NetnsName(couchbaseNetnsPrefix, c.Dir)); err != nil {
		errs = append(errs, fmt.Errorf("couchbase: %w", err))
	}
	return errors.Join(errs...)
}

// parseCouchbaseOpts reads the engine's one option, buckets=N.
func parseCouchbaseOpts(opts cluster.Options) (extra int, err error) {
	for k, v := range opts.Extra {
		n, err := strconv.Atoi(v)
		if k != "buckets" || err != nil || n < 0 || n > couchbaseMaxBuckets {
			return 0, fmt.Errorf("couchbase: option %s=%q: the engine's one option is buckets=N (0..%d), extra buckets fb1..fbN besides default", k, v, couchbaseMaxBuckets)
		}
		extra = n
	}
	return extra, nil
}
