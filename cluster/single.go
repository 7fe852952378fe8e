package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Single is the skeleton of the engines that start one server and
// nothing else (mongodb, rethinkdb, sqlserver: stand-ins with no
// replication): each engine gives the parts that are its own — how it
// reads its options and finds its server, how the server starts and
// answers, what its status says — and Single does the rest the same way
// for all: the cluster and node directories, the virtual network on
// hosts, the node on a free loopback port or on its host's standard port
// (placeAndStart), status, and Down. An engine whose node can be killed
// and restarted on its data registers a KillableSingle instead. Engines
// register a pointer: a struct of funcs is not comparable, and Engine
// values were (the other engines are empty structs). Exported, fields
// and all, for the engines that live in a database's own folder
// (db/mongodb, db/rethinkdb, db/sqlserver) rather than in this package.
type Single struct {
	Engine string // the engine's name
	Server string // the server's name in "start SERVER" errors
	// NodeName is the node's name, also its directory's under the
	// cluster's.
	NodeName string
	LogFile  string // the node's log file's name, in its directory
	// DataDir is the node's data directory under its own; "" is its own.
	DataDir string
	// ConfigFile is a file of the node's directory that n.Config names
	// ("" none).
	ConfigFile string
	// StandardPort is the node's port on a host of its own: the engine's
	// standard port.
	StandardPort int

	// CheckInstall is the engine's Check: what is missing on this
	// machine, with the command that installs it.
	CheckInstall func() error
	// ParseOptions reads the options the way Prepare does, without
	// installing or starting anything (CheckOptions); nil takes any
	// option.
	ParseOptions func(Options) error
	// External is what an external cluster asks the engine's database
	// (Remoter; its external side); nil: none can run it.
	External *RemoteDB
	// Prepare reads the options, checks or installs the server and
	// returns the cluster's Options; it fails before anything starts.
	Prepare func(ctx context.Context, opts Options) (map[string]string, error)
	// Setup writes what the node needs in its directory before its first
	// start (nil: nothing).
	Setup func(n *Node) error
	// Start starts n on its address, port and data and waits until it
	// answers; on a host, inside its namespace.
	Start func(ctx context.Context, c *Cluster, n *Node) error
	// Describe says, once the node answers, the cluster's Version and DSN.
	Describe func(ctx context.Context, c *Cluster, n *Node) (version, dsn string, err error)
	// Detail is what every node's status detail begins with.
	Detail func(c *Cluster) map[string]string
	// Probe asks a running node what it is, adding to its status's
	// detail; an error makes the node unreachable.
	Probe func(ctx context.Context, n *Node, detail map[string]string) error
}

// KillableSingle is a Single whose node can be killed (SIGKILL, as a
// crash) and restarted on its port and data: it adds Killer to what
// Single answers, for the durability audit's crash and the kill and
// restart of experiments. An engine registers
// &KillableSingle{Single{...}} where its server keeps its data across a
// restart (sqlserver's Iridium on disk, mongodb's FerretDB on SQLite).
type KillableSingle struct{ Single }

var _ Killer = KillableSingle{}

// Single answers for itself what its engine says before anything starts.
var (
	_ OptionChecker = Single{}
	_ Hoster        = Single{}
	_ Remoter       = Single{}
	_ BudgetHolder  = Single{}
)

// Name implements Engine.
func (e Single) Name() string { return e.Engine }

// Check implements Engine.
func (e Single) Check() error { return e.CheckInstall() }

// Hosts implements Hoster: every single-node engine starts its node on
// a host of its own too (Up, placeAndStart).
func (e Single) Hosts() (bool, string) { return true, "" }

// Budgets implements BudgetHolder: the engine's Start names the node to
// cluster.Start (Proc.Cluster, Proc.Node), and its server is the node's
// one process.
func (e Single) Budgets() (bool, string) { return true, "" }

// Remote implements Remoter with the engine's external side.
func (e Single) Remote() *RemoteDB { return e.External }

// CheckOptions implements OptionChecker with the engine's options.
func (e Single) CheckOptions(o Options) error {
	if e.ParseOptions == nil {
		return nil
	}
	return e.ParseOptions(o)
}

// Up implements Engine: the one node on a free loopback port, or on its
// host's address and the engine's standard port on hosts. Whatever fails,
// the cluster returned (if any) holds what was started, for the caller's
// Down.
func (e Single) Up(ctx context.Context, dir string, opts Options) (*Cluster, error) {
	options, err := e.Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cluster directory: %w", e.Engine, err)
	}
	c := &Cluster{Engine: e.Engine, Dir: dir, Started: time.Now().UTC(), Options: options, Budget: opts.Budget}
	if opts.Network == NetworkHosts {
		if err := CheckNetwork(e.Engine, NetworkHosts); err != nil {
			return nil, err
		}
		if err := c.CreateHosts(ctx); err != nil {
			return c, err
		}
	}
	ndir := filepath.Join(dir, e.NodeName)
	n := &Node{Name: e.NodeName, Role: "standalone", Host: Loopback, DataDir: filepath.Join(ndir, e.DataDir), LogFile: filepath.Join(ndir, e.LogFile)}
	if e.ConfigFile != "" {
		n.Config = filepath.Join(ndir, e.ConfigFile)
	}
	if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
		return c, fmt.Errorf("%s: node directory: %w", e.Engine, err)
	}
	if e.Setup != nil {
		if err := e.Setup(n); err != nil {
			return c, err
		}
	}
	if err := placeAndStart(ctx, c, n, e.StandardPort, func() error { return e.Start(ctx, c, n) }); err != nil {
		return c, fmt.Errorf("%s: start %s: %w", e.Engine, e.Server, err)
	}
	if c.Version, c.DSN, err = e.Describe(ctx, c, n); err != nil {
		return c, err
	}
	return c, nil
}

// Status implements Engine: the node's state, what it says it is (probe),
// and on hosts its host's counters.
func (e Single) Status(ctx context.Context, c *Cluster) ([]NodeStatus, error) {
	return NodeStatuses(ctx, c, func(*Node) map[string]string { return e.Detail(c) }, e.Probe), nil
}

// Down implements Engine: SIGTERM, SIGKILL after 15 s; on a virtual
// network, then the network.
func (e Single) Down(ctx context.Context, c *Cluster) error {
	return StopOnNetwork(ctx, c, e.Engine)
}

// Kill implements Killer: SIGKILL, as a crash.
func (KillableSingle) Kill(_ context.Context, c *Cluster, node string) error {
	return c.KillNode(node)
}

// Restart implements Killer: the node starts again on its port and data.
func (e KillableSingle) Restart(ctx context.Context, c *Cluster, node string) error {
	_, err := RestartNode(ctx, c, e.Engine, node, func(n *Node) error { return e.Start(ctx, c, n) })
	return err
}

// NodeStatuses is the status of each of c's nodes as most engines make
// it: down, or stopped when fieldbench stopped it (no PID then); a running
// node is probed within 5 s, up when probe answers, unreachable with its
// error when it does not. detail gives each node's detail to begin with;
// on hosts, the host's counters are added.
func NodeStatuses(ctx context.Context, c *Cluster, detail func(*Node) map[string]string,
	probe func(ctx context.Context, n *Node, detail map[string]string) error) []NodeStatus {
	out := make([]NodeStatus, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		st := NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, State: "down", PID: n.PID, Detail: detail(n)}
		AddHostCounters(ctx, n, st.Detail)
		if n.Stopped || !Alive(n.PID) {
			if n.Stopped {
				st.State = "stopped"
			}
			st.PID = 0
			out = append(out, st)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := probe(sctx, n, st.Detail); err != nil {
			st.State = "unreachable"
			st.Detail["error"] = err.Error()
		} else {
			st.State = "up"
		}
		cancel()
		out = append(out, st)
	}
	return out
}

// StopOnNetwork is the Down of the engines whose nodes are their only
// processes: every node stopped (SIGTERM, SIGKILL after 15 s), then, on
// a virtual network, every namespace and interface of the network, found
// from the directory alone.
func StopOnNetwork(ctx context.Context, c *Cluster, engine string) error {
	err := c.StopNodes(engine, 15*time.Second)
	return errors.Join(err, DestroyNetwork(ctx, c.Dir))
}

// RestartNode starts c's stopped or killed node name again with start,
// once it is ready to (ReadyToRestart), and returns it.
func RestartNode(ctx context.Context, c *Cluster, engine, name string, start func(n *Node) error) (*Node, error) {
	n, err := c.Node(name)
	if err != nil {
		return nil, err
	}
	if err := ReadyToRestart(ctx, engine, n); err != nil {
		return n, err
	}
	if err := start(n); err != nil {
		return n, fmt.Errorf("%s: restart %s: %w", engine, name, err)
	}
	return n, nil
}
