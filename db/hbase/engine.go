package hbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// The hbase engine runs Apache HBase from Maven Central jars on the
// machine's Java 17, all on loopback:
//
//   - node "master": one JVM running HMaster in standalone mode
//     (hbase.cluster.distributed=false) with its embedded ZooKeeper on a
//     free port (the node's Port) and --nodes region servers inside it
//     (LocalHBaseCluster). Data is hbase.rootdir=file://DIR/data/hbase.
//   - node "rest": the HBase REST gateway (RESTServer), which the hbase
//     adapter talks to: the Go module proxy reachable here refuses the
//     native Go client (github.com/tsuna/gohbase), so the adapter speaks
//     HBase's REST/JSON protocol over HTTP instead (docs/hbase.md). The
//     gateway is one more hop: figures are HBase-through-REST.
//   - nodes "rsN" added later (Add): separate HRegionServer processes with
//     hbase.cluster.distributed=true pointed at the same ZooKeeper and
//     rootdir. The master treats them like its in-process ones; this is
//     what the elasticity experiment needs (an in-process region server
//     cannot be added from another process).
//
// Region server RPC ports of the in-process servers and the master's RPC
// port are chosen by the kernel (port 0, what FreePort does too), since
// LocalHBaseCluster gives every in-process server the same configuration.
// The master's info server listens on a free loopback port (the master
// node's Ports[0]) for its JMX servlet only: Moving reads the assignment
// manager's regions-in-transition count there. Every other web UI is
// disabled (info port -1). Status reads the master's view of every live
// region server — regions and request counts, per server — through the
// gateway's /status/cluster.
//
// With --network hosts (Options.Network) the processes are hosts of a
// virtual network (package vnet) instead, each started inside its host's
// namespace (`ip netns exec`, which execs java: the PID is the JVM's):
//
//   - the master, with its ZooKeeper and the region servers inside it, on
//     host "master" (198.18.0.1): ZooKeeper on 2181, the master's RPC on
//     16000, its info server (JMX) on 16010, the in-process region servers
//     on kernel-chosen ports of the same address (they share the master's
//     configuration, so they cannot have a standard port each, and they
//     are on the master's host, not hosts of their own);
//   - the REST gateway on the master's host too, on 8080 (HBase's
//     default): it is a client of the master, the one address the adapter
//     needs;
//   - every region server that Add starts, a process of its own, on a
//     host of its own (rsN on 198.18.0.2, .3, ...), RPC on 16020; with the
//     option rs-hosts, Up starts the --nodes region servers so too (rs1 on
//     198.18.0.2, ...) and none inside the master.
//
// Every server binds its host's address only (hbase.master.ipc.address,
// hbase.regionserver.ipc.address, hbase.master.info.bindAddress,
// hbase.rest.host) — except the embedded ZooKeeper, on every address of
// the master's host (see siteConfig) — and names itself by it
// (hbase.master.hostname, hbase.regionserver.hostname), so the master and
// ZooKeeper hand out addresses every host can reach. fieldbench's own
// requests (readiness, status, the JMX count) dial from inside the node's
// host. Down removes the network.
//
// The balancer is HBase's SimpleLoadBalancer (region counts, slop 0.2),
// not 2.x's default StochasticLoadBalancer: the study's HBase 0.90
// balanced region counts like it, and its "balanced" criterion is simple
// enough for Moving to apply itself, so Moving ends exactly when the
// balancer has nothing more to do.
//
// Options (cluster up --opt key=value):
//
//	heap=MB              master JVM heap (default 768; region servers
//	                     share it); added region servers get heap/2
//	balancer-period=MS   hbase.balancer.period (default here 10000; HBase's
//	                     own default is 300000): how soon regions move to
//	                     an added region server
//	rest-heap=MB         the REST gateway's JVM heap (default 256). The
//	                     gateway holds every request it has taken until
//	                     its HBase client gives up (minutes, by HBase's
//	                     retries), also after the HTTP client has gone:
//	                     with a region server down under load, 256 MB ran
//	                     out 42 s after it (docs/faults.md, the HBase section)
//	rest-client-timeout=MS
//	                     bounds each operation of the gateway's HBase
//	                     client (hbase.client.operation.timeout, the
//	                     scanner periods, hbase.rpc.timeout and the connect
//	                     timeout: hbaseGatewayTimeouts; for the gateway only;
//	                     default: HBase's, 20 minutes an operation, 60 s an
//	                     RPC). With HBase's, a region server killed under
//	                     load held every gateway thread that reached it,
//	                     and the gateway stopped accepting connections 10
//	                     s after the kill (docs/faults.md, the HBase
//	                     section)
//	rs-hosts=true        (--network hosts only) the --nodes region servers
//	                     are processes of their own, each on a host of its
//	                     own (rs1..rsN), as cluster add starts them, and
//	                     none runs inside the master (--localRegionServers=0):
//	                     every region server can then be killed, paused,
//	                     cut off or limited alone, which an in-process one
//	                     on the master's host cannot
func init() { cluster.Register(hbaseEngine{}) }

type hbaseEngine struct{}

const (
	hbaseVersion = "2.6.1-hadoop3"
	// hbaseCache is the jar cache's name (under the user cache directory).
	hbaseCache = "hbase-" + hbaseVersion
	// hbaseMaxRegionServers bounds --nodes: every in-process region server
	// shares the master's heap and two cores.
	hbaseMaxRegionServers = 8
	// hbaseBalancerPeriodMS is how often the balancer runs unless the
	// balancer-period option says otherwise. HBase's default, 5 minutes,
	// would make an elasticity run's stabilization time mostly waiting for
	// the first balancer run after a region server joins; 10 s keeps that
	// wait small next to the request-set times while costing nothing on a
	// balanced cluster (the balancer returns at once).
	hbaseBalancerPeriodMS = 10000
	// hbaseSlop is hbase.regions.slop: a cluster is balanced when every
	// server holds between floor(avg*(1-slop)) and ceil(avg*(1+slop))
	// regions (SimpleLoadBalancer's rule, which Moving applies too).
	hbaseSlop = 0.2

	// The standard ports of HBase 2 and its REST gateway: the ports of the
	// processes on hosts of their own (on loopback they are free ports).
	hbaseZKPort         = 2181
	hbaseMasterPort     = 16000
	hbaseMasterInfoPort = 16010
	hbaseRSPort         = 16020
	hbaseRESTPort       = 8080
)

// hbaseArtifacts are the jars of the server and the REST gateway. No
// hbase-rest is published for the hadoop3 build, so the 2.6.1 one is used
// without its own HBase and Hadoop dependencies (the hadoop3 build's are on
// the classpath): same HBase sources, same API.
var hbaseArtifacts = []string{
	"org.apache.hbase:hbase-server:" + hbaseVersion,
	"org.apache.hbase:hbase-client:" + hbaseVersion,
	"org.apache.hbase:hbase-rest:2.6.1;exclude=org.apache.hbase:*,org.apache.hadoop:*",
}

// hbaseJVMFlags open the JDK internals HBase 2.6 (and its Hadoop and Netty)
// reach into; without them Java 17 refuses at startup.
var hbaseJVMFlags = []string{
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
	"-Djava.net.preferIPv4Stack=true",
	"-XX:+UseG1GC",
}

// Name implements Engine.
func (hbaseEngine) Name() string { return Name }

// NodeNames: master, rest (the REST gateway, on the master's host), then
// the region server processes: rs1..rsN with the option rs-hosts, and the
// added ones numbered after the --nodes region servers either way (in the
// master, those have no node of their own).
func (hbaseEngine) NodeNames(nodes int, extra map[string]string, adds int) []string {
	first := max(nodes, 1) + 1
	if on, _ := strconv.ParseBool(extra["rs-hosts"]); on {
		first = 1
	}
	names := []string{"master", "rest"}
	for k := first; k < max(nodes, 1)+1+adds; k++ {
		names = append(names, "rs"+strconv.Itoa(k))
	}
	return names
}

// Hosts implements Hoster: the engine starts its nodes on hosts too.
func (hbaseEngine) Hosts() (bool, string) { return true, "" }

// Budgets implements cluster.BudgetHolder: every process is a node: the master (with the region servers it runs in its JVM: --nodes N holds N-1 of them there, so the master's budget holds them too), the REST gateway and each region server added, each started through cluster.Start with its node named.
func (hbaseEngine) Budgets() (bool, string) { return true, "" }

// CheckOptions implements OptionChecker.
func (hbaseEngine) CheckOptions(o cluster.Options) error { _, err := parseHBaseOpts(o); return err }

// Check implements Engine: Java 17 runs HBase; Maven fetches the jars the
// first time (later runs use the cache).
func (hbaseEngine) Check() error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("java not found in PATH: install the Debian package openjdk-17-jre-headless (scripts/install-servers.sh): %w", err)
	}
	if root, err := cluster.JarCacheDir(); err == nil {
		if _, err := os.Stat(filepath.Join(root, hbaseCache, cluster.JarsDoneFile)); err == nil {
			return nil
		}
	}
	return cluster.CheckMaven()
}

type hbaseOpts struct {
	regionServers int
	heapMB        int
	restHeapMB    int
	// restClientMS bounds the gateway's HBase client operations (0:
	// HBase's defaults).
	restClientMS int
	balancerMS   int
	// rsHosts starts the region servers as processes on hosts of their
	// own instead of inside the master (option rs-hosts).
	rsHosts bool
}

func parseHBaseOpts(o cluster.Options) (hbaseOpts, error) {
	h := hbaseOpts{regionServers: max(o.Nodes, 1), heapMB: 768, restHeapMB: 256, balancerMS: hbaseBalancerPeriodMS}
	if h.regionServers > hbaseMaxRegionServers {
		return h, fmt.Errorf("hbase: --nodes %d: at most %d region servers in the master process (add more with cluster add)", o.Nodes, hbaseMaxRegionServers)
	}
	for k, v := range o.Extra {
		var err error
		switch k {
		case "heap":
			h.heapMB, err = strconv.Atoi(v)
			if err == nil && h.heapMB < 256 {
				err = errors.New("want at least 256 (MB)")
			}
		case "rest-heap":
			h.restHeapMB, err = strconv.Atoi(v)
			if err == nil && h.restHeapMB < 128 {
				err = errors.New("want at least 128 (MB)")
			}
		case "rest-client-timeout":
			h.restClientMS, err = strconv.Atoi(v)
			if err == nil && h.restClientMS < 100 {
				err = errors.New("want at least 100 (ms)")
			}
		case "balancer-period":
			h.balancerMS, err = strconv.Atoi(v)
			if err == nil && h.balancerMS < 1000 {
				err = errors.New("want at least 1000 (ms)")
			}
		case "rs-hosts":
			h.rsHosts, err = strconv.ParseBool(v)
			if err == nil && h.rsHosts && o.Network != cluster.NetworkHosts {
				err = errors.New("region servers on hosts of their own need --network hosts")
			}
		default:
			return h, fmt.Errorf("hbase: unknown option %q (known: heap, rest-heap, rest-client-timeout, balancer-period, rs-hosts)", k)
		}
		if err != nil {
			return h, fmt.Errorf("hbase: option %s=%q: %w", k, v, err)
		}
	}
	return h, nil
}

// Up implements Engine.
func (e hbaseEngine) Up(ctx context.Context, dir string, opts cluster.Options) (*cluster.Cluster, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	ho, err := parseHBaseOpts(opts)
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hbase: cluster directory: %w", err)
	}
	jars, err := cluster.FetchJars(ctx, hbaseArtifacts, hbaseCache)
	if err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	local := ho.regionServers
	if ho.rsHosts {
		local = 0
	}
	c := &cluster.Cluster{Engine: e.Name(), Dir: dir, Version: hbaseVersion, Started: time.Now().UTC(), Budget: opts.Budget, Options: map[string]string{
		"regionservers":   strconv.Itoa(local),
		"heap":            strconv.Itoa(ho.heapMB),
		"rest-heap":       strconv.Itoa(ho.restHeapMB),
		"balancer-period": strconv.Itoa(ho.balancerMS),
		"jars":            jars,
		"rootdir":         "file://" + filepath.Join(dir, "data", "hbase"),
	}}
	if ho.restClientMS > 0 {
		c.Options["rest-client-timeout"] = strconv.Itoa(ho.restClientMS)
	}
	master := &cluster.Node{Name: "master", Role: "master", Host: cluster.Loopback, DataDir: filepath.Join(dir, "data")}
	rest := &cluster.Node{Name: "rest", Role: "rest", Host: cluster.Loopback, DataDir: filepath.Join(dir, "data")}
	startMaster := func(int) error {
		p, err := cluster.FreePorts(cluster.Loopback, 2)
		if err != nil {
			return err
		}
		master.Port, master.Ports = p[0], p[1:]
		return e.startNode(ctx, c, master, 180*time.Second)
	}
	startREST := func(int) error {
		p, err := cluster.FreePort(cluster.Loopback)
		if err != nil {
			return err
		}
		rest.Port = p
		return e.startNode(ctx, c, rest, 180*time.Second)
	}
	attempts := 3
	if opts.Network == cluster.NetworkHosts {
		if err := cluster.CheckNetwork(e.Name(), cluster.NetworkHosts); err != nil {
			return nil, err
		}
		c.Network = cluster.NetworkHosts
		c.Options["network"] = cluster.NetworkHosts
		if err := vnet.ForDir(dir).Create(ctx); err != nil {
			return c, fmt.Errorf("hbase: %w", err)
		}
		h, err := cluster.AddNodeHost(ctx, c, master.Name)
		if err != nil {
			return c, fmt.Errorf("hbase: %w", err)
		}
		// The gateway shares the master's host: standard ports of an
		// address nothing else binds, no port to lose to a race, so no
		// retry.
		master.Host, master.Netns, master.Port, master.Ports = h.Addr.String(), h.NS, hbaseZKPort, []int{hbaseMasterInfoPort}
		rest.Host, rest.Netns, rest.Port = h.Addr.String(), h.NS, hbaseRESTPort
		startMaster = func(int) error { return e.startNode(ctx, c, master, 180*time.Second) }
		startREST = func(int) error { return e.startNode(ctx, c, rest, 180*time.Second) }
		attempts = 1
	}
	if err := cluster.Retry(attempts, startMaster); err != nil {
		return c, fmt.Errorf("hbase: start master: %w", err)
	}
	c.Nodes = append(c.Nodes, master)
	if err := c.Save(); err != nil {
		return c, err
	}
	var need []string
	if ho.rsHosts {
		c.Options["rs-hosts"] = "true"
		for i := 1; i <= ho.regionServers; i++ {
			n, err := e.startOnHost(ctx, c, fmt.Sprintf("rs%d", i))
			if err != nil {
				return c, err
			}
			need = append(need, n.Addr())
			c.Nodes = append(c.Nodes, n)
			if err := c.Save(); err != nil {
				return c, err
			}
		}
	}
	if err := cluster.Retry(attempts, startREST); err != nil {
		return c, fmt.Errorf("hbase: start REST gateway: %w", err)
	}
	c.Nodes = append(c.Nodes, rest)
	c.DSN = "hbase://" + rest.Addr()
	if err := c.Save(); err != nil {
		return c, err
	}
	if err := hbaseWaitReady(ctx, c, ho.regionServers, need, time.Time{}, 120*time.Second); err != nil {
		return c, err
	}
	return c, nil
}

// startOnHost starts a region server process named name on a host of its
// own (the first node address no process has), RPC on 16020; on failure
// the host is removed again.
func (e hbaseEngine) startOnHost(ctx context.Context, c *cluster.Cluster, name string) (*cluster.Node, error) {
	h, err := cluster.AddNodeHost(ctx, c, name)
	if err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	n := &cluster.Node{Name: name, Role: "regionserver", Host: h.Addr.String(), Netns: h.NS, Port: hbaseRSPort, DataDir: filepath.Join(c.Dir, "data")}
	if err := e.startNode(ctx, c, n, 180*time.Second); err != nil {
		_ = vnet.ForDir(c.Dir).RemoveHost(context.WithoutCancel(ctx), name)
		return nil, fmt.Errorf("hbase: start region server %s: %w", name, err)
	}
	return n, nil
}

// siteConfig is a node's hbase-site.xml: loopback (or the node's host's
// address), free, standard or kernel-chosen ports, no web UIs, data under
// the cluster directory.
func (e hbaseEngine) siteConfig(c *cluster.Cluster, n *cluster.Node) (map[string]string, error) {
	var zk *cluster.Node
	if n.Role == "master" {
		zk = n
	} else {
		m, err := c.Node("master")
		if err != nil {
			return nil, err
		}
		zk = m
	}
	data := filepath.Join(c.Dir, "data")
	p := map[string]string{
		"hbase.cluster.distributed":              "false",
		"hbase.rootdir":                          c.Options["rootdir"],
		"hbase.tmp.dir":                          filepath.Join(data, "tmp-"+n.Name),
		"hbase.zookeeper.quorum":                 zk.Host,
		"hbase.zookeeper.property.clientPort":    strconv.Itoa(zk.Port),
		"hbase.zookeeper.property.dataDir":       filepath.Join(data, "zookeeper"),
		"hbase.unsafe.stream.capability.enforce": "false",
		"hbase.master.hostname":                  n.Host,
		"hbase.regionserver.hostname":            n.Host,
		"hbase.master.ipc.address":               n.Host,
		"hbase.regionserver.ipc.address":         n.Host,
		// Ports are set here: 0 (kernel-chosen) for RPC, -1 (off) or a
		// free port for info servers; "random ports" would override them.
		"hbase.localcluster.assign.random.ports": "false",
		"hbase.master.port":                      "0",
		"hbase.regionserver.port":                "0",
		"hbase.master.info.port":                 "-1",
		"hbase.master.info.bindAddress":          n.Host,
		"hbase.regionserver.info.port":           "-1",
		"hbase.balancer.period":                  c.Options["balancer-period"],
		"hbase.master.loadbalancer.class":        "org.apache.hadoop.hbase.master.balancer.SimpleLoadBalancer",
		"hbase.regions.slop":                     strconv.FormatFloat(hbaseSlop, 'f', -1, 64),
		// The master refreshes its regions-in-transition metric (what
		// Moving reads) in this chore, every 60 s by default: a move that
		// finished would show as in transition for up to a minute.
		"hbase.assignment.rit.chore.interval.msec": "1000",
		// A single machine: do not wait 4.5 s for more region servers.
		"hbase.master.wait.on.regionservers.mintostart": "1",
		"hbase.master.wait.on.regionservers.timeout":    "1000",
	}
	switch n.Role {
	case "master":
		if len(n.Ports) > 0 {
			p["hbase.master.info.port"] = strconv.Itoa(n.Ports[0])
		}
		if n.Netns != "" {
			p["hbase.master.port"] = strconv.Itoa(hbaseMasterPort)
			// The embedded ZooKeeper (MiniZooKeeperCluster) listens on
			// loopback unless told, and tells whether it is up by
			// connecting to localhost, whatever address it was given: on
			// the host's address only it never looks up and the master
			// exits ("Waiting for startup of standalone server", seen
			// here). So it listens on every address of the master's host:
			// its 198.18.0.N and its own loopback, which nothing outside
			// the host reaches.
			p["hbase.zookeeper.property.clientPortAddress"] = "0.0.0.0"
		}
	case "regionserver":
		p["hbase.cluster.distributed"] = "true"
		p["hbase.regionserver.port"] = strconv.Itoa(n.Port)
	case "rest":
		p["hbase.rest.host"] = n.Host
		p["hbase.rest.port"] = strconv.Itoa(n.Port)
		p["hbase.rest.info.port"] = "-1"
		p["hbase.rest.threads.max"] = "200"
		if ms := c.Options["rest-client-timeout"]; ms != "" {
			for _, k := range hbaseGatewayTimeouts {
				p[k] = ms
			}
		}
	}
	return p, nil
}

// hbaseGatewayTimeouts are the gateway's HBase client settings that
// rest-client-timeout sets. The two scanner periods bound a scan the way
// the operation timeout bounds a get or a put: without them a scanner's
// calls (every userline and timeline the gateway serves) had HBase's 60 s
// while its gets and puts had 10 s, and in CI under load (2026-12-02,
// docs/testing.md) the fault matrix's four clients were held for 30 s,
// neither answered nor failed, after the master's restart.
var hbaseGatewayTimeouts = []string{
	"hbase.client.operation.timeout", "hbase.client.meta.operation.timeout",
	"hbase.client.scanner.timeout.period", "hbase.client.meta.scanner.timeout.period",
	"hbase.rpc.timeout", "hbase.ipc.client.socket.timeout.connect",
}

// startNode writes n's configuration and starts its JVM, waiting until its
// port listens (ZooKeeper's for the master). Limits are generous: on a
// loaded 2-core machine (load average 25-30, seen here) a JVM took over a
// minute to listen; a process that dies (a port taken) fails at once.
func (e hbaseEngine) startNode(ctx context.Context, c *cluster.Cluster, n *cluster.Node, limit time.Duration) error {
	confDir := filepath.Join(c.Dir, "conf", n.Name)
	logDir := filepath.Join(c.Dir, "logs")
	for _, d := range []string{confDir, logDir, n.DataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("hbase: %w", err)
		}
	}
	n.Config = filepath.Join(confDir, "hbase-site.xml")
	n.LogFile = filepath.Join(logDir, n.Name+".log")
	props, err := e.siteConfig(c, n)
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.Config, []byte(hbaseSiteXML(props)), 0o644); err != nil {
		return fmt.Errorf("hbase: write %s: %w", n.Config, err)
	}
	log4j := filepath.Join(confDir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte(hbaseLog4j(n.LogFile)), 0o644); err != nil {
		return fmt.Errorf("hbase: write %s: %w", log4j, err)
	}
	heap, _ := strconv.Atoi(c.Options["heap"])
	var class string
	args := []string{}
	switch n.Role {
	case "master":
		class = "org.apache.hadoop.hbase.master.HMaster"
	case "rest":
		class, heap = "org.apache.hadoop.hbase.rest.RESTServer", 256
		if h, err := strconv.Atoi(c.Options["rest-heap"]); err == nil {
			heap = h // a cluster started before the option has none: 256
		}
	case "regionserver":
		class, heap = "org.apache.hadoop.hbase.regionserver.HRegionServer", max(heap/2, 256)
	default:
		return fmt.Errorf("hbase: unknown role %q of node %s", n.Role, n.Name)
	}
	tmp, err := cluster.JVMTempDir(n.DataDir)
	if err != nil {
		return err
	}
	args = append(args, "-Xmx"+strconv.Itoa(heap)+"m", tmp)
	args = append(args, hbaseJVMFlags...)
	args = append(args,
		"-Dlog4j.configuration=file:"+log4j,
		"-Dhbase.log.dir="+logDir,
		"-cp", confDir+string(os.PathListSeparator)+filepath.Join(c.Options["jars"], "*"),
		class)
	if n.Role == "master" {
		args = append(args, "--localRegionServers="+c.Options["regionservers"])
	}
	args = append(args, "start")
	argv := n.Command(append([]string{"java"}, args...)...)
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: n.DataDir, LogFile: n.LogFile, Cluster: c, Node: n})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		_ = cluster.Kill(pid)
		return fmt.Errorf("hbase %s: %w", n.Name, err)
	}
	n.PID, n.Stopped = pid, false
	return nil
}

func hbaseSiteXML(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- written by fieldbench: its address only, no web UIs -->\n<configuration>\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, hbaseXMLEscape(props[k]))
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

func hbaseXMLEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// hbaseLog4j sends the JVM's log (reload4j, log4j 1 syntax) to the node's
// log file — the same file that gets its stdout and stderr, both appending.
func hbaseLog4j(file string) string {
	return `# written by fieldbench
log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=` + file + `
log4j.appender.FILE.Append=true
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
log4j.logger.org.apache.hadoop.hbase.zookeeper=WARN
log4j.logger.org.apache.hbase.thirdparty=WARN
`
}

// hbaseClusterStatus is the REST gateway's /status/cluster (JSON): the
// master's view of every region server.
type hbaseClusterStatus struct {
	LiveNodes []struct {
		Name        string `json:"name"`
		StartCode   int64  `json:"startCode"`
		Requests    int64  `json:"requests"`
		HeapSizeMB  int64  `json:"heapSizeMB"`
		MaxHeapMB   int64  `json:"maxHeapSizeMB"`
		RegionsList []struct {
			// Name is the region's name, which the gateway sends in
			// base64 ("aGJhc2U6bWV0YSwsMQ==" is hbase:meta,,1): as
			// []byte, encoding/json decodes it.
			Name          []byte `json:"name"`
			ReadRequests  int64  `json:"readRequestsCount"`
			WriteRequests int64  `json:"writeRequestsCount"`
			StorefileMB   int64  `json:"storefileSizeMB"`
			MemStoreMB    int64  `json:"memStoreSizeMB"`
		} `json:"Region"`
	} `json:"LiveNodes"`
	DeadNodes []string `json:"DeadNodes"`
	Regions   int      `json:"regions"`
	Requests  int64    `json:"requests"`
}

func hbaseREST(c *cluster.Cluster) (*cluster.Node, error) {
	n, err := c.Node("rest")
	if err != nil {
		return nil, err
	}
	if n.Stopped || !cluster.Alive(n.PID) {
		return nil, fmt.Errorf("hbase: the REST gateway (pid %d) is not running", n.PID)
	}
	return n, nil
}

var hbaseHTTP = &http.Client{Timeout: 10 * time.Second}

// hbaseHostClients are the HTTP clients of hosts, by namespace: one each,
// so their idle connections are reused across polls.
var hbaseHostClients sync.Map

// hbaseClient is the HTTP client for requests to n: on a host it dials
// from inside the host's namespace, the only place its address is
// reachable from.
func hbaseClient(n *cluster.Node) *http.Client {
	if n.Netns == "" {
		return hbaseHTTP
	}
	if hc, ok := hbaseHostClients.Load(n.Netns); ok {
		return hc.(*http.Client)
	}
	nd := &cluster.Node{Netns: n.Netns}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return nd.Dial(ctx, addr) }
	hc, _ := hbaseHostClients.LoadOrStore(n.Netns, &http.Client{Transport: tr, Timeout: hbaseHTTP.Timeout})
	return hc.(*http.Client)
}

func hbaseGet(ctx context.Context, rest *cluster.Node, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rest.Addr()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hbaseClient(rest).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, cluster.Tail(strings.TrimSpace(string(b)), 300))
	}
	if into == nil {
		return nil
	}
	if s, ok := into.(*string); ok {
		*s = string(b)
		return nil
	}
	return json.Unmarshal(b, into)
}

func hbaseStatus(ctx context.Context, c *cluster.Cluster) (*hbaseClusterStatus, error) {
	rest, err := hbaseREST(c)
	if err != nil {
		return nil, err
	}
	var st hbaseClusterStatus
	if err := hbaseGet(ctx, rest, "/status/cluster", &st); err != nil {
		return nil, fmt.Errorf("hbase: cluster status: %w", err)
	}
	return &st, nil
}

// hbaseWaitSettled waits until the cluster serves its tables again:
// hbase:meta answers a scan through the gateway and none of its regions
// is in transition. A restarted master is live, and answers the status
// hbaseWaitReady asks, before the regions its killed region servers held
// are assigned again: requests in that time hang without an error (seen
// in CI under load: none answered in the 30 s after a master's restart
// was reported done). So a master's restart is done when it serves.
func hbaseWaitSettled(ctx context.Context, c *cluster.Cluster, limit time.Duration) error {
	rest, err := hbaseREST(c)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		var scan string
		err := hbaseGet(wctx, rest, hbaseMetaStateScan, &scan)
		rit, err := hbaseMetaInTransition([]byte(scan), err)
		if err == nil && len(rit) == 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("regions in transition: %v", rit)
		}
		last = err
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("hbase: the regions were not served again within %v of the master's start: %v", limit, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// hbaseWaitReady waits until at least want region servers are live, the
// given ones (host:port) among them with a start code (start time, ms) not
// before since — so a restarted server is not mistaken for its previous
// run, which the master lists until its ZooKeeper session expires — and
// the master has finished initializing (it answers the namespace list,
// which needs hbase:meta).
func hbaseWaitReady(ctx context.Context, c *cluster.Cluster, want int, need []string, since time.Time, limit time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	// gateway says the last poll failed at the REST gateway itself (no
	// answer, or an error status): what is not ready is then the gateway,
	// whatever the master's log says.
	gateway := false
	for {
		st, err := hbaseStatus(wctx, c)
		gateway = err != nil
		if err == nil {
			live := map[string]bool{}
			for _, n := range st.LiveNodes {
				// Start codes are the server's clock at start, in ms; allow
				// a second of rounding.
				live[n.Name] = live[n.Name] || n.StartCode >= since.UnixMilli()-1000
			}
			err = fmt.Errorf("%d of %d region servers live", len(st.LiveNodes), want)
			missing := false
			for _, a := range need {
				if !live[a] {
					missing = true
					err = fmt.Errorf("region server %s not live yet", a)
				}
			}
			if len(st.LiveNodes) >= want && !missing {
				rest, _ := hbaseREST(c)
				var ns string
				err = hbaseGet(wctx, rest, "/namespaces", &ns)
				if err == nil && st.Regions >= 1 {
					return nil
				}
			}
		}
		last = err
		for _, n := range c.Nodes {
			if !n.Stopped && !cluster.Alive(n.PID) {
				return fmt.Errorf("hbase: %s (pid %d) died; log %s ends:\n%s", n.Name, n.PID, n.LogFile, cluster.LogTail(n.LogFile, 1500))
			}
		}
		select {
		case <-wctx.Done():
			who := "master"
			if gateway {
				who = "rest"
			}
			m, _ := c.Node(who)
			var log string
			if m != nil {
				log = cluster.LogTail(m.LogFile, 1500)
			}
			if gateway {
				return fmt.Errorf("hbase: not ready within %v: %w: the REST gateway, through which readiness is read, did not answer (last: %v); gateway log ends:\n%s", limit, wctx.Err(), last, log)
			}
			return fmt.Errorf("hbase: not ready within %v: %w (last: %v); master log ends:\n%s", limit, wctx.Err(), last, log)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Status implements Engine: one line per process (master, rest, added
// region servers) and one per live region server with its regions and
// request counts as the master last heard them (region servers report
// every 3 s). requests is the sum of the read and write request counts of
// the regions the server holds now (counted since each region opened
// there); server_requests is the server's own total.
func (e hbaseEngine) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	var out []cluster.NodeStatus
	byAddr := map[string]*cluster.Node{}
	for _, n := range c.Nodes {
		state := "up"
		if n.Stopped || !cluster.Alive(n.PID) {
			state = "down"
		}
		if n.Role == "regionserver" {
			byAddr[n.Addr()] = n
			continue // reported with the live region servers below
		}
		ns := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, State: state, PID: n.PID, Detail: map[string]string{}}
		cluster.AddHostCounters(ctx, n, ns.Detail)
		if n.Role == "master" {
			ns.Detail["zookeeper"] = n.Addr()
			ns.Detail["local_regionservers"] = c.Options["regionservers"]
			if rit, err := hbaseRIT(ctx, c); err == nil {
				ns.Detail["regions_in_transition"] = strconv.FormatInt(rit, 10)
			}
		}
		out = append(out, ns)
	}
	st, err := hbaseStatus(ctx, c)
	if err != nil {
		return out, err
	}
	seen := map[string]bool{}
	local := 0
	for _, rs := range st.LiveNodes {
		var reads, writes, store int64
		for _, r := range rs.RegionsList {
			reads += r.ReadRequests
			writes += r.WriteRequests
			store += r.StorefileMB
		}
		ns := cluster.NodeStatus{Addr: rs.Name, State: "up", Detail: map[string]string{
			"regions":         strconv.Itoa(len(rs.RegionsList)),
			"requests":        strconv.FormatInt(reads+writes, 10),
			"read_requests":   strconv.FormatInt(reads, 10),
			"write_requests":  strconv.FormatInt(writes, 10),
			"server_requests": strconv.FormatInt(rs.Requests, 10),
			"storefile_mb":    strconv.FormatInt(store, 10),
			"heap_mb":         fmt.Sprintf("%d/%d", rs.HeapSizeMB, rs.MaxHeapMB),
		}}
		if n, ok := byAddr[rs.Name]; ok {
			ns.Name, ns.Role, ns.PID = n.Name, "regionserver", n.PID
			cluster.AddHostCounters(ctx, n, ns.Detail)
			seen[rs.Name] = true
		} else {
			local++
			ns.Name, ns.Role = fmt.Sprintf("local-rs%d", local), "regionserver (in master)"
			if m, err := c.Node("master"); err == nil {
				ns.PID = m.PID
			}
		}
		out = append(out, ns)
	}
	for _, n := range c.Nodes {
		if n.Role == "regionserver" && !seen[n.Addr()] {
			state := "down"
			if !n.Stopped && cluster.Alive(n.PID) {
				state = "starting"
			}
			ns := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, State: state, PID: n.PID, Detail: map[string]string{}}
			cluster.AddHostCounters(ctx, n, ns.Detail)
			out = append(out, ns)
		}
	}
	return out, nil
}

// Down implements Engine: the gateway, then added region servers (newest
// first), then the master with its in-process region servers and
// ZooKeeper, each by PID with SIGTERM and a grace period (SIGKILL after).
// On a virtual network it then removes every namespace and interface of
// the network, found from the directory alone.
func (e hbaseEngine) Down(ctx context.Context, c *cluster.Cluster) error {
	order := make([]*cluster.Node, 0, len(c.Nodes))
	for _, role := range []string{"rest", "regionserver", "master"} {
		for i := len(c.Nodes) - 1; i >= 0; i-- {
			if c.Nodes[i].Role == role {
				order = append(order, c.Nodes[i])
			}
		}
	}
	var errs []error
	for _, n := range order {
		grace := 20 * time.Second
		if n.Role == "master" {
			// A standalone master with in-process region servers does not
			// finish a SIGTERM shutdown in 20 s (measured); every write it
			// acknowledged is in its write-ahead log on the local file
			// system and is replayed on the next start, so it gets a short
			// grace before SIGKILL.
			grace = 5 * time.Second
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < grace {
			grace = max(time.Until(dl), time.Second)
		}
		if err := cluster.Stop(n.PID, grace); err != nil {
			errs = append(errs, err)
			continue
		}
		n.PID, n.Stopped = 0, true
	}
	if err := c.Save(); err != nil {
		errs = append(errs, err)
	}
	if c.OnHosts() {
		errs = append(errs, cluster.DestroyNetwork(ctx, c.Dir))
	}
	return errors.Join(errs...)
}

// Add implements Grower: a new HRegionServer process joining the master's
// ZooKeeper. It returns once the master lists it as live; regions move to
// it when the balancer next runs (option balancer-period).
func (e hbaseEngine) Add(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	if _, err := hbaseREST(c); err != nil {
		return nil, err
	}
	// Numbered after the in-process ones (local-rs1..N in Status).
	k, _ := strconv.Atoi(c.Options["regionservers"])
	for _, n := range c.Nodes {
		if n.Role == "regionserver" {
			k++
		}
	}
	name := fmt.Sprintf("rs%d", k+1)
	n := &cluster.Node{Name: name, Role: "regionserver", Host: cluster.Loopback, DataDir: filepath.Join(c.Dir, "data")}
	since := time.Now()
	if c.OnHosts() {
		var err error
		if n, err = e.startOnHost(ctx, c, name); err != nil {
			return nil, err
		}
	} else {
		err := cluster.Retry(3, func(int) error {
			p, err := cluster.FreePort(cluster.Loopback)
			if err != nil {
				return err
			}
			n.Port = p
			return e.startNode(ctx, c, n, 180*time.Second)
		})
		if err != nil {
			return nil, fmt.Errorf("hbase: add region server: %w", err)
		}
	}
	c.Nodes = append(c.Nodes, n)
	if err := c.Save(); err != nil {
		return n, err
	}
	return n, hbaseWaitReady(ctx, c, 1, []string{n.Addr()}, since, 120*time.Second)
}

// Kill implements Killer: SIGKILL of one process. Killing "master" takes
// its in-process region servers and ZooKeeper with it; killing an added
// region server is the crash the master recovers from (its regions are
// reassigned after the ZooKeeper session expires).
func (e hbaseEngine) Kill(ctx context.Context, c *cluster.Cluster, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	if err := cluster.Kill(n.PID); err != nil {
		return err
	}
	n.PID, n.Stopped = 0, true
	return c.Save()
}

// Restart implements Killer: starts a stopped or killed process again on
// its ports, configuration and data, and waits until it serves (a region
// server: until the master lists it as live).
func (e hbaseEngine) Restart(ctx context.Context, c *cluster.Cluster, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	if !n.Stopped && cluster.Alive(n.PID) {
		return fmt.Errorf("hbase: %s (pid %d) is running", n.Name, n.PID)
	}
	if err := hbaseRestartPorts(ctx, n); err != nil {
		return err
	}
	since := time.Now()
	if err := e.startNode(ctx, c, n, 180*time.Second); err != nil {
		return err
	}
	if err := c.Save(); err != nil {
		return err
	}
	switch n.Role {
	case "regionserver":
		return hbaseWaitReady(ctx, c, 1, []string{n.Addr()}, since, 90*time.Second)
	case "master":
		rs, _ := strconv.Atoi(c.Options["regionservers"])
		if err := hbaseWaitReady(ctx, c, rs, nil, since, 120*time.Second); err != nil {
			return err
		}
		return hbaseWaitSettled(ctx, c, 120*time.Second)
	}
	return nil
}

// hbaseRestartPorts checks, before n starts again on the ports it had,
// that they are still free: while a node is down any process may bind a
// port of its (FreePort picks below the ephemeral range, so an outgoing
// connection cannot, but another listener can). A port only fieldbench
// reads — the master's info server (JMX), an added region server's RPC
// port, which it registers in ZooKeeper — is picked anew and the node's
// configuration, written at every start, follows. A port others hold on
// to cannot move under them: ZooKeeper's (the gateway and the region
// servers dial it) and the gateway's (the DSN every client has) are
// refused, naming what holds them, at once rather than after the JVM's
// start fails. Nodes on hosts have their host's address to themselves.
func hbaseRestartPorts(ctx context.Context, n *cluster.Node) error {
	taken := cluster.AwaitPorts(ctx, n)
	if len(taken) == 0 {
		return nil
	}
	var fixed []int // ports others know the node by: they cannot move
	for _, p := range taken {
		switch {
		case n.Role == "master" && len(n.Ports) > 0 && p == n.Ports[0], n.Role == "regionserver" && p == n.Port:
			np, err := cluster.FreePort(n.Host)
			if err != nil {
				return fmt.Errorf("hbase: %s: its port %d is taken: %w", n.Name, p, err)
			}
			if p == n.Port {
				n.Port = np
			} else {
				n.Ports[0] = np
			}
		default:
			fixed = append(fixed, p)
		}
	}
	if len(fixed) == 0 {
		return nil
	}
	what := "the DSN names it"
	if n.Role == "master" {
		what = "ZooKeeper's port, which the gateway and the region servers dial"
	}
	return fmt.Errorf("hbase: %s cannot restart (%s): %s", n.Name, what, cluster.PortsTaken(n.Host, fixed))
}

// errNoRIT says the master's JMX servlet answered without the
// AssignmentManager's ritCount: not known now, but not an error either.
var errNoRIT = errors.New("hbase: master JMX has no AssignmentManager ritCount yet")

// hbaseRIT reads the master's regions-in-transition count from its JMX
// servlet (the AssignmentManager bean's ritCount): one small HTTP GET,
// cheap enough to poll every second.
func hbaseRIT(ctx context.Context, c *cluster.Cluster) (int64, error) {
	m, err := c.Node("master")
	if err != nil {
		return 0, err
	}
	if len(m.Ports) == 0 {
		return 0, errors.New("hbase: the master has no info port (cluster started by an older fieldbench): start it again")
	}
	if m.Stopped || !cluster.Alive(m.PID) {
		return 0, fmt.Errorf("hbase: the master (pid %d) is not running", m.PID)
	}
	info := &cluster.Node{Host: m.Host, Port: m.Ports[0], Netns: m.Netns}
	var out struct {
		Beans []struct {
			RIT *int64 `json:"ritCount"`
		} `json:"beans"`
	}
	if err := hbaseGet(ctx, info, "/jmx?qry=Hadoop:service=HBase,name=Master,sub=AssignmentManager", &out); err != nil {
		return 0, fmt.Errorf("hbase: master JMX: %w", err)
	}
	if len(out.Beans) == 0 || out.Beans[0].RIT == nil {
		// The bean appears once the master has initialized, and Hadoop's
		// metrics system can serve it without attributes for a moment
		// while it refreshes its JMX cache (seen in CI right after a
		// region server joined).
		return 0, errNoRIT
	}
	return *out.Beans[0].RIT, nil
}

// hbaseUneven applies SimpleLoadBalancer's rule to region counts per live
// server: the
// cluster needs balancing when a server is idle while another holds more
// than one region, or when a count lies outside [floor(avg*(1-slop)),
// ceil(avg*(1+slop))]. With fewer than two servers nothing can move.
func hbaseUneven(counts []int) bool {
	if len(counts) < 2 {
		return false
	}
	sum, lo, hi := 0, counts[0], counts[0]
	for _, n := range counts {
		sum += n
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo == 0 && hi > 1 {
		return true
	}
	avg := float64(sum) / float64(len(counts))
	floor := int(math.Floor(avg * (1 - hbaseSlop)))
	ceil := int(math.Ceil(avg * (1 + hbaseSlop)))
	return hi > ceil || lo < floor
}

// Moving implements Mover: data moves while the master has regions in
// transition (assignments, moves, splits, a crashed server's regions being
// reassigned), while an added region server process runs but the master
// does not list it yet, and while region counts per server are uneven by
// the balancer's own rule (after a region server joins, until the balancer
// — every balancer-period — has moved regions to it). Region counts come
// from the region servers' reports (every 3 s), so a finished move shows
// up to 3 s late; the transition count is the master's, live.
func (e hbaseEngine) Moving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	rit, err := hbaseRIT(ctx, c)
	var why []string
	switch {
	case errors.Is(err, errNoRIT):
		// Unknown is reported as moving: a settle wait then polls again
		// rather than calling the cluster settled on a missing figure.
		why = append(why, "the master's transition count is not published yet")
	case err != nil:
		return false, "", err
	}
	st, err := hbaseStatus(ctx, c)
	if err != nil {
		return false, "", err
	}
	if rit > 0 {
		why = append(why, fmt.Sprintf("%d region(s) in transition", rit))
	}
	live := map[string]bool{}
	var counts, withMeta []int
	var per []string
	for _, rs := range st.LiveNodes {
		live[rs.Name] = true
		n := 0
		for _, r := range rs.RegionsList {
			if !strings.HasPrefix(string(r.Name), "hbase:meta,") {
				n++
			}
		}
		counts = append(counts, n)
		withMeta = append(withMeta, len(rs.RegionsList))
		per = append(per, fmt.Sprintf("%s=%d", rs.Name, len(rs.RegionsList)))
	}
	for _, n := range c.Nodes {
		if n.Role == "regionserver" && !n.Stopped && cluster.Alive(n.PID) && !live[n.Addr()] {
			why = append(why, n.Name+" starting")
		}
	}
	// Uneven both with and without hbase:meta: whichever way the balancer
	// counts it, Moving never waits for a move the balancer will not make.
	if hbaseUneven(counts) && hbaseUneven(withMeta) {
		sort.Strings(per)
		why = append(why, "regions per server uneven ("+strings.Join(per, " ")+"), balancer every "+c.Options["balancer-period"]+" ms")
	}
	return len(why) > 0, strings.Join(why, "; "), nil
}
