package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// The network a cluster's nodes live on (Options.Network, `cluster up
// --network`):
//
//   - loopback (the default): every node binds 127.0.0.1 on ports checked
//     free, and nodes differ by port only. Needs nothing but the servers.
//   - hosts: every node is a host of its own on a virtual network (package
//     vnet): a network namespace with one address from 198.18.0.0/15,
//     attached to a bridge in a namespace of fieldbench's own, and the
//     server binds that address on its standard ports (Redis 6379, bus
//     16379; Cassandra 9042, storage 7000; PostgreSQL 5432; MariaDB 3306,
//     Galera 4567, 4568 and 4444; pouchdb-server 5984; FerretDB 27017;
//     HBase's ZooKeeper 2181, master 16000 and 16010, region server
//     16020, REST gateway 8080; reqlite 28015; Iridium SQL 1433). Nothing routes
//     the network to the machine's interfaces: the cluster is reached
//     from inside the network only (fieldbench's own administration dials
//     through the node's namespace). Needs root.
const (
	NetworkLoopback = "loopback"
	NetworkHosts    = "hosts"
)

// Networks are the values of Options.Network.
var Networks = []string{NetworkLoopback, NetworkHosts}

// HostsEngines are the registered engines that can start their nodes on
// hosts (those whose Hosts says so), sorted: the help texts of --network
// and --cluster-network list them.
func HostsEngines() []string {
	var out []string
	for _, e := range registered() {
		if h, ok := e.(Hoster); ok {
			if on, _ := h.Hosts(); on {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// LoopbackEngines are the registered engines that start on loopback only
// (all but HostsEngines), sorted: the help texts name them as "not".
func LoopbackEngines() []string {
	on := HostsEngines()
	var out []string
	for _, e := range Engines() {
		if !slices.Contains(on, e) {
			out = append(out, e)
		}
	}
	return out
}

// HostsPhrase says, for help texts, which engines start their nodes on
// --network hosts and which on loopback only, as the engines say
// (HostsEngines): "cassandra, couchdb, ... and sqlserver, not couchbase".
func HostsPhrase() string {
	s := WordList(HostsEngines(), "and")
	if off := LoopbackEngines(); len(off) > 0 {
		s += ", not " + WordList(off, "or")
	}
	return s
}

// WordList lists words as a sentence does: "a", "a and b", "a, b and c".
func WordList(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// CheckNetwork reports whether engine can start on network here: a known
// network, an engine that supports it (Hoster; an engine without it, or
// a name no engine is registered under, starts on loopback only), and
// for hosts the rights to create network namespaces (root).
func CheckNetwork(engine, network string) error {
	switch network {
	case "", NetworkLoopback:
		return nil
	case NetworkHosts:
		on, why := false, ""
		if e, err := Get(engine); err == nil {
			if h, ok := e.(Hoster); ok {
				on, why = h.Hosts()
			}
		}
		if !on && why != "" {
			return fmt.Errorf("--network hosts: the %s engine starts on loopback only: %s", engine, why)
		}
		if !on {
			return fmt.Errorf("--network hosts: the %s engine starts on loopback only (hosts: %s)", engine, strings.Join(HostsEngines(), ", "))
		}
		if err := vnet.Check(); err != nil {
			return fmt.Errorf("--network hosts: %w", err)
		}
		return nil
	}
	return fmt.Errorf("--network %q: want one of %s", network, strings.Join(Networks, ", "))
}

// OnHosts reports whether the cluster's nodes are hosts on a virtual
// network.
func (c *Cluster) OnHosts() bool { return c.Network == NetworkHosts }

// Dial opens a TCP connection to addr from where the node is: from inside
// its host's namespace for a node on a virtual network, else from here.
func (n *Node) Dial(ctx context.Context, addr string) (net.Conn, error) {
	if n.Netns != "" {
		return vnet.Dial(ctx, n.Netns, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// NodeDialer is a driver's Dialer (a DialContext method, as gocql's and
// the MongoDB driver's take) for a node on a virtual network: every
// connection is made from inside the node's host (Node.Dial), the only
// place its address is reachable from. Exported for the engines in the
// database folders (db/mongodb, db/cassandra).
type NodeDialer struct{ Node *Node }

// DialContext dials addr from where d's node is; the network is TCP.
func (d NodeDialer) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	return d.Node.Dial(ctx, addr)
}

// Command is argv run where the node is: inside its host's namespace
// (`ip netns exec`) for a node on a virtual network, else as is.
func (n *Node) Command(argv ...string) []string {
	if n.Netns != "" {
		return vnet.Command(n.Netns, argv...)
	}
	return argv
}

// DestroyNetwork removes the virtual network of the cluster in dir, if
// any: every namespace, and with them every interface, it made (a shared
// link's second bridge and veth pair too: they are in the bridge
// namespace). It needs
// no saved state (the names derive from dir), so it cleans up after a
// crashed or interrupted `cluster up` too.
func DestroyNetwork(ctx context.Context, dir string) error {
	n := vnet.ForDir(dir)
	if err := n.Destroy(ctx); err != nil {
		return fmt.Errorf("remove the virtual network %s: %w", n.ID, err)
	}
	return nil
}

// SweepNetworks removes the virtual networks whose cluster directory is
// gone (vnet.SweepOrphans), saying so on w; a failure is said, not
// returned: it must not stop the command that sweeps on the way.
func SweepNetworks(ctx context.Context, w io.Writer) {
	swept, err := vnet.SweepOrphans(ctx)
	for _, id := range swept {
		fmt.Fprintf(w, "removed the virtual network %s: its cluster directory no longer exists\n", id)
	}
	if err != nil {
		fmt.Fprintf(w, "removing virtual networks whose cluster directory is gone: %v\n", err)
	}
}

// AddHostCounters adds the node's host's interface counters to a status's
// detail (net_rx_bytes, net_rx_packets, net_tx_bytes, net_tx_packets: what
// the host received from and sent to the network since it was made); a
// node on loopback has none.
func AddHostCounters(ctx context.Context, n *Node, detail map[string]string) {
	if n.Netns == "" {
		return
	}
	cs, err := vnet.HostCounters(ctx, n.Netns)
	if err != nil {
		detail["net_error"] = err.Error()
		return
	}
	detail["net_rx_bytes"] = strconv.FormatUint(cs.RxBytes, 10)
	detail["net_rx_packets"] = strconv.FormatUint(cs.RxPackets, 10)
	detail["net_tx_bytes"] = strconv.FormatUint(cs.TxBytes, 10)
	detail["net_tx_packets"] = strconv.FormatUint(cs.TxPackets, 10)
}

// NetworkID names the virtual network of the cluster in dir: its bridge
// namespace, whose name starts every host namespace's.
func NetworkID(dir string) string { return vnet.ForDir(dir).ID }

// AddNodeHost adds a host called name to c's virtual network at the first
// node address (198.18.0.K) that no node of c has: a node replacing a
// removed one takes its free address.
func AddNodeHost(ctx context.Context, c *Cluster, name string) (vnet.Host, error) {
	used := map[string]bool{}
	for _, m := range c.Nodes {
		used[m.Host] = true
	}
	i := 1
	for used[vnet.NodeAddr(i).String()] {
		i++
	}
	return vnet.ForDir(c.Dir).AddHost(ctx, name, vnet.NodeAddr(i))
}

// CreateHosts makes c a cluster on hosts and creates its virtual network,
// before the engine starts its first node there (CheckNetwork first).
func (c *Cluster) CreateHosts(ctx context.Context) error {
	c.Network = NetworkHosts
	c.Options["network"] = NetworkHosts
	if err := vnet.ForDir(c.Dir).Create(ctx); err != nil {
		return fmt.Errorf("%s: %w", c.Engine, err)
	}
	return nil
}

// placeAndStart adds the single node n to c and starts it with start: on
// a host of its own where c is on hosts, on its engine's standard port
// (an address nothing else binds: no port to lose to a race, so one
// attempt); on loopback on a free port, up to 5 attempts, each on a new
// port. The single-node engines (mongodb, rethinkdb, sqlserver) share it.
func placeAndStart(ctx context.Context, c *Cluster, n *Node, port int, start func() error) error {
	if c.OnHosts() {
		h, err := AddNodeHost(ctx, c, n.Name)
		if err != nil {
			return err
		}
		n.Host, n.Netns, n.Port = h.Addr.String(), h.NS, port
	}
	c.Nodes = append(c.Nodes, n)
	if c.OnHosts() {
		return start()
	}
	return Retry(5, func(int) error {
		p, err := FreePort(Loopback)
		if err != nil {
			return err
		}
		n.Port = p
		return start()
	})
}
