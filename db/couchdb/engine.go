package couchdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

// The couchdb engine starts pouchdb-server (PouchDB's CouchDB-compatible
// HTTP server on LevelDB, npm package pouchdb-server 4.2.0), not Apache
// CouchDB, which cannot be installed here: status, the cluster description
// and results name it as pouchdb-server. Each node is one pouchdb-server
// process bound to 127.0.0.1 (its --host option) on a free port, its
// databases, config.json and log under the node's directory.
//
// pouchdb-server has no clustering of its own (no shards, no _membership),
// so N nodes are N standalone servers that replicate every fieldbench
// database continuously both ways: each node pulls each database from every
// other through a document in its _replicator database (couchapi). The
// adapter sets that up for the databases it creates (the DSN's peers=);
// Add creates every replicated database on the new node and links it to
// all the others; Restart starts the node's own pulls again (they live in
// its _replicator) and renews the other nodes' pulls from it, which
// pouchdb-server does not retry once their source died.
//
// With --network hosts (Options.Network) every node is a host of its own
// on the cluster's virtual network (package vnet) instead: pouchdb-server
// runs inside its host's namespace (`ip netns exec`), binds its host's
// address only (198.18.0.N, its --host) on CouchDB's standard port 5984,
// and the replications name the other nodes by their host addresses, so
// each node pulls from its peers across the virtual network. fieldbench
// administers every node from inside its host (its HTTP client dials
// through the namespace). Down removes the network. pouchdb-server needs
// no user of its own: it runs as the user fieldbench runs as, as on
// loopback.
//
// pouchdb-server is installed on first use with npm into a cache directory
// outside the repository (PouchDBDir), as scripts/install-servers.sh does.
func init() { cluster.Register(couchEngine{}) }

type couchEngine struct{}

// couchPort is CouchDB's standard port, a node's port on a host of its
// own.
const couchPort = 5984

// PouchDBVersion is the pouchdb-server release the engine runs.
const PouchDBVersion = "4.2.0"

// Name implements Engine.
func (couchEngine) Name() string { return Name }

// NodeNames: couch1, couch2...
func (couchEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return cluster.Numbered("couch", nodes+adds)
}

// Hosts implements Hoster: the engine starts its nodes on hosts too.
func (couchEngine) Hosts() (bool, string) { return true, "" }

// Budgets implements cluster.BudgetHolder: every node is one pouchdb-server, started through cluster.Start with its node named.
func (couchEngine) Budgets() (bool, string) { return true, "" }

// CheckNodes implements NodeLimiter.
func (e couchEngine) CheckNodes(nodes int, _ map[string]string) error {
	return cluster.NodeLimit(e.Name(), nodes, 8, "each node is a Node.js pouchdb-server process (about 100 MB resident) that replicates every database "+
		"from every other node, so replication work grows with the square of the nodes")
}

// CheckOptions implements OptionChecker: the engine has no option.
func (couchEngine) CheckOptions(o cluster.Options) error {
	for k := range o.Extra {
		return fmt.Errorf("couchdb: unknown option %q (the engine has none)", k)
	}
	return nil
}

// PouchDBDir is where pouchdb-server is installed: $FIELDBENCH_POUCHDB if
// set, else $XDG_CACHE_HOME/fieldbench/pouchdb-server-VERSION, else
// ~/.cache/fieldbench/pouchdb-server-VERSION.
func PouchDBDir() (string, error) {
	return cluster.NPMDir("FIELDBENCH_POUCHDB", "pouchdb-server", PouchDBVersion)
}

func pouchBin(dir string) string {
	return filepath.Join(dir, "node_modules", "pouchdb-server", "bin", "pouchdb-server")
}

// Check implements Engine: node and npm must be installed; pouchdb-server
// itself is installed by Up when missing.
func (couchEngine) Check() error { return cluster.CheckNodeJS() }

// InstallPouchDB installs pouchdb-server into PouchDBDir with npm unless
// it is there, and returns the server's script (NPMInstall: concurrent
// callers wait for one install).
func InstallPouchDB(ctx context.Context) (string, error) {
	dir, err := PouchDBDir()
	if err != nil {
		return "", err
	}
	if err := cluster.NPMInstall(ctx, dir, "pouchdb-server", PouchDBVersion); err != nil {
		return "", err
	}
	return pouchBin(dir), nil
}

// Up implements Engine. Whatever fails, the cluster returned (if any)
// holds what was started, for the caller's Down.
func (e couchEngine) Up(ctx context.Context, dir string, opts cluster.Options) (*cluster.Cluster, error) {
	if err := e.CheckOptions(opts); err != nil {
		return nil, err
	}
	bin, err := InstallPouchDB(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("couchdb: cluster directory: %w", err)
	}
	c := &cluster.Cluster{Engine: e.Name(), Dir: dir, Started: time.Now().UTC(), Budget: opts.Budget, Options: map[string]string{
		"server": "pouchdb-server", "bin": bin, "replication": "continuous, both ways between every pair of nodes"}}
	if opts.Network == cluster.NetworkHosts {
		if err := cluster.CheckNetwork(e.Name(), cluster.NetworkHosts); err != nil {
			return nil, err
		}
		if err := c.CreateHosts(ctx); err != nil {
			return c, err
		}
	}
	for range max(opts.Nodes, 1) {
		if _, err := startNewCouch(ctx, c); err != nil {
			return c, err
		}
	}
	w, err := couchClient(c.Nodes[0]).Welcome(ctx)
	if err != nil {
		return c, fmt.Errorf("couchdb: %w", err)
	}
	c.Version = w.Server + " " + w.Version
	c.DSN = couchDSN(c)
	return c, nil
}

// couchDSN is the adapter's DSN: the first running node, every other
// running node as a peer.
func couchDSN(c *cluster.Cluster) string {
	var first string
	var peers []string
	for _, n := range c.Nodes {
		if n.Stopped {
			continue
		}
		if first == "" {
			first = n.Addr()
		} else {
			peers = append(peers, n.Addr())
		}
	}
	dsn := "couchdb://" + first
	if len(peers) > 0 {
		dsn += "?peers=" + strings.Join(peers, ",")
	}
	return dsn
}

// couchClient is an HTTP client of one node, for administration; a node
// on a host is dialled from inside its host's namespace, the only place
// its address is reachable from.
func couchClient(n *cluster.Node) *couchapi.Client {
	hc := &http.Client{Timeout: 30 * time.Second}
	if n.Netns != "" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return n.Dial(ctx, addr) }
		hc.Transport = tr
	}
	return &couchapi.Client{Base: "http://" + n.Addr(), HTTP: hc}
}

// runningCouch are the clients of c's running nodes.
func runningCouch(c *cluster.Cluster) []*couchapi.Client {
	var out []*couchapi.Client
	for _, n := range c.Nodes {
		if !n.Stopped && cluster.Alive(n.PID) {
			out = append(out, couchClient(n))
		}
	}
	return out
}

// startNewCouch adds a node to c and starts it on a free port, or on a
// host of its own (the first node address no other node has) on the
// standard port.
func startNewCouch(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	name := fmt.Sprintf("couch%d", len(c.Nodes)+1)
	ndir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(filepath.Join(ndir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("couchdb: node directory: %w", err)
	}
	n := &cluster.Node{Name: name, Role: "pouchdb-server", Host: cluster.Loopback, DataDir: filepath.Join(ndir, "data"),
		LogFile: filepath.Join(ndir, "pouchdb-server.log"), Config: filepath.Join(ndir, "config.json")}
	if c.OnHosts() {
		h, err := cluster.AddNodeHost(ctx, c, name)
		if err != nil {
			return nil, fmt.Errorf("couchdb: %w", err)
		}
		n.Host, n.Netns, n.Port = h.Addr.String(), h.NS, couchPort
		if err := startCouchNode(ctx, c, n); err != nil {
			_ = vnet.ForDir(c.Dir).RemoveHost(context.WithoutCancel(ctx), name)
			return nil, fmt.Errorf("couchdb: start %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, n)
		return n, nil
	}
	err := cluster.Retry(5, func(int) error {
		p, err := cluster.FreePort(cluster.Loopback)
		if err != nil {
			return err
		}
		n.Port = p
		return startCouchNode(ctx, c, n)
	})
	if err != nil {
		return nil, fmt.Errorf("couchdb: start %s: %w", name, err)
	}
	c.Nodes = append(c.Nodes, n)
	return n, nil
}

// startCouchNode starts n's pouchdb-server, bound to n's address only, and
// waits until it answers GET /. On a host, `ip netns exec` enters its
// namespace and execs node: the PID is the server's.
func startCouchNode(ctx context.Context, c *cluster.Cluster, n *cluster.Node) error {
	bin := c.Options["bin"]
	if bin == "" {
		var err error
		if bin, err = InstallPouchDB(ctx); err != nil {
			return err
		}
	}
	argv := n.Command("node", bin, "--port", strconv.Itoa(n.Port), "--host", n.Host,
		"--dir", n.DataDir, "--config", n.Config, "--no-stdout-logs", "--no-color")
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: filepath.Dir(n.DataDir), LogFile: n.LogFile, Cluster: c, Node: n})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		_ = cluster.Kill(pid)
		return err
	}
	cl := couchClient(n)
	for {
		_, err := cl.Welcome(wctx)
		if err == nil {
			break
		}
		if wctx.Err() != nil || !cluster.Alive(pid) {
			_ = cluster.Kill(pid)
			return fmt.Errorf("couchdb %s not answering GET /: %w; log ends:\n%s", n.Name, err, cluster.LogTail(n.LogFile, 1500))
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.PID, n.Stopped = pid, false
	return nil
}

// Status implements Engine: what the node says it is (server and version
// from its welcome), its databases, the fieldbench replications it pulls,
// and the documents of its databases; on hosts, its host's counters too.
func (couchEngine) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	return cluster.NodeStatuses(ctx, c, func(*cluster.Node) map[string]string { return map[string]string{} }, probeCouch), nil
}

// probeCouch is the status detail of a running node: its welcome, its
// databases and documents, and the replications it pulls.
func probeCouch(ctx context.Context, n *cluster.Node, detail map[string]string) error {
	cl := couchClient(n)
	w, err := cl.Welcome(ctx)
	if err != nil {
		return err
	}
	detail["server"] = w.Server + " " + w.Version
	couchCountDetail(ctx, cl, detail)
	if r, err := couchapi.ReplicatedDBs(ctx, cl); err == nil {
		detail["replicated_dbs"] = strconv.Itoa(len(r))
	}
	return nil
}

// couchCountDetail adds to a member's status detail how many user
// databases it holds and their documents in all; a member that cannot
// list its databases gets neither, one database that does not answer
// counts for nothing (a status is a best-effort look, not a check).
func couchCountDetail(ctx context.Context, cl *couchapi.Client, detail map[string]string) {
	dbs, err := couchapi.UserDBs(ctx, cl)
	if err != nil {
		return
	}
	detail["databases"] = strconv.Itoa(len(dbs))
	var docs int64
	for _, d := range dbs {
		if i, err := cl.DBInfo(ctx, d); err == nil {
			docs += i.DocCount
		}
	}
	detail["docs"] = strconv.FormatInt(docs, 10)
}

// Down implements Engine: SIGTERM, SIGKILL after 15 s. On a virtual
// network it then removes every namespace and interface of the network,
// found from the directory alone.
func (couchEngine) Down(ctx context.Context, c *cluster.Cluster) error {
	return cluster.StopOnNetwork(ctx, c, "couchdb")
}

// Add implements Grower: a new empty node; every database a running node
// holds is created on it and replicated both ways with every running node,
// so it fills by replication (Moving says when it caught up).
func (couchEngine) Add(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	live := runningCouch(c)
	if len(live) == 0 {
		return nil, errors.New("couchdb: no running node to copy the databases from")
	}
	dbs, err := couchapi.UserDBs(ctx, live[0])
	if err != nil {
		return nil, fmt.Errorf("couchdb: list databases: %w", err)
	}
	n, err := startNewCouch(ctx, c)
	if err != nil {
		return nil, err
	}
	all := append(live, couchClient(n))
	for _, d := range dbs {
		if err := couchapi.CreateReplicated(ctx, all, d, false); err != nil {
			return n, fmt.Errorf("couchdb: add %s: %w", n.Name, err)
		}
	}
	c.DSN = couchDSN(c)
	return n, nil
}

// Moving implements Mover: data is moving while two running nodes hold a
// different number of documents in some database.
func (couchEngine) Moving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	live := runningCouch(c)
	if len(live) < 2 {
		return false, "", nil
	}
	dbs, err := couchapi.UserDBs(ctx, live[0])
	if err != nil {
		return false, "", fmt.Errorf("couchdb: list databases: %w", err)
	}
	for _, d := range dbs {
		var counts []string
		differ := false
		var first int64 = -1
		for _, n := range live {
			i, err := n.DBInfo(ctx, d)
			if err != nil {
				return false, "", fmt.Errorf("couchdb: %s on %s: %w", d, n.Base, err)
			}
			if first >= 0 && i.DocCount != first {
				differ = true
			}
			if first < 0 {
				first = i.DocCount
			}
			counts = append(counts, strconv.FormatInt(i.DocCount, 10))
		}
		if differ {
			return true, fmt.Sprintf("%s: documents per node %s", d, strings.Join(counts, "/")), nil
		}
	}
	return false, "", nil
}

// Kill implements Killer: SIGKILL.
func (couchEngine) Kill(_ context.Context, c *cluster.Cluster, name string) error {
	return c.KillNode(name)
}

// Healed implements Healer: the replications between each healed node and
// every other running node are renewed both ways (couchapi.Retrigger,
// as after a restart): a pull that met a partition stopped for good.
func (couchEngine) Healed(ctx context.Context, c *cluster.Cluster, names []string) error {
	running := runningCouch(c)
	for _, name := range names {
		n, err := c.Node(name)
		if err != nil {
			return err
		}
		if !n.Running() {
			continue
		}
		h := couchClient(n)
		if err := couchapi.Retrigger(ctx, running, h); err != nil {
			return fmt.Errorf("couchdb: healed %s: renew replications from it: %w", name, err)
		}
		for _, o := range running {
			if o.Base == h.Base {
				continue
			}
			if err := couchapi.Retrigger(ctx, []*couchapi.Client{h}, o); err != nil {
				return fmt.Errorf("couchdb: healed %s: renew replications to it: %w", name, err)
			}
		}
	}
	return nil
}

// HealNote implements Healer.
func (couchEngine) HealNote() string {
	return "replications between the healed nodes and the others renewed (pouchdb-server does not resume them)"
}

// Restart implements Killer: the node starts on its port and data again;
// its own pulls restart from its _replicator database, and the other
// running nodes' pulls from it are renewed (couchapi.Retrigger).
func (couchEngine) Restart(ctx context.Context, c *cluster.Cluster, name string) error {
	n, err := cluster.RestartNode(ctx, c, "couchdb", name, func(n *cluster.Node) error { return startCouchNode(ctx, c, n) })
	if err != nil {
		return err
	}
	if err := couchapi.Retrigger(ctx, runningCouch(c), couchClient(n)); err != nil {
		return fmt.Errorf("couchdb: restart %s: renew replications from it: %w", name, err)
	}
	return nil
}
