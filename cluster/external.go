package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/outpath"
	"github.com/fieldbench/fieldbench/redact"
)

// EngineExternal names a cluster fieldbench did not start: the user's own
// servers (machines reached by ssh, pods in Kubernetes). fieldbench acts
// on its nodes through commands the scenario gives (ExternalSpec) and asks
// the database itself for everything else: which nodes are members, whether
// data moves, who owns what, its version, and what /proc would have told
// about each node. It is not a `cluster up` engine: nothing is started.
const EngineExternal = "external"

// ExternalActions are the node actions an external cluster's scenario
// gives commands for.
var ExternalActions = []string{"kill", "stop-node", "restart", "add", "remove"}

// ExternalMember is one node of an external cluster. A spare is not a
// member when the experiment starts: each add brings the next spare in,
// and its name, host and port fill the add command.
type ExternalMember struct {
	Name  string
	Host  string
	Port  int
	Spare bool
}

// Addr is host:port.
func (m ExternalMember) Addr() string { return net.JoinHostPort(m.Host, strconv.Itoa(m.Port)) }

// ExternalSpec describes an external cluster.
type ExternalSpec struct {
	// Database is the database the nodes run (one of ExternalDatabases):
	// it decides how fieldbench asks them.
	Database string
	// DSN is the adapter's DSN; empty builds it from the members.
	DSN     string
	Members []ExternalMember
	// Commands are the node actions' templates, by action.
	Commands map[string]string
	// Shell runs the commands with sh -c (values single-quoted) instead
	// of splitting them into words.
	Shell bool
	// CommandTimeout bounds each command; JoinTimeout how long a node
	// may take to join, to come back after a restart or to leave.
	CommandTimeout, JoinTimeout time.Duration
}

// Defaults for an ExternalSpec's timeouts.
const (
	DefaultCommandTimeout = 2 * time.Minute
	DefaultJoinTimeout    = 15 * time.Minute
)

// RemoteDB is what fieldbench asks one database about nodes it did not
// start, over the network and by address alone (no PID, no local file,
// no password it generated). Each engine gives its own (Remoter);
// exported, fields and all, so that an engine in a database's own folder
// (db/mongodb, db/rethinkdb, db/sqlserver) can.
type RemoteDB struct {
	// DSN builds the adapter's DSN from the members; nil when the members
	// are not what the adapter talks to (HBase: region servers, while the
	// adapter talks to the REST gateway), and then the scenario's dsn is
	// required, as DSNHint says.
	DSN     func(c *Cluster) string
	DSNHint string
	// Version asks the database its version, through member n (or the
	// DSN's server, for databases reached through a gateway).
	Version func(ctx context.Context, c *Cluster, n *Node) (string, error)
	// Members are the nodes the database lists, by host:port, with "up"
	// for a node that has joined (any other word says where it is).
	Members func(ctx context.Context, c *Cluster) (map[string]string, error)
	// Resources are the figures the database reports about each node's
	// process (NodeResources), and Reported the names of those it fills.
	Resources func(ctx context.Context, c *Cluster) (map[string]NodeResources, error)
	Reported  []string
	// Source says where the reported figures come from, for the result.
	Source string
	// Status and Moving, when set, replace the database's own engine's
	// Status and Moving, which need processes fieldbench started (a PID,
	// a port on loopback it chose).
	Status func(ctx context.Context, c *Cluster) ([]NodeStatus, error)
	Moving func(ctx context.Context, c *Cluster) (bool, string, error)
}

// Remoter is an engine whose database an external cluster can run:
// Remote says what fieldbench asks it about nodes it did not start (nil:
// nothing, and no external cluster runs it), in the database's external
// side (cluster/external_<db>.go, or db/<name>/external.go). Exported so
// that an engine outside this package can give one.
type Remoter interface {
	Remote() *RemoteDB
}

// remoteFor is the remote side of the engine called database, or nil
// when there is none (no such engine, or one no external cluster runs).
func remoteFor(database string) *RemoteDB {
	e, err := Get(database)
	if err != nil {
		return nil
	}
	if r, ok := e.(Remoter); ok {
		return r.Remote()
	}
	return nil
}

// ExternalDatabases are the databases an external cluster can run: those
// whose status, data movement, membership and version fieldbench can ask
// of nodes it did not start (the registered engines with a remote side),
// sorted.
func ExternalDatabases() []string {
	var out []string
	for _, e := range registered() {
		if r, ok := e.(Remoter); ok && r.Remote() != nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// Problems checks spec without touching the cluster: every problem is an
// error whose message starts with the field it is about (database,
// members[1].host, commands.kill...). used are the actions the timeline
// fires; adds is how many nodes it adds.
func (s ExternalSpec) Problems(used map[string]bool, adds int) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if rdb := remoteFor(s.Database); rdb == nil {
		if s.Database == "" {
			bad("database: required with engine external (one of %s)", strings.Join(ExternalDatabases(), ", "))
		} else {
			bad("database: %q: fieldbench can ask only %s about nodes it did not start", s.Database, strings.Join(ExternalDatabases(), ", "))
		}
	} else if rdb.DSN == nil && s.DSN == "" {
		bad("dsn: required with database %s: %s", s.Database, rdb.DSNHint)
	}
	members, spares := 0, 0
	names, addrs := map[string]bool{}, map[string]bool{}
	for i, m := range s.Members {
		where := fmt.Sprintf("members[%d]", i)
		switch {
		case m.Name == "":
			bad("%s.name: required", where)
		case names[m.Name]:
			bad("%s.name: %q names two members", where, m.Name)
		case outpath.Component(m.Name) != nil:
			// A node's name is one word of the results (series, events)
			// and may name its files: the one rule for names from input.
			bad("%s.name: %v", where, outpath.Component(m.Name))
		}
		names[m.Name] = true
		if m.Host == "" {
			bad("%s.host: required", where)
		}
		if m.Port < 1 || m.Port > 65535 {
			bad("%s.port: %d is not a port", where, m.Port)
		}
		if addrs[m.Addr()] {
			bad("%s: %s is the address of two members", where, m.Addr())
		}
		addrs[m.Addr()] = true
		if m.Spare {
			spares++
		} else {
			if spares > 0 {
				bad("%s: list the spare members after the others", where)
			}
			members++
		}
	}
	if members == 0 {
		bad("members: at least one node that is a member when the experiment starts (name, host, port)")
	}
	for a := range s.Commands {
		if !slices.Contains(ExternalActions, a) {
			bad("commands.%s: not a node action (actions: %s)", a, strings.Join(ExternalActions, ", "))
		}
	}
	for _, a := range ExternalActions {
		text, ok := s.Commands[a]
		if !ok {
			if used[a] {
				bad("commands.%s: the timeline does %s: give its command (e.g. %s)", a, a, exampleCommand[a])
			}
			continue
		}
		t, err := ParseTemplate(text, s.Shell)
		if err != nil {
			bad("commands.%s: %v", a, err)
			continue
		}
		if a == "add" && adds > spares {
			for _, p := range t.Uses() {
				if slices.Contains(NodePlaceholders, p) {
					bad("commands.add: uses {%s}, but the timeline adds %d node(s) and the members list %d spare(s) to take it from", p, adds, spares)
					break
				}
			}
		}
	}
	if s.CommandTimeout < 0 || s.JoinTimeout < 0 {
		bad("command_timeout and join_timeout cannot be negative")
	}
	return errs
}

var exampleCommand = map[string]string{
	"kill":      "ssh {host} sudo systemctl kill -s KILL redis",
	"stop-node": "ssh {host} sudo systemctl stop redis",
	"restart":   "ssh {host} sudo systemctl start redis",
	"add":       "kubectl scale statefulset redis --replicas {n}",
	"remove":    "kubectl scale statefulset redis --replicas {n}",
}

// External is the engine of an external cluster: node actions run the
// scenario's commands, the rest is asked of the database (RemoteDB and
// the database's own engine, whose Status and Moving work by address).
type External struct {
	spec    ExternalSpec
	tmpl    map[string]*Template
	db      Engine
	rdb     RemoteDB
	log     io.WriteCloser
	spares  []ExternalMember
	ownDSN  bool // the DSN is built from the members (and follows them)
	logPath string
}

// CommandLog is the file, in the cluster's directory, that keeps every
// command an external cluster's node actions ran, with its output.
const CommandLog = "commands.log"

// OpenExternal checks spec, asks the database its version through the
// first member that answers, and returns the engine and the cluster
// (Engine "external", Database spec.Database, every node Remote) with its
// description in dir. Nothing is started; a cluster no member of which
// answers is an error.
func OpenExternal(ctx context.Context, spec ExternalSpec, dir string) (*External, *Cluster, error) {
	if errs := spec.Problems(nil, 0); len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if spec.CommandTimeout == 0 {
		spec.CommandTimeout = DefaultCommandTimeout
	}
	if spec.JoinTimeout == 0 {
		spec.JoinTimeout = DefaultJoinTimeout
	}
	db, err := Get(spec.Database)
	if err != nil {
		return nil, nil, err
	}
	rdb := remoteFor(spec.Database) // not nil: Problems checked the database
	if rdb == nil {
		return nil, nil, fmt.Errorf("database: %q: no external cluster can run it", spec.Database)
	}
	e := &External{spec: spec, tmpl: map[string]*Template{}, db: db, rdb: *rdb}
	for a, text := range spec.Commands {
		if e.tmpl[a], err = ParseTemplate(text, spec.Shell); err != nil {
			return nil, nil, fmt.Errorf("commands.%s: %w", a, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	e.logPath = filepath.Join(dir, CommandLog)
	if e.log, err = os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, nil, err
	}
	c := &Cluster{Engine: EngineExternal, Database: spec.Database, Dir: dir, DSN: spec.DSN, Started: time.Now().UTC(),
		Options: map[string]string{}}
	for _, m := range spec.Members {
		if m.Spare {
			e.spares = append(e.spares, m)
			continue
		}
		c.Nodes = append(c.Nodes, remoteNode(m))
	}
	if c.DSN == "" {
		e.ownDSN = true
		c.DSN = e.rdb.DSN(c)
	}
	var errs []error
	for _, n := range c.Nodes {
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		v, err := e.rdb.Version(vctx, c, n)
		cancel()
		if err == nil && v != "" {
			c.Version = v
			break
		}
		errs = append(errs, fmt.Errorf("%s (%s): %w", n.Name, n.Addr(), err))
	}
	if c.Version == "" {
		e.log.Close()
		return nil, nil, fmt.Errorf("external %s cluster: no member answered a version query: %w", spec.Database, errors.Join(errs...))
	}
	return e, c, nil
}

func remoteNode(m ExternalMember) *Node {
	return &Node{Name: m.Name, Host: m.Host, Port: m.Port, Remote: true}
}

// Name implements Engine.
func (e *External) Name() string { return EngineExternal }

// Check implements Engine: nothing is installed here.
func (e *External) Check() error { return nil }

// Up implements Engine: an external cluster is described, never started.
func (e *External) Up(context.Context, string, Options) (*Cluster, error) {
	return nil, fmt.Errorf("an external cluster is described in a scenario, not started: %w", ErrUnsupported)
}

// Status implements Engine with the database's own engine, which asks
// every node by address.
func (e *External) Status(ctx context.Context, c *Cluster) ([]NodeStatus, error) {
	if e.rdb.Status != nil {
		return e.rdb.Status(ctx, c)
	}
	return e.db.Status(ctx, c)
}

// Moving implements Mover with the database's own engine.
func (e *External) Moving(ctx context.Context, c *Cluster) (bool, string, error) {
	if e.rdb.Moving != nil {
		return e.rdb.Moving(ctx, c)
	}
	m, ok := e.db.(Mover)
	if !ok {
		return false, "", fmt.Errorf("%s cannot report data movement: %w", e.spec.Database, ErrUnsupported)
	}
	return m.Moving(ctx, c)
}

// Down implements Engine: nothing fieldbench started is left to stop: the
// nodes stay as the timeline left them. It closes the command log.
func (e *External) Down(context.Context, *Cluster) error {
	if e.log == nil {
		return nil
	}
	err := e.log.Close()
	e.log = nil
	return err
}

// members counts the nodes still in the cluster (removed ones are not).
func members(c *Cluster) int {
	k := 0
	for _, n := range c.Nodes {
		if n.Role != RoleDecommissioned {
			k++
		}
	}
	return k
}

// RemoteAskTimeout bounds each question to one member of an external
// cluster, so that a member that does not answer delays a status by no
// more than this; exported for the external sides that ask their members
// one by one themselves (db/mongodb's resources).
const RemoteAskTimeout = 5 * time.Second

// RemoteStatuses is the status of an external cluster's members, one
// line each, removed ones left out, for databases asked member by member
// (couchbase, couchdb, mongodb, rethinkdb, sqlserver). A member fieldbench knows stopped is
// "down" without being asked; a running one is asked with ask, under
// RemoteAskTimeout: "unreachable" with the error when ask fails, else
// "up" with whatever ask filled in (role, details). Every line starts
// with the given role and an empty Detail, so ask and the caller can add
// to it. Exported for a database's external side outside this package
// (external.go of db/mongodb, db/rethinkdb, db/sqlserver).
func RemoteStatuses(ctx context.Context, c *Cluster, role string, ask func(ctx context.Context, n *Node, st *NodeStatus) error) []NodeStatus {
	var out []NodeStatus
	for _, n := range c.Nodes {
		if n.Role == RoleDecommissioned {
			continue
		}
		st := NodeStatus{Name: n.Name, Addr: n.Addr(), Role: role, State: "down", Detail: map[string]string{}}
		if n.Running() {
			qctx, cancel := context.WithTimeout(ctx, RemoteAskTimeout)
			err := ask(qctx, n, &st)
			cancel()
			if err != nil {
				st.State, st.Detail["error"] = "unreachable", err.Error()
			} else {
				st.State = "up"
			}
		}
		out = append(out, st)
	}
	return out
}

// run fills action's template with node (nil for an add without spares)
// and n, and runs it.
func (e *External) run(ctx context.Context, action string, node *Node, n int) error {
	t, ok := e.tmpl[action]
	if !ok {
		return fmt.Errorf("external cluster: no command for %s (commands.%s): %w", action, action, ErrUnsupported)
	}
	vals := map[string]string{"n": strconv.Itoa(n)}
	if node != nil {
		vals["name"], vals["host"], vals["port"], vals["addr"] = node.Name, node.Host, strconv.Itoa(node.Port), node.Addr()
	}
	argv, err := t.Argv(vals)
	if err != nil {
		return fmt.Errorf("external cluster: %s: %w", action, err)
	}
	if e.log == nil {
		return errors.New("external cluster: closed")
	}
	if err := runCommand(ctx, action, argv, e.spec.CommandTimeout, e.log, redact.PasswordOf(e.spec.DSN)); err != nil {
		return fmt.Errorf("external cluster: %w (output in %s)", err, e.logPath)
	}
	return nil
}

// Kill implements Killer with the kill command; the node is then marked
// stopped (the database says whether it really is: Status).
func (e *External) Kill(ctx context.Context, c *Cluster, name string) error {
	return e.stopWith(ctx, c, "kill", name)
}

// StopNode stops a node gracefully with the stop-node command.
func (e *External) StopNode(ctx context.Context, c *Cluster, name string) error {
	return e.stopWith(ctx, c, "stop-node", name)
}

func (e *External) stopWith(ctx context.Context, c *Cluster, action, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if err := e.run(ctx, action, n, members(c)); err != nil {
		return err
	}
	n.Stopped = true
	return nil
}

// Restart implements Killer with the restart command, then waits until the
// database says the node is up.
func (e *External) Restart(ctx context.Context, c *Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if err := e.run(ctx, "restart", n, members(c)); err != nil {
		return err
	}
	n.Stopped = false
	return e.waitFor(ctx, "restart: "+name+" answering", func(ctx context.Context) (bool, string, error) {
		// e.Status, not e.db.Status: the databases asked member by member
		// have a status of their own, their engine's needs a PID.
		sts, err := e.Status(ctx, c)
		if err != nil {
			return false, "", err
		}
		for _, st := range sts {
			if st.Name == name {
				return st.State == "up", st.State, nil
			}
		}
		return false, "not listed", nil
	})
}

// Remove implements Remover with the remove command, then waits until the
// database no longer lists the node as an up member.
func (e *External) Remove(ctx context.Context, c *Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if err := e.run(ctx, "remove", n, members(c)-1); err != nil {
		return err
	}
	n.Stopped, n.Role = true, RoleDecommissioned
	if e.ownDSN {
		c.DSN = e.rdb.DSN(c)
	}
	return e.waitFor(ctx, "remove: "+name+" gone from the cluster", func(ctx context.Context) (bool, string, error) {
		m, err := e.rdb.Members(ctx, c)
		if err != nil {
			return false, "", err
		}
		st, listed := m[n.Addr()]
		return !listed || st != "up", st, nil
	})
}

// Add implements Grower: the add command (with the next spare's name,
// host and port, if the scenario lists spares, and n, the node count
// after the add), then it waits until the database itself lists the new
// node as a joined member: the spare's address, or else an address it did
// not list before. A node found that way is named by its address.
func (e *External) Add(ctx context.Context, c *Cluster) (*Node, error) {
	known := map[string]bool{}
	for _, n := range c.Nodes {
		known[n.Addr()] = true
	}
	if before, err := e.rdb.Members(ctx, c); err == nil {
		for a := range before {
			known[a] = true
		}
	}
	var want *Node
	if len(e.spares) > 0 {
		want = remoteNode(e.spares[0])
	}
	if err := e.run(ctx, "add", want, members(c)+1); err != nil {
		return nil, err
	}
	var found string
	what := "add: the new node listed by " + e.spec.Database
	if want != nil {
		what = "add: " + want.Name + " (" + want.Addr() + ") listed by " + e.spec.Database
	}
	err := e.waitFor(ctx, what, func(ctx context.Context) (bool, string, error) {
		m, err := e.rdb.Members(ctx, c)
		if err != nil {
			return false, "", err
		}
		var seen []string
		for a, st := range m {
			if (want != nil && a == want.Addr()) || (want == nil && !known[a]) {
				if st == "up" {
					found = a
					return true, "", nil
				}
				seen = append(seen, a+" "+st)
			}
		}
		return false, strings.Join(seen, ", "), nil
	})
	if err != nil {
		return nil, err
	}
	n := want
	if n == nil {
		host, port, _ := net.SplitHostPort(found)
		p, _ := strconv.Atoi(port)
		n = &Node{Name: found, Host: host, Port: p, Remote: true}
	} else {
		e.spares = e.spares[1:]
	}
	c.Nodes = append(c.Nodes, n)
	if e.ownDSN {
		c.DSN = e.rdb.DSN(c)
	}
	return n, nil
}

// waitFor polls done every second until it holds or JoinTimeout passes;
// the error says what was awaited and what was last seen.
func (e *External) waitFor(ctx context.Context, what string, done func(context.Context) (bool, string, error)) error {
	wctx, cancel := context.WithTimeout(ctx, e.spec.JoinTimeout)
	defer cancel()
	last := "no answer yet"
	for {
		qctx, qcancel := context.WithTimeout(wctx, 10*time.Second)
		ok, seen, err := done(qctx)
		qcancel()
		switch {
		case err != nil:
			last = err.Error()
		case ok:
			return nil
		case seen != "":
			last = seen
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("external cluster: %s: not within %s (last seen: %s)", what, e.spec.JoinTimeout, last)
		case <-time.After(time.Second):
		}
	}
}

// NodeResources are what a database reports about one node's process,
// for nodes whose /proc fieldbench cannot read. NaN is not reported.
type NodeResources struct {
	CPUSeconds float64 // CPU time used since the server started
	RSSBytes   float64
	// DiskBytes is the node's data on disk as the database counts it,
	// which need not be what du says of its directory (Cassandra: its
	// tables' SSTables only, each table rounded up to whole MiB).
	DiskBytes float64
}

// ResourceReporter is an engine whose database reports its nodes'
// resource use itself.
type ResourceReporter interface {
	// ReportedResources names the figures Resources fills (cpu, rss, disk).
	ReportedResources() []string
	// ResourceSource says, in one line, where the database takes them
	// from: the same series name means different things on different
	// databases (du of a directory, or what a database counts).
	ResourceSource() string
	Resources(ctx context.Context, c *Cluster) (map[string]NodeResources, error)
}

// ReportedResources implements ResourceReporter.
func (e *External) ReportedResources() []string { return e.rdb.Reported }

// ResourceSource implements ResourceReporter.
func (e *External) ResourceSource() string { return e.rdb.Source }

// Resources implements ResourceReporter: what the database says about the
// running nodes, by node name.
func (e *External) Resources(ctx context.Context, c *Cluster) (map[string]NodeResources, error) {
	if e.rdb.Resources == nil {
		return nil, nil
	}
	return e.rdb.Resources(ctx, c)
}

// NodeStopper is an engine with its own graceful stop of one node (an
// external cluster's stop-node command); the others stop their process
// (StopNode).
type NodeStopper interface {
	StopNode(ctx context.Context, c *Cluster, name string) error
}
