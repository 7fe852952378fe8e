package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// The cassandra engine runs Apache Cassandra 5.0 from its Maven Central jars
// (cassandra-all and its runtime dependencies, fetched once by FetchJars) on
// the machine's Java 17: Debian has no Cassandra package, and the 4.x line
// needs Java 11, which bookworm lacks.
//
// Node i listens on 127.0.0.i (the whole 127.0.0.0/8 is loopback on Linux,
// no alias needed), so every node uses the same storage (gossip) and CQL
// ports, chosen free on every address the cluster may use; each node has
// its own JMX port on 127.0.0.1. Every node has its own directory with
// cassandra.yaml, logback.xml, data, commitlog, hints, saved_caches and
// cdc_raw, and one log (cassandra.log). Node 1 is the seed. Nodes start one
// at a time, each once the previous one answers CQL: Cassandra refuses
// concurrent bootstraps.
//
// With --network hosts (Options.Network) node i is a host of its own on
// the cluster's virtual network (package vnet) instead: it binds its host's
// address (198.18.0.i) on Cassandra's standard ports, 9042 (CQL) and 7000
// (storage), and its JMX port 7199 on the loopback of its own namespace.
// fieldbench administers it from inside that host: its CQL sessions dial
// through the namespace (Node.Dial), nodetool runs under `ip netns exec`.
// Down removes the network.
//
// Options (cluster up --opt key=value):
//
//	version=V   cassandra-all version (default 5.0.9)
//	heap=SIZE   -Xms/-Xmx of each node (default 512m: ~1 GB RSS per node)
//	rf=N        replication factor in the DSN printed (default min(nodes,3))
//	consistency=LEVEL  consistency in the DSN (default ONE for one node,
//	            QUORUM otherwise)
//	replicas=first|shuffle  replicas in the DSN printed: the client's
//	            token-aware routing tries a key's first replica first
//	            (default), or its replicas in a random order (see the
//	            adapter's ShuffleReplicas)
//	request_timeout=DURATION  the server's read, write, range, counter
//	            and request timeouts (default: Cassandra's own, 2 s for a
//	            write); tests on a loaded 2-core machine raise it so that a
//	            starved JVM is not taken for a wrong answer
func init() { cluster.Register(cassandraEngine{}) }

type cassandraEngine struct{}

var (
	_ cluster.Grower    = cassandraEngine{}
	_ cluster.Killer    = cassandraEngine{}
	_ cluster.Remover   = cassandraEngine{}
	_ cluster.Mover     = cassandraEngine{}
	_ cluster.NodeNamer = cassandraEngine{}
	_ cluster.Remoter   = cassandraEngine{}
)

const (
	cassandraDefaultVersion = "5.0.9"
	cassandraMaxNodes       = 6
	// cassandraMaxHosts is how many 127.0.0.x addresses the ports are
	// checked free on: room for Add beyond the largest Up.
	cassandraMaxHosts = 9
	cassandraMain     = "org.apache.cassandra.service.CassandraDaemon"
	// Cassandra's standard ports, a node's ports on a host of its own:
	// CQL, storage (gossip and streaming) and JMX.
	cassandraNativePort  = 9042
	cassandraStoragePort = 7000
	cassandraJMXPort     = 7199
)

// cassandraJPMS is Cassandra 5.0's conf/jvm17-server.options module flags:
// without them it dies at once with an IllegalAccessException about
// sun.nio.ch.DirectBuffer.
var cassandraJPMS = []string{
	"-Djdk.attach.allowAttachSelf=true",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"-Dio.netty.tryReflectionSetAccessible=true",
}

// Name implements Engine.
func (cassandraEngine) Name() string { return Name }

// NodeNames implements cluster.NodeNamer: cass1, cass2...
func (cassandraEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return cluster.Numbered("cass", nodes+adds)
}

// Hosts implements Hoster: the engine starts its nodes on hosts too.
func (cassandraEngine) Hosts() (bool, string) { return true, "" }

// Budgets implements cluster.BudgetHolder: every node is one JVM, started through cluster.Start with its node named (nodetool and cqlsh, run against it, are not the node).
func (cassandraEngine) Budgets() (bool, string) { return true, "" }

// CheckNodes implements NodeLimiter.
func (e cassandraEngine) CheckNodes(nodes int, _ map[string]string) error {
	return cluster.NodeLimit(e.Name(), nodes, 8, "each node is a JVM with its own heap (512 MB by default, about 1 GB resident), "+
		"and nodes join one at a time (about a minute each)")
}

// CheckOptions implements OptionChecker.
func (cassandraEngine) CheckOptions(o cluster.Options) error { _, err := parseCassOpts(o); return err }

// Check implements Engine: Java and Maven (the jars come from Maven
// Central on first use).
func (cassandraEngine) Check() error { return cluster.CheckMaven() }

type cassOpts struct {
	nodes   int
	version string
	heap    string
	rf      int
	// rfNodes is rf: nodes — the keyspace's replication factor follows
	// the node count (every node holds all data, as the trajectory study
	// set it), so steps that grow the cluster raise it with them; rf is 0.
	rfNodes     bool
	consistency string
	replicas    string // the DSN's replicas= ("": not given)
	timeoutMS   int64  // request_timeout; 0 = Cassandra's defaults
	hosts       bool   // every node a host on a virtual network
	// dcs is the number of data centres the nodes are placed in, node i
	// in dc ((i-1) mod dcs)+1, so that nodes added later keep the data
	// centres even. With more than one, rf is the factor in each data
	// centre (NetworkTopologyStrategy), as a multi-site deployment sets it.
	dcs int
}

func parseCassOpts(o cluster.Options) (cassOpts, error) {
	r := cassOpts{nodes: max(o.Nodes, 1), version: cassandraDefaultVersion, heap: "512m", hosts: o.Network == cluster.NetworkHosts, dcs: 1}
	if r.nodes > cassandraMaxNodes {
		return r, fmt.Errorf("cassandra: at most %d nodes on one machine (asked for %d; each takes ~1 GB)", cassandraMaxNodes, r.nodes)
	}
	for k, v := range o.Extra {
		var err error
		switch k {
		case "version":
			if !strings.HasPrefix(v, "5.") {
				err = errors.New("only the 5.x line runs on Java 17")
			}
			r.version = v
		case "heap":
			if len(v) < 2 || !strings.ContainsAny(v[len(v)-1:], "mMgG") {
				err = errors.New("want a size like 512m or 1g")
			} else if _, perr := strconv.Atoi(v[:len(v)-1]); perr != nil {
				err = errors.New("want a size like 512m or 1g")
			}
			r.heap = v
		case "rf":
			if v == "nodes" {
				r.rfNodes = true
				break
			}
			r.rf, err = strconv.Atoi(v)
			if err == nil && r.rf < 1 {
				err = errors.New("want at least 1 or nodes")
			}
		case "consistency":
			if _, perr := gocql.ParseConsistencyWrapper(strings.ToUpper(v)); perr != nil {
				err = perr
			}
			r.consistency = strings.ToUpper(v)
		case "replicas":
			if v != "first" && v != "shuffle" {
				err = errors.New("want first or shuffle")
			}
			r.replicas = v
		case "dcs":
			r.dcs, err = strconv.Atoi(v)
			if err == nil && r.dcs < 1 {
				err = errors.New("want at least 1")
			}
		case "request_timeout":
			d, perr := time.ParseDuration(v)
			if perr != nil || d < time.Millisecond {
				err = errors.New("want a duration like 10s")
			}
			r.timeoutMS = d.Milliseconds()
		default:
			return r, fmt.Errorf("cassandra: unknown option %q (known: version, heap, rf (a number or nodes), consistency, replicas, request_timeout, dcs)", k)
		}
		if err != nil {
			return r, fmt.Errorf("cassandra: option %s=%q: %w", k, v, err)
		}
	}
	if r.dcs > 1 {
		if r.rfNodes {
			return r, errors.New("cassandra: rf: nodes is a factor for one data centre; with dcs give the factor in each data centre as a number")
		}
		if r.nodes < r.dcs {
			return r, fmt.Errorf("cassandra: %d data centres need at least %d nodes (asked for %d)", r.dcs, r.dcs, r.nodes)
		}
	}
	if r.rf == 0 && !r.rfNodes {
		r.rf = min(r.nodes/r.dcs, 3)
	}
	if r.consistency == "" {
		r.consistency = "ONE"
		switch {
		case r.dcs > 1:
			// Each site's clients wait for their own site's replicas only:
			// what a deployment across data centres runs.
			r.consistency = "LOCAL_QUORUM"
		case r.nodes > 1:
			r.consistency = "QUORUM"
		}
	}
	return r, nil
}

// CassandraJars fetches (once) and returns the jar directory of version.
func CassandraJars(ctx context.Context, version string) (string, error) {
	return cluster.FetchJars(ctx, []string{"org.apache.cassandra:cassandra-all:" + version}, "cassandra-all-"+version)
}

// Up implements Engine.
func (e cassandraEngine) Up(ctx context.Context, dir string, opts cluster.Options) (*cluster.Cluster, error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	co, err := parseCassOpts(opts)
	if err != nil {
		return nil, err
	}
	if co.hosts {
		if err := cluster.CheckNetwork(e.Name(), cluster.NetworkHosts); err != nil {
			return nil, err
		}
	}
	jars, err := CassandraJars(ctx, co.version)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cassandra: cluster directory: %w", err)
	}
	rf := strconv.Itoa(co.rf)
	if co.rfNodes {
		rf = cassandraRFNodes
	}
	c := &cluster.Cluster{Engine: e.Name(), Dir: dir, Version: co.version, Started: time.Now().UTC(), Budget: opts.Budget, Options: map[string]string{
		"version": co.version, "heap": co.heap, "jars": jars,
		"rf": rf, "consistency": co.consistency,
		"cluster_name": "fieldbench-" + filepath.Base(dir),
	}}
	if co.timeoutMS > 0 {
		c.Options["request_timeout_ms"] = strconv.FormatInt(co.timeoutMS, 10)
	}
	if co.dcs > 1 {
		c.Options["dcs"] = strconv.Itoa(co.dcs)
	}
	if co.replicas != "" {
		c.Options["replicas"] = co.replicas
	}
	if co.hosts {
		return c, e.upOnHosts(ctx, c, co)
	}
	// The first node picks the cluster-wide ports (retrying on a lost
	// race); later nodes use them.
	err = cluster.Retry(4, func(int) error {
		storage, native, err := cassandraPorts()
		if err != nil {
			return err
		}
		c.Options["storage_port"], c.Options["native_port"] = strconv.Itoa(storage), strconv.Itoa(native)
		c.Nodes = nil
		_, err = e.startNew(ctx, c, false)
		return err
	})
	if err != nil {
		return c, err
	}
	// The ring is empty: the other nodes join without bootstrapping (no
	// data to stream, no wait for it), taking allocated tokens all the same.
	for i := 2; i <= co.nodes; i++ {
		if _, err := e.startNew(ctx, c, false); err != nil {
			return c, err
		}
	}
	return c, e.settle(ctx, c)
}

// settle sets the DSN and waits until every node is NORMAL. Each node
// starts without waiting for gossip to settle: a node may answer CQL
// before the others have heard of it (seen: cass3 without tokens in
// cass1's view right after Up). The cluster is up when every node is
// NORMAL in the ring's view.
func (e cassandraEngine) settle(ctx context.Context, c *cluster.Cluster) error {
	c.DSN = cassandraDSN(c)
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name
	}
	return e.waitNormal(ctx, c, cassandraSettleLimit, names...)
}

// upOnHosts starts the nodes of c, each on a host of its own on c's
// virtual network, on the standard ports: no port to choose, no race for
// one.
func (e cassandraEngine) upOnHosts(ctx context.Context, c *cluster.Cluster, co cassOpts) error {
	c.Network = cluster.NetworkHosts
	c.Options["network"] = cluster.NetworkHosts
	c.Options["storage_port"] = strconv.Itoa(cassandraStoragePort)
	c.Options["native_port"] = strconv.Itoa(cassandraNativePort)
	if err := vnet.ForDir(c.Dir).Create(ctx); err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	for range co.nodes {
		if _, err := e.startNew(ctx, c, false); err != nil {
			return err
		}
	}
	return e.settle(ctx, c)
}

// cassandraSettleLimit bounds how long Up waits for gossip to show every
// new node NORMAL (a second or two on a quiet machine).
const cassandraSettleLimit = 2 * time.Minute

// cassandraRFNodes is the rf option's value that makes the replication
// factor the cluster's node count.
const cassandraRFNodes = "nodes"

// cassandraDSN lists every node as a contact point. With rf: nodes the
// DSN's rf is the count of nodes in the ring now (not removed), so a DSN
// taken after a step added nodes asks the adapter for the larger factor
// (the adapter alters an existing keyspace to it).
func cassandraDSN(c *cluster.Cluster) string {
	var hosts []string
	for _, n := range c.Nodes {
		if !cassRemoved(n) {
			hosts = append(hosts, n.Addr())
		}
	}
	rf := c.Options["rf"]
	if rf == cassandraRFNodes {
		rf = strconv.Itoa(max(len(hosts), 1))
	}
	dc := ""
	if dcs := cassDCs(c); dcs > 1 {
		// rf in every data centre, and the first one's nodes preferred
		// (the load host sits beside them).
		var per []string
		for i := 1; i <= dcs; i++ {
			per = append(per, cassDCName(i)+":"+rf)
		}
		rf, dc = strings.Join(per, ","), "&dc="+cassDCName(1)
	}
	if r := c.Options["replicas"]; r != "" {
		dc += "&replicas=" + r
	}
	return fmt.Sprintf("cassandra://%s/fieldbench?consistency=%s&rf=%s%s", strings.Join(hosts, ","), c.Options["consistency"], rf, dc)
}

// cassDCs is the number of data centres c's nodes are placed in (1 when
// the option was not given).
func cassDCs(c *cluster.Cluster) int {
	n, err := strconv.Atoi(c.Options["dcs"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// cassDCName is the name of data centre i (1-based).
func cassDCName(i int) string { return "dc" + strconv.Itoa(i) }

// cassNodeDC is the data centre of node idx (1-based) of c: round robin,
// so nodes added by a join keep the data centres even. "" with one data
// centre (SimpleSnitch names it datacenter1).
func cassNodeDC(c *cluster.Cluster, idx int) string {
	dcs := cassDCs(c)
	if dcs < 2 {
		return ""
	}
	return cassDCName((idx-1)%dcs + 1)
}

// cassandraHost is node i's address (1-based).
func cassandraHost(i int) string { return fmt.Sprintf("127.0.0.%d", i) }

// cassandraPorts returns a storage and a native port free on every address
// a node of the cluster may use.
func cassandraPorts() (storage, native int, err error) {
	var got []int
	for tries := 0; len(got) < 2; tries++ {
		if tries > 100 {
			return 0, 0, errors.New("cassandra: no port free on every 127.0.0.x address")
		}
		ps, err := cluster.FreePorts(cluster.Loopback, 1)
		if err != nil {
			return 0, 0, err
		}
		if len(got) == 1 && got[0] == ps[0] {
			continue
		}
		free := true
		for i := 1; i <= cassandraMaxHosts && free; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(cassandraHost(i), strconv.Itoa(ps[0])))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			got = append(got, ps[0])
		}
	}
	return got[0], got[1], nil
}

// startNew writes the config of node len(c.Nodes)+1 and starts it;
// bootstrap makes it stream its ranges from the others as it joins (for a
// node added to a cluster holding data).
func (e cassandraEngine) startNew(ctx context.Context, c *cluster.Cluster, bootstrap bool) (*cluster.Node, error) {
	idx := len(c.Nodes) + 1
	if idx > cassandraMaxHosts {
		return nil, fmt.Errorf("cassandra: at most %d nodes", cassandraMaxHosts)
	}
	name := fmt.Sprintf("cass%d", idx)
	ndir := filepath.Join(c.Dir, name)
	for _, d := range []string{"data", "commitlog", "hints", "saved_caches", "cdc_raw", "logs"} {
		if err := os.MkdirAll(filepath.Join(ndir, d), 0o755); err != nil {
			return nil, fmt.Errorf("cassandra: node directory: %w", err)
		}
	}
	native, _ := strconv.Atoi(c.Options["native_port"])
	storage, _ := strconv.Atoi(c.Options["storage_port"])
	n := &cluster.Node{Name: name, Role: "node", Host: cassandraHost(idx), Port: native, DataDir: ndir,
		LogFile: filepath.Join(ndir, "cassandra.log"), Config: filepath.Join(ndir, "cassandra.yaml"), DC: cassNodeDC(c, idx)}
	if idx == 1 {
		n.Role = "seed"
	}
	wait := cassandraStartWait
	if bootstrap {
		wait = cassandraJoinWait
	}
	if c.OnHosts() {
		if err := startCassandraOnHost(ctx, c, n, idx, bootstrap, wait); err != nil {
			return nil, fmt.Errorf("cassandra: start %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, n)
		return n, nil
	}
	err := cluster.Retry(3, func(int) error {
		jmx, err := cluster.FreePort(cluster.Loopback)
		if err != nil {
			return err
		}
		n.Ports = []int{storage, jmx}
		if err := writeCassandraConfig(c, n, bootstrap); err != nil {
			return err
		}
		return startCassandraNode(ctx, c, n, wait)
	})
	if err != nil {
		return nil, fmt.Errorf("cassandra: start %s: %w", name, err)
	}
	c.Nodes = append(c.Nodes, n)
	return n, nil
}

// startCassandraOnHost makes n host idx of c's virtual network
// (198.18.0.idx) and starts it there on the standard ports; a node that
// does not start takes its host with it.
func startCassandraOnHost(ctx context.Context, c *cluster.Cluster, n *cluster.Node, idx int, bootstrap bool, wait time.Duration) error {
	vn := vnet.ForDir(c.Dir)
	h, err := vn.AddHost(ctx, n.Name, vnet.NodeAddr(idx))
	if err != nil {
		return err
	}
	n.Host, n.Netns, n.Port = h.Addr.String(), h.NS, cassandraNativePort
	n.Ports = []int{cassandraStoragePort, cassandraJMXPort}
	err = writeCassandraConfig(c, n, bootstrap)
	if err == nil {
		err = startCassandraNode(ctx, c, n, wait)
	}
	if err != nil {
		_ = vn.RemoveHost(context.WithoutCancel(ctx), n.Name)
		return err
	}
	return nil
}

func writeCassandraConfig(c *cluster.Cluster, n *cluster.Node, bootstrap bool) error {
	seed := cassandraSeed(c, n)
	d := func(s string) string { return strconv.Quote(filepath.Join(n.DataDir, s)) }
	where := "loopback only"
	if n.Netns != "" {
		where = "the address of host " + n.Netns + " on fieldbench's virtual network only"
	}
	yaml := fmt.Sprintf(`# written by fieldbench; %s
cluster_name: %q
num_tokens: 16
allocate_tokens_for_local_replication_factor: 3
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: %s
data_file_directories:
  - %s
commitlog_directory: %s
hints_directory: %s
saved_caches_directory: %s
cdc_raw_directory: %s
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "%s:%d"
listen_address: %s
rpc_address: %s
storage_port: %d
native_transport_port: %d
start_native_transport: true
# dropping a keyspace (a fresh one per test) need not snapshot it
auto_snapshot: false
auto_bootstrap: %t
`, where, c.Options["cluster_name"], cassSnitch(n), d("data"), d("commitlog"), d("hints"), d("saved_caches"), d("cdc_raw"),
		seed, n.Ports[0], n.Host, n.Host, n.Ports[0], n.Port, bootstrap)
	if ms := c.Options["request_timeout_ms"]; ms != "" {
		for _, k := range []string{"read_request_timeout", "range_request_timeout", "write_request_timeout",
			"counter_write_request_timeout", "request_timeout"} {
			yaml += k + ": " + ms + "ms\n"
		}
	}
	if err := os.WriteFile(n.Config, []byte(yaml), 0o644); err != nil {
		return fmt.Errorf("cassandra: write %s: %w", n.Config, err)
	}
	if n.DC != "" {
		// GossipingPropertyFileSnitch reads the node's data centre from
		// here (cassandraArgs names the file) and gossips it.
		props := "dc=" + n.DC + "\nrack=rack1\n"
		if err := os.WriteFile(cassRackDC(n), []byte(props), 0o644); err != nil {
			return fmt.Errorf("cassandra: write %s: %w", cassRackDC(n), err)
		}
	}
	// One log per node: the console appender goes to cassandra.log, where
	// the JVM's own errors land too.
	logback := `<configuration scan="false">
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra" level="INFO"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
`
	if err := os.WriteFile(filepath.Join(n.DataDir, "logback.xml"), []byte(logback), 0o644); err != nil {
		return fmt.Errorf("cassandra: write logback.xml: %w", err)
	}
	return nil
}

// cassSnitch is node n's endpoint snitch: SimpleSnitch in one data
// centre (no topology to know), GossipingPropertyFileSnitch in several.
func cassSnitch(n *cluster.Node) string {
	if n.DC == "" {
		return "SimpleSnitch"
	}
	return "GossipingPropertyFileSnitch"
}

// cassRackDC is node n's cassandra-rackdc.properties.
func cassRackDC(n *cluster.Node) string {
	return filepath.Join(n.DataDir, "cassandra-rackdc.properties")
}

// cassandraArgs is the java command line of node n.
func cassandraArgs(c *cluster.Cluster, n *cluster.Node) ([]string, error) {
	jars := c.Options["jars"]
	cp, err := cluster.Classpath(jars)
	if err != nil {
		return nil, err
	}
	jamm, _ := filepath.Glob(filepath.Join(jars, "jamm-*.jar"))
	if len(jamm) == 0 {
		return nil, fmt.Errorf("cassandra: no jamm jar in %s (needed as -javaagent)", jars)
	}
	tmp, err := cluster.JVMTempDir(n.DataDir)
	if err != nil {
		return nil, err
	}
	heap := c.Options["heap"]
	args := []string{"-Xms" + heap, "-Xmx" + heap, "-javaagent:" + jamm[0]}
	args = append(args, cassandraJPMS...)
	args = append(args,
		"-Djava.net.preferIPv4Stack=true", tmp,
		"-Dcassandra-foreground=yes",
		"-Dcassandra.config=file://"+n.Config,
		// Read only by GossipingPropertyFileSnitch (several data centres).
		"-Dcassandra-rackdc.properties=file://"+cassRackDC(n),
		"-Dcassandra.storagedir="+n.DataDir,
		"-Dcassandra.logdir="+filepath.Join(n.DataDir, "logs"),
		"-Dlogback.configurationFile="+filepath.Join(n.DataDir, "logback.xml"),
		"-Dcassandra.jmx.local.port="+strconv.Itoa(n.Ports[1]),
		// A 3 s ring delay and no wait for gossip to settle: a node starts
		// in ~8 s instead of ~40 s, a join takes ~20 s instead of ~80 s.
		"-Dcassandra.ring_delay_ms=3000",
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-Dcassandra.superuser_setup_delay_ms=0",
		"-cp", cp, cassandraMain)
	return args, nil
}

// How long a node may take to answer CQL. A node joining a cluster that
// holds data opens its CQL port only once it has streamed its ranges (the
// microblog study saw about 5 minutes per node), and a restarted node first
// replays its commit log; on a small machine under load both take longer
// than a fresh start. The wait ends earlier if the process dies.
const (
	cassandraStartWait = 3 * time.Minute
	cassandraJoinWait  = 15 * time.Minute
)

// startCassandraNode starts n and waits up to wait until it answers CQL.
func startCassandraNode(ctx context.Context, c *cluster.Cluster, n *cluster.Node, wait time.Duration) error {
	args, err := cassandraArgs(c, n)
	if err != nil {
		return err
	}
	// On a host, `ip netns exec` enters its namespace and execs java: the
	// PID is the server's.
	argv := n.Command(append([]string{"java"}, args...)...)
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: n.DataDir, LogFile: n.LogFile, Cluster: c, Node: n})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		_ = cluster.Kill(pid)
		return err
	}
	for {
		s, err := cassNodeSession(n, 5*time.Second)
		if err == nil {
			var v string
			err = s.Query("SELECT release_version FROM system.local").ScanContext(wctx, &v)
			s.Close()
			if err == nil {
				break
			}
		}
		if wctx.Err() != nil || !cluster.Alive(pid) {
			_ = cluster.Kill(pid)
			if wctx.Err() != nil { // out of time: say so, so that Retry does not start it again
				err = fmt.Errorf("%w (last answer: %v)", wctx.Err(), err)
			}
			return fmt.Errorf("cassandra %s does not answer CQL: %w; log ends:\n%s", n.Name, err, cluster.LogTail(n.LogFile, 1500))
		}
		time.Sleep(200 * time.Millisecond)
	}
	n.PID, n.Stopped = pid, false
	return nil
}

// cassNodeSession is a driver session to n alone (no peer discovery), for
// administration and status. A node on a virtual network is dialled from
// inside its host.
func cassNodeSession(n *cluster.Node, timeout time.Duration) (*gocql.Session, error) {
	cfg := gocql.NewCluster(n.Host)
	if n.Netns != "" {
		cfg.Dialer = cluster.NodeDialer{Node: n}
	}
	cfg.Port = n.Port
	cfg.HostFilter = gocql.WhiteListHostFilter(n.Host)
	cfg.Timeout, cfg.ConnectTimeout = timeout, timeout
	cfg.NumConns = 1
	cfg.Consistency = gocql.One
	cfg.ProtoVersion = 4
	cfg.Logger = gocql.NewLogger(gocql.LogLevelNone)
	cfg.ReconnectionPolicy = &gocql.ConstantReconnectionPolicy{MaxRetries: 1, Interval: time.Second} // 0 would leave a nil connection in the pool
	return cfg.CreateSession()
}

// ringMember is one endpoint as a node sees the ring.
type ringMember struct {
	addr   string
	tokens []int64
	status string // gossip STATUS: NORMAL, BOOT, LEAVING, LEFT, shutdown...
	load   string // bytes on disk, as gossiped
	hostID string
	dc     string // data centre, as the snitch placed it
}

// ringView asks node n for the ring: its own tokens (system.local), its
// peers' (system.peers_v2), and every endpoint's gossip state and load
// (the node-local virtual table system_views.gossip_info).
func ringView(ctx context.Context, n *cluster.Node) (map[string]*ringMember, error) {
	s, err := cassNodeSession(n, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	view := map[string]*ringMember{}
	member := func(addr string) *ringMember {
		m := view[addr]
		if m == nil {
			m = &ringMember{addr: addr}
			view[addr] = m
		}
		return m
	}
	var addr net.IP
	var tokens []string
	var hostID gocql.UUID
	var dc string
	if err := s.Query("SELECT listen_address, tokens, host_id, data_center FROM system.local").ScanContext(ctx, &addr, &tokens, &hostID, &dc); err != nil {
		return nil, fmt.Errorf("read system.local: %w", err)
	}
	m := member(addr.String())
	m.tokens, m.hostID, m.dc = parseTokens(tokens), hostID.String(), dc
	it := s.Query("SELECT peer, tokens, host_id, data_center FROM system.peers_v2").IterContext(ctx)
	for it.Scan(&addr, &tokens, &hostID, &dc) {
		m := member(addr.String())
		m.tokens, m.hostID, m.dc = parseTokens(tokens), hostID.String(), dc
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("read system.peers_v2: %w", err)
	}
	// Nodes of 4.0 and later gossip STATUS_WITH_PORT; STATUS may be absent.
	var status, statusWithPort, load *string
	it = s.Query("SELECT address, status, status_with_port, load FROM system_views.gossip_info").IterContext(ctx)
	for it.Scan(&addr, &status, &statusWithPort, &load) {
		m := member(addr.String())
		if statusWithPort != nil {
			status = statusWithPort
		}
		if status != nil {
			m.status, _, _ = strings.Cut(*status, ",")
		}
		if load != nil {
			m.load = *load
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("read system_views.gossip_info: %w", err)
	}
	return view, nil
}

func parseTokens(ts []string) []int64 {
	out := make([]int64, 0, len(ts))
	for _, t := range ts {
		if v, err := strconv.ParseInt(t, 10, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// Ownership is each endpoint's share of the Murmur3 token ring, without
// replication (what `nodetool status` shows with no keyspace): a token owns
// the range from the previous token (exclusive) to itself. The shares add
// up to 1.
func Ownership(tokens map[string][]int64) map[string]float64 {
	type tok struct {
		t    int64
		addr string
	}
	var all []tok
	for a, ts := range tokens {
		for _, t := range ts {
			all = append(all, tok{t, a})
		}
	}
	out := map[string]float64{}
	for a := range tokens {
		out[a] = 0
	}
	if len(all) == 0 {
		return out
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t < all[j].t })
	if len(all) == 1 {
		out[all[0].addr] = 1
		return out
	}
	const ring = 18446744073709551616.0 // 2^64 tokens
	for i, t := range all {
		prev := all[(i+len(all)-1)%len(all)].t
		// uint64 subtraction wraps around the ring exactly.
		out[t.addr] += float64(uint64(t.t)-uint64(prev)) / ring
	}
	return out
}

// Status implements Engine: each node's gossip state as the first
// answering node sees it (NORMAL, BOOT while joining, LEAVING...), whether
// it answers CQL itself, its share of the token ring ("owns", in %), its
// token count and its load (bytes on disk, gossiped about once a minute).
func (cassandraEngine) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	var view map[string]*ringMember
	var viewErr error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		view, viewErr = ringView(sctx, n)
		cancel()
		if viewErr == nil {
			break
		}
	}
	var owns map[string]float64
	if view != nil {
		tokens := map[string][]int64{}
		for a, m := range view {
			if len(m.tokens) > 0 {
				tokens[a] = m.tokens
			}
		}
		owns = Ownership(tokens)
	}
	out := make([]cluster.NodeStatus, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		st := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, State: "down", PID: n.PID, Detail: map[string]string{}}
		cluster.AddHostCounters(ctx, n, st.Detail)
		if n.DC != "" {
			st.Detail["dc"] = n.DC // overwritten below by the ring's view
		}
		if m := view[n.Host]; m != nil {
			if m.dc != "" && (n.DC != "" || m.dc != "datacenter1") {
				st.Detail["dc"] = m.dc
			}
			st.Detail["gossip"] = m.status
			st.Detail["tokens"] = strconv.Itoa(len(m.tokens))
			st.Detail["owns"] = strconv.FormatFloat(100*owns[n.Host], 'f', 1, 64) + "%"
			if m.load != "" {
				st.Detail["load"] = m.load
			}
			st.Detail["host_id"] = m.hostID
		} else if viewErr != nil {
			st.Detail["error"] = viewErr.Error()
		}
		if !n.Running() {
			switch {
			case cassRemoved(n):
				st.State = "removed"
			case n.Stopped:
				st.State = "stopped"
			}
			st.PID = 0
			out[i] = st
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := cassNodeSession(n, 5*time.Second)
			if err == nil {
				var v string
				err = s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &v)
				s.Close()
				st.Detail["version"] = v
			}
			switch {
			case err != nil:
				st.State = "unreachable"
				st.Detail["error"] = err.Error()
			case st.Detail["gossip"] == "BOOT":
				st.State = "joining"
			case strings.HasPrefix(st.Detail["gossip"], "LEAVING"):
				st.State = "leaving"
			default:
				st.State = "up"
			}
			out[i] = st
		}()
	}
	wg.Wait()
	return out, nil
}

// Down implements Engine: SIGTERM to every node at once (each drains and
// exits in ~7 s), SIGKILL after 60 s. On a virtual network it then removes
// every namespace and interface of the network, found from the directory
// alone.
func (cassandraEngine) Down(ctx context.Context, c *cluster.Cluster) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		if n.PID <= 0 {
			n.Stopped = true
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cluster.Stop(n.PID, 60*time.Second); err != nil {
				errs[i] = fmt.Errorf("cassandra: stop %s: %w", n.Name, err)
				return
			}
			n.PID, n.Stopped = 0, true
		}()
	}
	wg.Wait()
	// Whatever c says: the state of a `cluster up` that crashed before it
	// saved its network does not say hosts (no network: nothing to do).
	errs = append(errs, cluster.DestroyNetwork(ctx, c.Dir))
	return errors.Join(errs...)
}

// Add implements Grower: a new node on the next 127.0.0.x address (on a
// virtual network: on the next host, 198.18.0.x) bootstraps into the ring
// (streaming its ranges from the others) and is returned once it answers
// CQL, i.e. once it has joined.
func (e cassandraEngine) Add(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	running := 0
	for _, n := range c.Nodes {
		if !n.Stopped && cluster.Alive(n.PID) {
			running++
		}
	}
	if running == 0 {
		return nil, errors.New("cassandra: no running node to join")
	}
	n, err := e.startNew(ctx, c, true)
	if err != nil {
		return nil, err
	}
	c.DSN = cassandraDSN(c)
	// A bootstrapping node may answer CQL while its gossip still says
	// BOOT (seen on a loaded machine): the join is done when the ring
	// says NORMAL.
	if err := e.waitNormal(ctx, c, cassandraJoinLimit, n.Name); err != nil {
		return n, err
	}
	return n, nil
}

// cassandraJoinLimit bounds how long a joining node may stream its ranges
// after it answers CQL.
const cassandraJoinLimit = 15 * time.Minute

// waitNormal waits until every node named is up with gossip NORMAL, each
// Status (one ring view, one CQL check per node) answering for all of them.
func (e cassandraEngine) waitNormal(ctx context.Context, c *cluster.Cluster, limit time.Duration, names ...string) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	last := "no status yet"
	for {
		if st, err := e.Status(wctx, c); err == nil {
			var behind []string
			for _, ns := range st {
				if want[ns.Name] && (ns.State != "up" || ns.Detail["gossip"] != "NORMAL") {
					behind = append(behind, ns.Name+": "+ns.State+", gossip "+ns.Detail["gossip"])
				}
			}
			if len(behind) == 0 {
				return nil
			}
			last = strings.Join(behind, "; ")
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("cassandra: not NORMAL in the ring after %s (%s): %w", limit, last, wctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// Kill implements Killer: SIGKILL; the commit log replays on restart.
func (cassandraEngine) Kill(_ context.Context, c *cluster.Cluster, name string) error {
	return c.KillNode(name)
}

// Restart implements Killer: the node starts again on its data and config
// and is back once it answers CQL (~15 s after a kill).
func (cassandraEngine) Restart(ctx context.Context, c *cluster.Cluster, name string) error {
	if n, err := c.Node(name); err == nil && cassRemoved(n) {
		return fmt.Errorf("cassandra: %s was decommissioned: it left the ring for good (add a new node instead)", name)
	}
	_, err := cluster.RestartNode(ctx, c, "cassandra", name, func(n *cluster.Node) error { return startCassandraNode(ctx, c, n, cassandraJoinWait) })
	return err
}

// ownsPercent parses a Status "owns" detail ("33.3%").
func ownsPercent(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func cassRemoved(n *cluster.Node) bool { return n.Role == cluster.RoleDecommissioned }

// Remove implements Remover: `nodetool decommission` on the node, run from
// the cached jars (cassandra-all holds org.apache.cassandra.tools.NodeTool,
// so the user installs nothing), through the node's JMX port on
// 127.0.0.1 (its host's own loopback on a virtual network). Decommission streams the node's ranges to the nodes that take
// them over and returns once the node has LEFT; the process, which stays
// up in the DECOMMISSIONED state, is then stopped. Cassandra refuses when
// the cluster would keep fewer nodes than a keyspace's replication factor
// (system_distributed has RF 3): that error is returned as is.
func (cassandraEngine) Remove(ctx context.Context, c *cluster.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if cassRemoved(n) {
		return fmt.Errorf("cassandra: %s was already decommissioned", name)
	}
	if n.Stopped || !cluster.Alive(n.PID) {
		return fmt.Errorf("cassandra: %s is not running: decommission needs the node up (restart it first)", name)
	}
	others := 0
	for _, o := range c.Nodes {
		if o != n && !o.Stopped && cluster.Alive(o.PID) {
			others++
		}
	}
	if others == 0 {
		return fmt.Errorf("cassandra: %s is the only running node: nowhere to hand its data", name)
	}
	if len(n.Ports) < 2 {
		return fmt.Errorf("cassandra: %s has no JMX port in cluster.json", name)
	}
	if _, err := nodetool(ctx, c, n, "decommission"); err != nil {
		return fmt.Errorf("cassandra: decommission %s: %w", name, err)
	}
	if err := cluster.Stop(n.PID, 60*time.Second); err != nil {
		return fmt.Errorf("cassandra: stop %s after its decommission: %w", name, err)
	}
	n.PID, n.Stopped, n.Role = 0, true, cluster.RoleDecommissioned
	// A node restarted later reads its seed from its yaml: when the seed
	// itself left, point the others at a node still in the ring.
	if err := reseed(c); err != nil {
		return err
	}
	c.DSN = cassandraDSN(c)
	return nil
}

// nodetool runs Cassandra's NodeTool from the cached jars against n's JMX
// port and returns its output. The JMX server binds 127.0.0.1 only
// (-Dcassandra.jmx.local.port).
func nodetool(ctx context.Context, c *cluster.Cluster, n *cluster.Node, args ...string) (string, error) {
	cp, err := cluster.Classpath(c.Options["jars"])
	if err != nil {
		return "", err
	}
	// NodeTool loads Cassandra's FileUtils, which needs the same module
	// flags as the server; it keeps its history in user.home/.cassandra:
	// the cluster directory rather than the user's home.
	jargs := append([]string{"-Xmx128m"}, cassandraJPMS...)
	jargs = append(jargs, "-Djava.net.preferIPv4Stack=true",
		"-Duser.home="+c.Dir,
		"-Dlogback.configurationFile="+filepath.Join(n.DataDir, "logback.xml"),
		"-cp", cp, "org.apache.cassandra.tools.NodeTool",
		"-h", cluster.Loopback, "-p", strconv.Itoa(n.Ports[1]))
	// On a virtual network the JMX port is on the loopback of the node's
	// host: nodetool runs there (`ip netns exec`).
	argv := n.Command(append(append([]string{"java"}, jargs...), args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("nodetool %s: %w: %s", strings.Join(args, " "), err, cluster.Tail(string(out), 1500))
	}
	return string(out), nil
}

// reseed rewrites the seed of every node whose seed was decommissioned, so
// that a restart finds the ring.
func reseed(c *cluster.Cluster) error {
	removed := map[string]bool{}
	for _, n := range c.Nodes {
		if cassRemoved(n) {
			removed[n.Host] = true
		}
	}
	for _, n := range c.Nodes {
		if cassRemoved(n) {
			continue
		}
		b, err := os.ReadFile(n.Config)
		if err != nil {
			return fmt.Errorf("cassandra: read %s: %w", n.Config, err)
		}
		m := seedRE.FindSubmatch(b)
		if m == nil || !removed[string(m[2])] {
			continue
		}
		nb := seedRE.ReplaceAll(b, []byte("${1}"+cassandraSeed(c, n)+"${3}"))
		if err := os.WriteFile(n.Config, nb, 0o644); err != nil {
			return fmt.Errorf("cassandra: write %s: %w", n.Config, err)
		}
	}
	return nil
}

// seedRE finds the seed's host in a node's yaml.
var seedRE = regexp.MustCompile(`(?m)^(\s*- seeds: ")([0-9.]+)(:[0-9]+")`)

// cassandraSeed is the seed node n should contact: the first node of the
// cluster still in the ring other than n itself (n's own address when there
// is none: the first node of a new cluster is its own seed). A node that
// is its own seed does not bootstrap, so a joining node must never be.
func cassandraSeed(c *cluster.Cluster, n *cluster.Node) string {
	for _, o := range c.Nodes {
		if o != n && o.Host != n.Host && !cassRemoved(o) {
			return o.Host
		}
	}
	return n.Host
}

// Moving implements Mover, with CQL only (cheap enough to poll every
// second): every running node's gossip view (system_views.gossip_info) is
// searched for an endpoint joining (BOOT), leaving (LEAVING) or moving its
// tokens (MOVING), and every running node's node-local
// system_views.streaming for a stream session not yet finished. detail
// lists what was found, e.g. "127.0.0.4 BOOT; 127.0.0.1 streaming
// BOOTSTRAP 42%".
func (cassandraEngine) Moving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	type nodeMoves struct {
		found []string
		err   error
	}
	var running []*cluster.Node
	for _, n := range c.Nodes {
		if n.Running() {
			running = append(running, n)
		}
	}
	if len(running) == 0 {
		return false, "", errors.New("cassandra: no running node to ask")
	}
	res := make([]nodeMoves, len(running))
	var wg sync.WaitGroup
	for i, n := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].found, res[i].err = cassMoves(ctx, n)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	var found []string
	var errs []error
	answered := 0
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", running[i].Name, r.err))
			continue
		}
		answered++
		for _, f := range r.found {
			if !seen[f] {
				seen[f] = true
				found = append(found, f)
			}
		}
	}
	sort.Strings(found)
	if answered == 0 {
		return false, "", fmt.Errorf("cassandra: no node answered: %w", errors.Join(errs...))
	}
	// A node that does not answer (a JVM busy or just killed) is not an
	// error as long as another one answered: gossip tells every node about
	// every endpoint.
	return len(found) > 0, strings.Join(found, "; "), nil
}

// cassMoves asks node n which endpoints are joining, leaving or moving and
// which of its own stream sessions are still running.
func cassMoves(ctx context.Context, n *cluster.Node) ([]string, error) {
	s, err := cassNodeSession(n, 3*time.Second)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var found []string
	var addr net.IP
	var status, statusWithPort *string
	it := s.Query("SELECT address, status, status_with_port FROM system_views.gossip_info").IterContext(ctx)
	for it.Scan(&addr, &status, &statusWithPort) {
		if statusWithPort != nil {
			status = statusWithPort
		}
		if status == nil {
			continue
		}
		st, _, _ := strings.Cut(*status, ",")
		switch st {
		case "BOOT", "BOOT_REPLACE", "LEAVING", "MOVING", "removing":
			found = append(found, addr.String()+" "+st)
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("read system_views.gossip_info: %w", err)
	}
	// Finished sessions stay listed (SUCCESS or FAILURE) for days: only
	// INIT and START are data still moving.
	var op, st string
	var progress float32 // CQL float
	var peers []string
	it = s.Query("SELECT operation, status, progress_percentage, peers FROM system_views.streaming").IterContext(ctx)
	for it.Scan(&op, &st, &progress, &peers) {
		if st == "success" || st == "failure" || strings.EqualFold(st, "SUCCESS") || strings.EqualFold(st, "FAILURE") {
			continue
		}
		found = append(found, fmt.Sprintf("%s streaming %s %s %.0f%% with %s", n.Host, op, st, progress, strings.Join(peers, ",")))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("read system_views.streaming: %w", err)
	}
	return found, nil
}
