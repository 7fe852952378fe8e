package rethinkdb

import (
	"context"
	_ "embed" // the reqlite start script
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster"
)

// The rethinkdb engine starts reqlite (npm package reqlite 2.3.0), a
// JavaScript reimplementation of RethinkDB 2.2's query language that keeps
// its data in memory: RethinkDB itself cannot be installed here (no Debian
// package, no registry ships it). The cluster's Version, every node's
// status and the adapter's Info say reqlite, never RethinkDB, and its
// figures say nothing about RethinkDB's speed: reqlite evaluates every
// query in one JavaScript thread and reads every document of a table for
// an index lookup. To measure a real RethinkDB, point --db at it.
//
// reqlite is started through our own script (reqlite-start.js, embedded
// here and written into the node's directory), which loads reqlite's
// unmodified modules and works around two of its defects: its driver port
// listens on every address (the script listens on the node's address
// only: 127.0.0.1, or its host's on hosts), and its
// SCRAM salt is not valid base64 (the Go driver fails the handshake with
// "illegal base64 data"; the script gives every connection a valid salt).
// The script also puts a row in rethinkdb.server_status whose
// process.version names reqlite, where a real RethinkDB names itself.
//
// With --network hosts (Options.Network) the node is a host of its own on
// the cluster's virtual network (package vnet): reqlite runs inside its
// host's namespace (`ip netns exec`) and the script binds the host's
// address only (198.18.0.1) on RethinkDB's standard driver port 28015.
// rethinkdb-go has no dial hook, so fieldbench's own administration
// connects through a relay on 127.0.0.1 that opens each connection from
// inside the node's namespace (netdial.Relay), as the adapter does from a
// load host. Down removes the network.
//
// One node only: reqlite has no clustering, no table configuration
// (config, reconfigure, rebalance answer "not implemented") and no
// persistence, so a node that is killed and started again comes back
// empty. The engine therefore has no Add and no Kill/Restart: a crash or
// join experiment on it would measure reqlite's gaps, not RethinkDB.
func init() {
	cluster.Register(&cluster.Single{
		Engine: Name, Server: "reqlite", NodeName: "reqlite1", LogFile: "reqlite.log", ConfigFile: reqliteScript, StandardPort: rethinkPort,
		CheckInstall: cluster.CheckNodeJS, ParseOptions: parseRethinkOpts, Prepare: prepareRethink, Setup: writeReqliteStart, Start: startReqlite, Describe: describeRethink,
		Detail: func(*cluster.Cluster) map[string]string {
			return map[string]string{"not_verified": "config/reconfigure, persistence, clustering"}
		},
		Probe:    probeRethink,
		External: &rethinkRemote,
	})
}

const (
	// ReqliteVersion is the reqlite release the engine runs.
	ReqliteVersion = "2.3.0"
	// ReqliteServer is what the engine records as the server.
	ReqliteServer = "reqlite " + ReqliteVersion + ", a JavaScript reimplementation of RethinkDB 2.2"
	// rethinkDatabase is the database the cluster's DSN names.
	rethinkDatabase = "fieldbench"
	// reqliteScript is the start script's name in the node's directory.
	reqliteScript = "reqlite-start.js"
	// rethinkPort is RethinkDB's standard driver port, the node's port on
	// a host of its own.
	rethinkPort = 28015
)

// reqliteStart is reqlite-start.js, beside this file: our start script,
// not a copy of reqlite's code.
//
//go:embed reqlite-start.js
var reqliteStart []byte

// ReqliteDir is where reqlite is installed: $FIELDBENCH_REQLITE if set,
// else $XDG_CACHE_HOME/fieldbench/reqlite-VERSION, else
// ~/.cache/fieldbench/reqlite-VERSION.
func ReqliteDir() (string, error) {
	return cluster.NPMDir("FIELDBENCH_REQLITE", "reqlite", ReqliteVersion)
}

// InstallReqlite installs reqlite into ReqliteDir with npm unless it is
// there, and returns the directory.
func InstallReqlite(ctx context.Context) (string, error) {
	dir, err := ReqliteDir()
	if err != nil {
		return "", err
	}
	if err := cluster.NPMInstall(ctx, dir, "reqlite", ReqliteVersion); err != nil {
		return "", err
	}
	return dir, nil
}

// parseRethinkOpts refuses what reqlite cannot do: more than one node,
// and any engine option (there is none).
func parseRethinkOpts(o cluster.Options) error {
	for k := range o.Extra {
		return fmt.Errorf("rethinkdb: unknown option %q (the engine has none)", k)
	}
	if o.Nodes > 1 {
		return fmt.Errorf("rethinkdb: reqlite has no clustering (no shards, no replicas, no table configuration), "+
			"so the engine starts one node (got --nodes %d): %w", o.Nodes, cluster.ErrUnsupported)
	}
	return nil
}

// prepareRethink reads the options and installs reqlite when it is
// missing (the engine's Check is node and npm: cluster.CheckNodeJS); the
// node listens on RethinkDB's driver port 28015 on hosts and keeps
// nothing.
func prepareRethink(ctx context.Context, opts cluster.Options) (map[string]string, error) {
	if err := parseRethinkOpts(opts); err != nil {
		return nil, err
	}
	rdir, err := InstallReqlite(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"server":       ReqliteServer + " (in memory), standing in for RethinkDB",
		"reqlite":      rdir,
		"not_verified": "config/reconfigure, persistence, clustering: reqlite has none of them (not verified here)",
	}, nil
}

// writeReqliteStart writes the start script into the node's directory.
func writeReqliteStart(n *cluster.Node) error {
	if err := os.WriteFile(n.Config, reqliteStart, 0o644); err != nil {
		return fmt.Errorf("rethinkdb: write the start script: %w", err)
	}
	return nil
}

// describeRethink names the cluster after the reqlite that answers and
// gives the DSN of its database.
func describeRethink(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (version, dsn string, err error) {
	v, err := serverVersionOf(ctx, n)
	if err != nil {
		return "", "", err
	}
	return v, fmt.Sprintf("rethinkdb://%s/%s", n.Addr(), rethinkDatabase), nil
}

// startReqlite starts n's reqlite through the start script and waits until
// it answers a query that names it; on a host, inside its namespace
// (`ip netns exec` execs node: the PID is the server's).
func startReqlite(ctx context.Context, c *cluster.Cluster, n *cluster.Node) error {
	argv := n.Command("node", n.Config, "--reqlite", c.Options["reqlite"], "--host", n.Host, "--port", strconv.Itoa(n.Port))
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Dir: n.DataDir, LogFile: n.LogFile, Args: argv[1:], Cluster: c, Node: n})
	if err != nil {
		return err
	}
	n.PID, n.Stopped = pid, false
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	fail := func(err error) error {
		_ = cluster.Kill(pid)
		n.PID = 0
		return err
	}
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		return fail(err)
	}
	if _, err := serverVersionOf(wctx, n); err != nil {
		return fail(err)
	}
	return nil
}

// rethinkSession connects to n as admin without a password (reqlite checks
// none; it answers with a signature made from the empty password). A node
// on a host is reached through a relay that dials from inside its
// namespace, the only place its address is reachable from (rethinkdb-go
// has no dial hook). done closes the session and the relay.
func rethinkSession(n *cluster.Node) (s *r.Session, done func(), err error) {
	addr := n.Addr()
	var relay *netdial.Relay
	if n.Netns != "" {
		if relay, err = netdial.NewRelay(addr, func(ctx context.Context, _, a string) (net.Conn, error) { return n.Dial(ctx, a) }); err != nil {
			return nil, nil, fmt.Errorf("rethinkdb: %w", err)
		}
		addr = relay.Addr()
	}
	s, err = r.Connect(r.ConnectOpts{Address: addr, Username: "admin", Timeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	closeRelay := func() {
		if relay != nil {
			_ = relay.Close()
		}
	}
	if err != nil {
		closeRelay()
		return nil, nil, err
	}
	return s, func() { _ = s.Close(); closeRelay() }, nil
}

// serverVersionOf asks n what it is until it answers (or ctx ends) and
// checks that it is reqlite; it returns "reqlite VERSION".
func serverVersionOf(ctx context.Context, n *cluster.Node) (string, error) {
	var srv serverID
	var err error
	for {
		var s *r.Session
		var done func()
		if s, done, err = rethinkSession(n); err == nil {
			srv, err = serverOf(ctx, s)
			done()
		}
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("rethinkdb: ask %s what it is: %w; log ends:\n%s", n.Addr(), err, cluster.LogTail(n.LogFile, 1500))
	}
	if !srv.IsReqlite() {
		return "", fmt.Errorf("rethinkdb: the server on %s is not reqlite (it says %q)", n.Addr(), srv.Raw)
	}
	return srv.Name + " " + srv.Version, nil
}

// probeRethink is the engine's status of a running node: what it says it
// is and how many databases and tables it holds besides its system
// database.
func probeRethink(ctx context.Context, n *cluster.Node, detail map[string]string) error {
	v, err := serverVersionOf(ctx, n)
	if err != nil {
		return err
	}
	detail["server"] = v + " (a JavaScript reimplementation of RethinkDB 2.2, in memory)"
	if dbs, tables, err := rethinkCounts(ctx, n); err == nil {
		detail["databases"] = strconv.Itoa(dbs)
		detail["tables"] = strconv.Itoa(tables)
	}
	return nil
}

// rethinkCounts counts n's databases and their tables, the system
// database left out.
func rethinkCounts(ctx context.Context, n *cluster.Node) (dbs, tables int, err error) {
	s, done, err := rethinkSession(n)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	var names []string
	if err := readAll(ctx, s, r.DBList(), &names); err != nil {
		return 0, 0, err
	}
	for _, d := range names {
		if d == "rethinkdb" {
			continue
		}
		dbs++
		var t []string
		if err := readAll(ctx, s, r.DB(d).TableList(), &t); err != nil {
			return 0, 0, err
		}
		tables += len(t)
	}
	return dbs, tables, nil
}

func readAll(ctx context.Context, s *r.Session, t r.Term, into any) error {
	cur, err := t.Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return err
	}
	defer cur.Close()
	return cur.All(into)
}
