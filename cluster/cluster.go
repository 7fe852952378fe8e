// Package cluster starts real database servers on this machine — single
// nodes and clusters bound to loopback, on ports checked free — and keeps a
// description of each cluster in its directory (cluster.json) so another
// fieldbench process can show its status, add or kill nodes, and tear it
// down. One Engine per database knows how to install-check, configure,
// start, grow and stop it.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// ErrUnsupported is wrapped when an engine cannot do an operation.
var ErrUnsupported = errors.New("not supported by this engine")

// Node is one server process.
type Node struct {
	Name    string `json:"name"`              // e.g. "pg1"
	Role    string `json:"role,omitempty"`    // primary, replica, master...
	Host    string `json:"host"`              // a loopback address
	Port    int    `json:"port"`              // client port
	Ports   []int  `json:"ports,omitempty"`   // other ports it owns (cluster bus, replication)
	DataDir string `json:"data_dir"`          // under the cluster directory
	LogFile string `json:"log_file"`          // server log
	PID     int    `json:"pid,omitempty"`     // 0 when stopped
	Config  string `json:"config,omitempty"`  // config file written for it
	Stopped bool   `json:"stopped,omitempty"` // killed or stopped on purpose
	// Remote marks a node fieldbench did not start (engine external): it
	// has no PID here and its /proc is not readable, so whether it runs is
	// what the node actions did to it, and the database is asked the rest.
	Remote bool `json:"remote,omitempty"`
	// Netns is the network namespace of the node's host when the cluster
	// is on a virtual network (Cluster.Network hosts); "" on loopback.
	Netns string `json:"netns,omitempty"`
	// DC is the data centre the engine placed the node in, where it
	// places nodes in several (Cassandra's dcs option); "" otherwise.
	DC string `json:"dc,omitempty"`
	// Cgroup is the control group that holds the node's processes to its
	// budget (Cluster.Budget), made at its first start and kept across
	// kill and restart; nil without a budget.
	Cgroup *budget.Group `json:"cgroup,omitempty"`
}

// Addr is host:port.
func (n *Node) Addr() string { return fmt.Sprintf("%s:%d", n.Host, n.Port) }

// RoleDecommissioned marks a node that left the ring through Remove: its
// process is gone for good (its tokens belong to others now), so Restart
// refuses it, Status shows it "removed" rather than down, and the DSN no
// longer lists it. An external cluster's Remove marks its node so too,
// and every database's external side leaves such a node out of its DSN
// and its status (exported for those outside this package).
const RoleDecommissioned = "decommissioned"

// Running reports whether the node should answer: a local node whose
// process is alive, or a remote node no action stopped.
func (n *Node) Running() bool {
	if n.Stopped {
		return false
	}
	return n.Remote || (n.PID > 0 && Alive(n.PID))
}

// Cluster is what an engine started, as saved in Dir/cluster.json.
type Cluster struct {
	Engine  string            `json:"engine"`
	Dir     string            `json:"dir"`
	Nodes   []*Node           `json:"nodes"`
	DSN     string            `json:"dsn"`               // for fieldbench --db
	Version string            `json:"version,omitempty"` // server version
	Options map[string]string `json:"options,omitempty"` // engine options used
	Started time.Time         `json:"started"`

	// Database is the database an external cluster runs (Engine is then
	// "external"); empty for the engines that start their own servers.
	Database string `json:"database,omitempty"`

	// Network is where the nodes live: "" or loopback, or hosts (each
	// node a host of its own on a virtual network; see network.go).
	Network string `json:"network,omitempty"`

	// Budget is every node's size (--budget): each node's processes run
	// in a control group of it from their start (Start), a node added
	// later too.
	Budget budget.Plan `json:"budget,omitzero"`
}

// DB is the database the cluster runs: Database for an external cluster,
// else the engine's name (each engine starts one database).
func (c *Cluster) DB() string {
	if c.Database != "" {
		return c.Database
	}
	return c.Engine
}

// Node returns the node called name.
func (c *Cluster) Node(name string) (*Node, error) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, nil
		}
	}
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name
	}
	return nil, fmt.Errorf("no node %q in the %s cluster (nodes: %v)", name, c.Engine, names)
}

// Options are what a user may set for `cluster up`.
type Options struct {
	Nodes int
	// Extra holds engine options (e.g. "replicas": "1" for Redis,
	// "galera": "true" for MariaDB), given as --opt key=value.
	Extra map[string]string
	// Network is loopback ("" too) or hosts: see CheckNetwork.
	Network string
	// Budget sizes every node (--budget cpu=0.5,memory=1GiB) and, by
	// name, some of them: see CheckBudget.
	Budget budget.Plan
	// Load is the budget of the load generator that will run against
	// the cluster (run --cluster ... --load-budget): CheckBudget fits it
	// beside the nodes'. The cluster does not hold it; the run does.
	Load budget.Budget
}

// NodeStatus is one line of `cluster status`.
type NodeStatus struct {
	Name   string            `json:"name"`
	Addr   string            `json:"addr"`
	Role   string            `json:"role"`
	State  string            `json:"state"` // up, down, joining...
	PID    int               `json:"pid,omitempty"`
	Detail map[string]string `json:"detail,omitempty"` // engine facts: lag, slots, load...
}

// Engine knows one database.
type Engine interface {
	Name() string
	// Check reports what is missing on this machine (binaries), with the
	// command that installs it.
	Check() error
	// Up starts opts.Nodes nodes in dir and returns the running cluster.
	Up(ctx context.Context, dir string, opts Options) (*Cluster, error)
	// Status asks every node.
	Status(ctx context.Context, c *Cluster) ([]NodeStatus, error)
	// Down stops every node (by PID) and leaves the data in place.
	Down(ctx context.Context, c *Cluster) error
}

// Grower is an engine that can add a node to a running cluster.
type Grower interface {
	Add(ctx context.Context, c *Cluster) (*Node, error)
}

// Killer is an engine that can kill (SIGKILL) and restart a node.
type Killer interface {
	Kill(ctx context.Context, c *Cluster, node string) error
	Restart(ctx context.Context, c *Cluster, node string) error
}

// Healer is an engine whose nodes need help once a network partition of
// theirs heals: pouchdb-server's continuous replications give up on a
// peer they cannot reach and do not start again by themselves. Healed is
// called with the nodes whose partition was removed; HealNote says what it
// does, for the heal's event.
type Healer interface {
	Healed(ctx context.Context, c *Cluster, nodes []string) error
	HealNote() string
}

// Remover is an engine that can take a node out of a running cluster
// gracefully, handing its data to the others first (Cassandra decommission).
type Remover interface {
	Remove(ctx context.Context, c *Cluster, node string) error
}

// Mover is an engine that can say whether data is still moving between its
// nodes: Cassandra streaming or nodes still joining, HBase regions in
// transition, Redis slot migration, Galera state transfer, a replica still
// catching up. The join experiment waits for it (the study watched the
// databases' own tools by hand). detail says what is moving, for the record.
type Mover interface {
	Moving(ctx context.Context, c *Cluster) (moving bool, detail string, err error)
}

// The engines describe themselves through the small interfaces below,
// each asked by name through the registry before anything starts (where
// there was once a table keyed by engine name): CheckOptions asks an
// OptionChecker, CheckNetwork a Hoster, CheckNodes a NodeLimiter, and an
// external cluster the engine's remote side (Remoter, in external.go).
// An engine without one gets the fallback its doc comment says.

// OptionChecker is an engine that reads its options (--opt key=value)
// the way its Up does, without starting anything: `cluster up` asks it
// (CheckOptions) before it writes the cluster's directory, so an unknown
// or malformed option is bad input refused at once rather than a failure
// after cluster.json exists. An engine without it takes any option
// (postgres: server settings).
type OptionChecker interface {
	CheckOptions(opts Options) error
}

// Hoster is an engine that says whether it can start its nodes on hosts
// (--network hosts, network.go): ok, or why not where the reason is more
// than "not done yet". An engine without it starts on loopback only.
type Hoster interface {
	Hosts() (ok bool, whyNot string)
}

// NodeLimiter is an engine that bounds `cluster up --nodes`: every node
// is a real server process on this one machine, so past its limit the
// servers compete for the machine's cores and memory instead of being
// measured. CheckNodes refuses a count above it, saying why (TooManyNodes
// words it); extra are the --opt options (Redis replicas multiply its
// servers). An engine without it accepts any count its options allow.
type NodeLimiter interface {
	CheckNodes(nodes int, extra map[string]string) error
}

var (
	mu      sync.RWMutex
	engines = map[string]Engine{}
)

// Register adds an engine; it panics on a duplicate name.
func Register(e Engine) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := engines[e.Name()]; dup {
		panic("cluster: duplicate engine " + e.Name())
	}
	engines[e.Name()] = e
}

// Get returns the engine called name.
func Get(name string) (Engine, error) {
	mu.RLock()
	defer mu.RUnlock()
	e, ok := engines[name]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (known: %v)", name, namesLocked())
	}
	return e, nil
}

// Engines lists the registered engine names, sorted.
func Engines() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

// registered lists the registered engines in name order, for the
// functions that ask every engine about itself (HostsEngines,
// ExternalDatabases).
func registered() []Engine {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Engine, 0, len(engines))
	for _, n := range namesLocked() {
		out = append(out, engines[n])
	}
	return out
}

func namesLocked() []string {
	out := make([]string, 0, len(engines))
	for n := range engines {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// StateFile is the cluster description's name inside its directory.
const StateFile = "cluster.json"

// stateMode is cluster.json's permission: owner only, since the DSN it
// holds carries the MariaDB password fieldbench generated (the adapter
// needs it whole to connect).
const stateMode = 0o600

// Save writes c to c.Dir/cluster.json (atomically), readable by its owner
// only.
func (c *Cluster) Save() error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, StateFile+".tmp")
	// A leftover temporary file would keep its old mode through WriteFile.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("save cluster state: %w", err)
	}
	if err := os.WriteFile(tmp, b, stateMode); err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	if err := os.Chmod(tmp, stateMode); err != nil { // under any umask
		return fmt.Errorf("save cluster state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(c.Dir, StateFile)); err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	return nil
}

// Load reads the cluster described in dir.
func Load(dir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil, fmt.Errorf("no cluster in %s: %w", dir, err)
	}
	var c Cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, StateFile), err)
	}
	return &c, nil
}

// KillNode sends SIGKILL to node name (a crash: it keeps its data) and
// marks it stopped, the way every engine's Kill begins.
func (c *Cluster) KillNode(name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if n.PID > 0 {
		if err := Kill(n.PID); err != nil {
			return err
		}
	}
	n.PID, n.Stopped = 0, true
	return nil
}

// StopNodes stops every node one after the other (SIGTERM, SIGKILL after
// grace) and marks it stopped, the way most engines' Down does; errors name
// the engine and the node, and a node that would not stop stays marked.
func (c *Cluster) StopNodes(engine string, grace time.Duration) error {
	var errs []error
	for _, n := range c.Nodes {
		if n.PID > 0 {
			if err := Stop(n.PID, grace); err != nil {
				errs = append(errs, fmt.Errorf("%s: stop %s: %w", engine, n.Name, err))
				continue
			}
		}
		n.PID, n.Stopped = 0, true
	}
	return errors.Join(errs...)
}
