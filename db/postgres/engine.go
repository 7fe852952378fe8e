package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// The postgres engine runs PostgreSQL (with PostGIS) as one primary and N-1
// streaming replicas, every node on 127.0.0.1 with its own port, data
// directory and Unix socket directory under the cluster directory. See
// docs/postgres.md.
//
// With --network hosts (Options.Network) every node is a host of its own
// on the cluster's virtual network (package vnet) instead: the server runs
// inside its host's namespace (`ip netns exec`, then setpriv to the
// postgres user), listens on its host's address only (198.18.0.N) on the
// standard port 5432, and a replica streams from the primary's host
// address (primary_conninfo names it). pg_hba.conf then trusts the local
// socket and the virtual network's block 198.18.0.0/15 only. fieldbench
// administers every node from inside its host (pgx dials through the
// namespace, pg_basebackup runs in the new replica's host). Down removes
// the network.
func init() { cluster.Register(pgEngine{}) }

// PGDatabase is the database the engine creates (with PostGIS) on the
// primary; the DSN points at it.
const PGDatabase = "fieldbench"

// pgUser is the operating-system user the servers run as (postgres refuses
// to run as root) and the database superuser the DSN names.
const pgUser = "postgres"

// pgPort is PostgreSQL's standard port, a node's port on a host of its
// own.
const pgPort = 5432

// pgHostsHBA is pg_hba.conf on hosts: the local socket and the virtual
// network's addresses, for queries and for replication, and nothing else
// (no loopback entry: the server listens on its host's address only).
// trust, as on loopback: the network holds fieldbench's hosts only, and a
// benchmark cluster has no secret to keep.
var pgHostsHBA = `# written by fieldbench: the cluster's nodes are hosts on fieldbench's
# virtual network (198.18.0.0/15, reachable from its namespaces only).
# TYPE  DATABASE     USER      ADDRESS          METHOD
local   all          all                        trust
local   replication  all                        trust
host    all          ` + pgUser + `  ` + vnet.Block.String() + `    trust
host    replication  ` + pgUser + `  ` + vnet.Block.String() + `    trust
`

// pgConfName is the settings file shared by every node, included from each
// data directory's postgresql.conf. Per-node settings (port, socket
// directory, cluster_name) go on the command line instead, so that a
// replica's data directory copied by pg_basebackup includes the same file.
const pgConfName = "postgresql.fieldbench.conf"

// pgDefaults are the server settings fieldbench uses unless --opt overrides
// them. They are a benchmark cluster's, not a production one's: durable
// (fsync, synchronous_commit on) but sized for this machine.
var pgDefaults = map[string]string{
	"max_connections":      "300",
	"shared_buffers":       "512MB",
	"synchronous_commit":   "on",
	"fsync":                "on",
	"wal_level":            "replica",
	"max_wal_senders":      "16",
	"wal_keep_size":        "1024MB",
	"hot_standby":          "on",
	"hot_standby_feedback": "on",
	"max_wal_size":         "2GB",
	"checkpoint_timeout":   "15min",
	"log_line_prefix":      "'%m [%p] %q%u@%d '",
	"logging_collector":    "off",
}

// pgRecorded are the settings copied into Cluster.Options (with the
// engine's own options such as read_from).
var pgRecorded = []string{"shared_buffers", "synchronous_commit", "fsync", "wal_level", "max_connections", "server_version"}

// pgEngineOptions are --opt keys the engine interprets itself; any other
// key is written into the settings file as a server setting.
var pgEngineOptions = map[string]bool{"read_from": true}

type pgEngine struct{}

func (pgEngine) Name() string { return "postgres" }

// Hosts implements Hoster: the engine starts its nodes on hosts too.
func (pgEngine) Hosts() (bool, string) { return true, "" }

// StopSignal implements cluster.StopSignaler: SIGINT, PostgreSQL's fast
// shutdown (its SIGTERM "smart" shutdown waits for every client to
// disconnect).
func (pgEngine) StopSignal() syscall.Signal { return syscall.SIGINT }

// Budgets implements cluster.BudgetHolder: every node is one postmaster, started through cluster.Start with its node named; its backends and the replication processes it forks are born in its group.
func (pgEngine) Budgets() (bool, string) { return true, "" }

// CheckNodes implements NodeLimiter.
func (e pgEngine) CheckNodes(nodes int, _ map[string]string) error {
	return cluster.NodeLimit(e.Name(), nodes, 16, "each node is a full PostgreSQL server (shared buffers, WAL sender, a base backup of the primary)")
}

// pgEngine has no CheckOptions (OptionChecker): its options are server
// settings (--opt shared_buffers=128MB), any of which it writes to the
// configuration for the server to judge.

var (
	_ cluster.Engine = pgEngine{}
	_ cluster.Grower = pgEngine{}
	_ cluster.Killer = pgEngine{}
	_ cluster.Mover  = pgEngine{}
)

// PGBinDir returns the directory of the newest installed PostgreSQL's
// server binaries (Debian: /usr/lib/postgresql/MAJOR/bin); the environment
// variable FIELDBENCH_PG_BIN overrides it.
func PGBinDir() (string, error) {
	if d := os.Getenv("FIELDBENCH_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestMajor := "", -1
	for _, d := range dirs {
		major, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil && major > bestMajor {
			best, bestMajor = d, major
		}
	}
	if best == "" {
		return "", fmt.Errorf("postgres: no PostgreSQL server under /usr/lib/postgresql/*/bin; run scripts/install-servers.sh (Debian packages postgresql-15 postgresql-15-postgis-3)")
	}
	return best, nil
}

// Check implements Engine: the server binaries, PostGIS and the postgres
// user must exist.
func (pgEngine) Check() error {
	bin, err := PGBinDir()
	if err != nil {
		return err
	}
	for _, b := range []string{"initdb", "postgres", "pg_basebackup", "pg_isready"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("postgres: %s missing in %s; run scripts/install-servers.sh: %w", b, bin, err)
		}
	}
	major := filepath.Base(filepath.Dir(bin))
	if m, _ := filepath.Glob("/usr/share/postgresql/" + major + "/extension/postgis.control"); len(m) == 0 {
		return fmt.Errorf("postgres: PostGIS for PostgreSQL %s is not installed; run scripts/install-servers.sh (Debian package postgresql-%s-postgis-3)", major, major)
	}
	if _, err := cluster.UserCredential(pgUser); err != nil {
		return fmt.Errorf("postgres: %w; run scripts/install-servers.sh", err)
	}
	return nil
}

// pgSettings merges the defaults with the user's --opt settings.
func pgSettings(extra map[string]string) map[string]string {
	s := map[string]string{}
	for k, v := range pgDefaults {
		s[k] = v
	}
	for k, v := range extra {
		if !pgEngineOptions[k] {
			s[k] = v
		}
	}
	return s
}

func validSettingName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// writePGConf writes the shared settings file.
func writePGConf(path string, settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if !validSettingName(k) {
			return fmt.Errorf("postgres: invalid setting name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by fieldbench: settings shared by every node of this cluster.\n")
	b.WriteString("# Per-node settings (port, unix_socket_directories, listen_addresses,\n# cluster_name) are given on each server's command line.\n")
	for _, k := range keys {
		v := settings[k]
		if !strings.HasPrefix(v, "'") {
			v = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Up implements Engine: initdb and start the primary, create the
// fieldbench database with PostGIS, then clone and start opts.Nodes-1
// streaming replicas with pg_basebackup.
func (e pgEngine) Up(ctx context.Context, dir string, opts cluster.Options) (_ *cluster.Cluster, err error) {
	if err := e.Check(); err != nil {
		return nil, err
	}
	n := max(opts.Nodes, 1)
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("postgres: create %s: %w", dir, err)
	}
	// The servers run as postgres: they must be able to reach dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("postgres: chmod %s: %w", dir, err)
	}
	if err := cluster.RunAs(ctx, pgUser, "/", "/usr/bin/test", "-x", dir); err != nil {
		return nil, fmt.Errorf("postgres: the %s user cannot reach %s (a parent directory is not world-searchable, e.g. a 0700 test directory; chmod its parents 0755 or use another --dir): %w", pgUser, dir, err)
	}
	// A state without nodes is the one Prepare wrote for this very start.
	if prev, err := cluster.Load(dir); err == nil && len(prev.Nodes) > 0 {
		return nil, fmt.Errorf("postgres: %s already holds a cluster (%s); run `cluster down` and remove it, or use another directory", dir, cluster.StateFile)
	}
	settings := pgSettings(opts.Extra)
	conf := filepath.Join(dir, pgConfName)
	if err := writePGConf(conf, settings); err != nil {
		return nil, err
	}
	c := &cluster.Cluster{Engine: e.Name(), Dir: dir, Started: time.Now().UTC(), Budget: opts.Budget, Options: map[string]string{}}
	for k, v := range opts.Extra {
		c.Options[k] = v
	}
	// Whatever fails from here on, stop what was started (and remove the
	// network, if any).
	defer func() {
		if err != nil {
			_ = e.Down(context.WithoutCancel(ctx), c)
		}
	}()
	if opts.Network == cluster.NetworkHosts {
		if err := cluster.CheckNetwork(e.Name(), cluster.NetworkHosts); err != nil {
			return nil, err
		}
		// The server must drop root inside its host's namespace, which
		// only a root process can enter.
		if _, err := exec.LookPath("setpriv"); err != nil {
			return nil, fmt.Errorf("postgres: --network hosts needs setpriv (Debian package util-linux): %w", err)
		}
		if err := c.CreateHosts(ctx); err != nil {
			return nil, err
		}
	}
	primary, err := e.initPrimary(ctx, c, conf)
	if err != nil {
		return nil, err
	}
	if err := e.start(ctx, c, primary); err != nil {
		return nil, err
	}
	if err := pgSetupDatabase(ctx, primary); err != nil {
		return nil, err
	}
	for i := 2; i <= n; i++ {
		if _, err := e.addReplica(ctx, c); err != nil {
			return nil, err
		}
	}
	if err := e.waitStreaming(ctx, c); err != nil {
		return nil, err
	}
	if err := pgRecordSettings(ctx, c, primary); err != nil {
		return nil, err
	}
	c.DSN = pgDSN(c)
	if err := c.Save(); err != nil {
		return nil, err
	}
	return c, nil
}

// pgSocketDir is where a node's Unix socket goes: its directory, or none
// (TCP only, which is all fieldbench uses) when the socket's path would
// pass the 107 bytes a Unix socket path may have — PostgreSQL then refused
// to start at all in a deep results directory (an experiment's cluster).
func pgSocketDir(nodeDir string) string {
	const maxSocketPath = 107
	if len(nodeDir)+len("/.s.PGSQL.65535.lock") > maxSocketPath {
		return ""
	}
	return nodeDir
}

// pgNewNode creates a node's directory (its Unix socket directory, log and
// data directory's parent), owned by postgres; on hosts it also makes the
// node's host, with the first node address no other node has.
func pgNewNode(ctx context.Context, c *cluster.Cluster, name, role string) (*cluster.Node, error) {
	nd := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(nd, 0o755); err != nil {
		return nil, fmt.Errorf("postgres: create %s: %w", nd, err)
	}
	if err := cluster.Chown(nd, pgUser); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	n := &cluster.Node{
		Name:    name,
		Role:    role,
		Host:    cluster.Loopback,
		DataDir: filepath.Join(nd, "data"),
		LogFile: filepath.Join(nd, "postgres.log"),
		Config:  filepath.Join(c.Dir, pgConfName),
	}
	if !c.OnHosts() {
		return n, nil
	}
	h, err := cluster.AddNodeHost(ctx, c, name)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	n.Host, n.Netns, n.Port = h.Addr.String(), h.NS, pgPort
	return n, nil
}

// pgCommand is argv run as the postgres user where node is: as is (the
// caller sets the user) on loopback; on a host, inside its namespace and
// then as postgres through setpriv, which execs argv in place (the PID
// `ip netns exec` started is argv's).
func pgCommand(n *cluster.Node, argv ...string) (cmd []string, usr string) {
	if n.Netns == "" {
		return argv, pgUser
	}
	return vnet.Command(n.Netns, cluster.AsUser(pgUser, argv...)...), ""
}

func (pgEngine) initPrimary(ctx context.Context, c *cluster.Cluster, conf string) (*cluster.Node, error) {
	bin, err := PGBinDir()
	if err != nil {
		return nil, err
	}
	node, err := pgNewNode(ctx, c, "pg1", "primary")
	if err != nil {
		return nil, err
	}
	c.Nodes = append(c.Nodes, node)
	// trust for local and 127.0.0.1 connections (including replication):
	// the servers are reachable from this machine only, and a benchmark
	// cluster has no secret to keep. See docs/postgres.md.
	if err := cluster.RunAs(ctx, pgUser, filepath.Dir(node.DataDir), filepath.Join(bin, "initdb"),
		"-D", node.DataDir, "-U", pgUser, "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"); err != nil {
		return nil, fmt.Errorf("postgres: initdb: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(node.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# fieldbench\ninclude '%s'\n", conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: include settings: %w", err)
	}
	// The replicas' data directories are copies of the primary's, so
	// they get the same pg_hba.conf.
	if c.OnHosts() {
		if err := os.WriteFile(filepath.Join(node.DataDir, "pg_hba.conf"), []byte(pgHostsHBA), 0o600); err != nil {
			return nil, fmt.Errorf("postgres: write pg_hba.conf: %w", err)
		}
		if err := cluster.Chown(filepath.Join(node.DataDir, "pg_hba.conf"), pgUser); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	return node, nil
}

// start starts node on a free port, retrying with a new port when the
// server lost its port to a race, and waits until it accepts queries. On a
// host it starts on the standard port of its host's address, which nothing
// else binds; a retry there, a second later, is for a restart right after
// a kill, when the killed postmaster's socket lock file still names a
// process not yet gone (seen here: "lock file .s.PGSQL.5432.lock already
// exists"; on loopback the new port's lock file differs).
func (pgEngine) start(ctx context.Context, c *cluster.Cluster, node *cluster.Node) error {
	bin, err := PGBinDir()
	if err != nil {
		return err
	}
	nodeDir := filepath.Dir(node.DataDir)
	attempt := func(i int) error {
		if node.Netns != "" && i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		if node.Netns == "" && (i > 0 || node.Port == 0) {
			p, err := cluster.FreePort(cluster.Loopback)
			if err != nil {
				return err
			}
			node.Port = p
		}
		// A stale pid file of a killed server stops a new one from starting.
		if pid, ok := pgPIDFile(node.DataDir); ok && !cluster.Alive(pid) {
			_ = os.Remove(filepath.Join(node.DataDir, "postmaster.pid"))
		}
		argv, usr := pgCommand(node, filepath.Join(bin, "postgres"),
			"-D", node.DataDir, "-p", strconv.Itoa(node.Port), "-k", pgSocketDir(nodeDir),
			"-c", "listen_addresses="+node.Host, "-c", "cluster_name="+node.Name)
		pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: nodeDir, LogFile: node.LogFile, User: usr, Cluster: c, Node: node})
		if err != nil {
			return err
		}
		node.PID = pid
		node.Stopped = false
		wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		defer cancel()
		if err := cluster.WaitDial(wctx, node.Dial, node.Addr(), pid, node.LogFile); err != nil {
			_ = pgStopPID(pid, 10*time.Second)
			node.PID = 0
			return err
		}
		if err := pgWaitReady(wctx, node); err != nil {
			_ = pgStopPID(pid, 10*time.Second)
			node.PID = 0
			return err
		}
		return nil
	}
	if err := cluster.Retry(3, attempt); err != nil {
		return fmt.Errorf("postgres: start %s: %w", node.Name, err)
	}
	return c.Save()
}

// pgPIDFile reads the postmaster PID of a data directory.
func pgPIDFile(data string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return pid, err == nil
}

// pgNodeURL is a DSN for one node and database (no password: trust).
func pgNodeURL(n *cluster.Node, db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(pgUser), Host: n.Addr(), Path: "/" + db, RawQuery: "sslmode=disable&connect_timeout=5"}
	return u.String()
}

// pgConnect connects to one node; a node on a host is dialled from
// inside its host's namespace, the only place its address is reachable.
func pgConnect(ctx context.Context, n *cluster.Node, db string) (*pgx.Conn, error) {
	if n.Netns == "" {
		return pgx.Connect(ctx, pgNodeURL(n, db))
	}
	cfg, err := pgx.ParseConfig(pgNodeURL(n, db))
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = func(ctx context.Context, _, addr string) (net.Conn, error) { return n.Dial(ctx, addr) }
	return pgx.ConnectConfig(ctx, cfg)
}

// pgWaitReady waits until node answers a query (a replica answers once it
// reached a consistent state and accepts read-only connections).
func pgWaitReady(ctx context.Context, n *cluster.Node) error {
	var last error
	for {
		conn, err := pgConnect(ctx, n, "postgres")
		if err == nil {
			var one int
			err = conn.QueryRow(ctx, "select 1").Scan(&one)
			conn.Close(context.WithoutCancel(ctx))
			if err == nil {
				return nil
			}
		}
		last = err
		if n.PID > 0 && !cluster.Alive(n.PID) {
			return fmt.Errorf("postgres %s (pid %d) exited; log %s ends:\n%s", n.Name, n.PID, n.LogFile, cluster.LogTail(n.LogFile, 1500))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres %s not ready: %w (last error: %v); log %s ends:\n%s", n.Name, ctx.Err(), last, n.LogFile, cluster.LogTail(n.LogFile, 1500))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pgSetupDatabase creates the fieldbench database and PostGIS in it.
func pgSetupDatabase(ctx context.Context, primary *cluster.Node) error {
	conn, err := pgConnect(ctx, primary, "postgres")
	if err != nil {
		return fmt.Errorf("postgres: connect to %s: %w", primary.Name, err)
	}
	var exists bool
	err = conn.QueryRow(ctx, "select exists (select 1 from pg_database where datname = $1)", PGDatabase).Scan(&exists)
	if err == nil && !exists {
		_, err = conn.Exec(ctx, "create database "+PGDatabase)
	}
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("postgres: create database %s: %w", PGDatabase, err)
	}
	conn, err = pgConnect(ctx, primary, PGDatabase)
	if err != nil {
		return fmt.Errorf("postgres: connect to %s: %w", PGDatabase, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "create extension if not exists postgis"); err != nil {
		return fmt.Errorf("postgres: create extension postgis (package postgresql-15-postgis-3; scripts/install-servers.sh): %w", err)
	}
	return nil
}

// pgRecordSettings stores the server version and the important settings
// in c.
func pgRecordSettings(ctx context.Context, c *cluster.Cluster, primary *cluster.Node) error {
	conn, err := pgConnect(ctx, primary, PGDatabase)
	if err != nil {
		return fmt.Errorf("postgres: connect to %s: %w", primary.Name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.QueryRow(ctx, "select version()").Scan(&c.Version); err != nil {
		return fmt.Errorf("postgres: read version: %w", err)
	}
	for _, k := range pgRecorded {
		var v string
		if err := conn.QueryRow(ctx, "select current_setting($1)", k).Scan(&v); err != nil {
			return fmt.Errorf("postgres: read setting %s: %w", k, err)
		}
		c.Options[k] = v
	}
	var postgis string
	if err := conn.QueryRow(ctx, "select extversion from pg_extension where extname = 'postgis'").Scan(&postgis); err == nil {
		c.Options["postgis"] = postgis
	}
	c.Options["auth"] = "trust (127.0.0.1 and local socket only)"
	if c.OnHosts() {
		c.Options["auth"] = "trust (local socket and the virtual network " + vnet.Block.String() + " only)"
	}
	return nil
}

// pgDSN is the DSN of the cluster: the primary, plus the replicas in a
// replicas= parameter the postgres adapter strips and uses for reads when
// read_from=replicas is also given (--opt read_from=replicas).
func pgDSN(c *cluster.Cluster) string {
	var primary *cluster.Node
	var reps []string
	for _, n := range c.Nodes {
		switch n.Role {
		case "primary":
			primary = n
		case "replica":
			reps = append(reps, n.Addr())
		}
	}
	if primary == nil {
		return ""
	}
	s := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", pgUser, primary.Addr(), PGDatabase)
	if len(reps) > 0 {
		s += "&replicas=" + strings.Join(reps, ",")
		if c.Options["read_from"] == "replicas" {
			s += "&read_from=replicas"
		}
	}
	return s
}

// pgPrimary is the primary node of c.
func pgPrimary(c *cluster.Cluster) (*cluster.Node, error) {
	for _, n := range c.Nodes {
		if n.Role == "primary" {
			return n, nil
		}
	}
	return nil, fmt.Errorf("postgres: the cluster in %s has no primary", c.Dir)
}

// addReplica clones the primary with pg_basebackup -R into a new node and
// starts it.
func (e pgEngine) addReplica(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	bin, err := PGBinDir()
	if err != nil {
		return nil, err
	}
	primary, err := pgPrimary(c)
	if err != nil {
		return nil, err
	}
	if !cluster.Alive(primary.PID) {
		return nil, fmt.Errorf("postgres: primary %s is not running; a replica is cloned from it", primary.Name)
	}
	name := ""
	for i := len(c.Nodes) + 1; ; i++ {
		name = "pg" + strconv.Itoa(i)
		if _, err := c.Node(name); err != nil {
			break
		}
	}
	node, err := pgNewNode(ctx, c, name, "replica")
	if err != nil {
		return nil, err
	}
	// -R writes primary_conninfo with the address it cloned from: on
	// hosts, the primary's host address, reached from the new replica's
	// host.
	argv, usr := pgCommand(node, filepath.Join(bin, "pg_basebackup"),
		"-h", primary.Host, "-p", strconv.Itoa(primary.Port), "-U", pgUser,
		"-D", node.DataDir, "-R", "-X", "stream", "--checkpoint=fast", "--no-password")
	if err := cluster.RunAs(ctx, usr, filepath.Dir(node.DataDir), argv[0], argv[1:]...); err != nil {
		if node.Netns != "" {
			_ = vnet.ForDir(c.Dir).RemoveHost(context.WithoutCancel(ctx), node.Name)
		}
		return nil, fmt.Errorf("postgres: clone %s from %s: %w", name, primary.Name, err)
	}
	c.Nodes = append(c.Nodes, node)
	if err := e.start(ctx, c, node); err != nil {
		return nil, err
	}
	return node, nil
}

// waitStreaming waits until every running replica streams from the
// primary.
func (pgEngine) waitStreaming(ctx context.Context, c *cluster.Cluster) error {
	primary, err := pgPrimary(c)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range c.Nodes {
		if n.Role == "replica" && !n.Stopped {
			want[n.Name] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last string
	for {
		st, err := pgReplication(wctx, primary)
		if err == nil {
			ok := true
			for name := range want {
				if st[name].state != "streaming" {
					ok = false
				}
			}
			if ok {
				return nil
			}
			last = fmt.Sprint(st)
		} else {
			last = err.Error()
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("postgres: replicas not streaming after 60s (primary reports %s): %w", last, wctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type pgRepl struct {
	state    string
	lagBytes int64
	replay   string // replay_lag interval
}

// pgReplication reads pg_stat_replication on the primary, by the
// replicas' cluster_name (their walreceiver's application_name).
func pgReplication(ctx context.Context, primary *cluster.Node) (map[string]pgRepl, error) {
	conn, err := pgConnect(ctx, primary, "postgres")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `select application_name, coalesce(state, ''),
		coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), -1)::bigint,
		coalesce(replay_lag::text, '')
		from pg_stat_replication`)
	if err != nil {
		return nil, err
	}
	out := map[string]pgRepl{}
	for rows.Next() {
		var name string
		var r pgRepl
		if err := rows.Scan(&name, &r.state, &r.lagBytes, &r.replay); err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, rows.Err()
}

// Status implements Engine: role and state of every node; the primary's
// view of each replica's replication (state, bytes of WAL not yet
// replayed, replay_lag) and the replica's own replay position and delay.
func (pgEngine) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	var repl map[string]pgRepl
	var replErr error
	if p, err := pgPrimary(c); err == nil && cluster.Alive(p.PID) {
		repl, replErr = pgReplication(ctx, p)
	}
	out := make([]cluster.NodeStatus, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		st := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, PID: n.PID, Detail: map[string]string{}}
		cluster.AddHostCounters(ctx, n, st.Detail)
		if !cluster.Alive(n.PID) {
			st.State = "down"
			st.PID = 0
			out = append(out, st)
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgConnect(qctx, n, "postgres")
		if err != nil {
			cancel()
			st.State = "unreachable"
			st.Detail["error"] = err.Error()
			out = append(out, st)
			continue
		}
		st.State = "up"
		var recovery bool
		if err := conn.QueryRow(qctx, "select pg_is_in_recovery()").Scan(&recovery); err == nil {
			if recovery {
				st.Detail["recovery"] = "true"
			}
		}
		if n.Role == "primary" {
			var lsn string
			if err := conn.QueryRow(qctx, "select pg_current_wal_lsn()::text").Scan(&lsn); err == nil {
				st.Detail["wal_lsn"] = lsn
			}
			st.Detail["replicas_streaming"] = strconv.Itoa(countStreaming(repl))
			if replErr != nil {
				st.Detail["replication_error"] = replErr.Error()
			}
		} else {
			var recv, replay, delay, wr string
			err := conn.QueryRow(qctx, `select coalesce(pg_last_wal_receive_lsn()::text, ''),
				coalesce(pg_last_wal_replay_lsn()::text, ''),
				coalesce((now() - pg_last_xact_replay_timestamp())::text, ''),
				coalesce((select status from pg_stat_wal_receiver), 'not connected')`).Scan(&recv, &replay, &delay, &wr)
			if err == nil {
				st.Detail["receive_lsn"] = recv
				st.Detail["replay_lsn"] = replay
				st.Detail["last_replayed_xact_age"] = delay
				st.Detail["wal_receiver"] = wr
				st.State = wr
				if wr == "streaming" {
					st.State = "streaming"
				}
			}
			if r, ok := repl[n.Name]; ok {
				st.Detail["lag_bytes"] = strconv.FormatInt(r.lagBytes, 10)
				if r.replay != "" {
					st.Detail["replay_lag"] = r.replay
				}
			}
		}
		conn.Close(context.WithoutCancel(qctx))
		cancel()
		out = append(out, st)
	}
	return out, nil
}

func countStreaming(m map[string]pgRepl) int {
	n := 0
	for _, r := range m {
		if r.state == "streaming" {
			n++
		}
	}
	return n
}

// pgStopPID asks a postmaster for a fast shutdown (SIGINT: roll back open
// transactions, disconnect clients, write a shutdown checkpoint) — SIGTERM
// would be a "smart" shutdown that waits for every client to leave — and
// SIGKILLs it after grace.
func pgStopPID(pid int, grace time.Duration) error {
	if err := cluster.StopWith(pid, syscall.SIGINT, grace); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// Down implements Engine: fast shutdown of the replicas, then the primary;
// the data stays. On a virtual network it then removes every namespace
// and interface of the network, found from the directory alone.
func (pgEngine) Down(ctx context.Context, c *cluster.Cluster) error {
	var errs []error
	order := make([]*cluster.Node, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		if n.Role != "primary" {
			order = append(order, n)
		}
	}
	for _, n := range c.Nodes {
		if n.Role == "primary" {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if n.PID > 0 {
			if err := pgStopPID(n.PID, 60*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		n.PID = 0
		n.Stopped = true
	}
	if _, err := os.Stat(c.Dir); err == nil && c.DSN != "" {
		errs = append(errs, c.Save())
	}
	errs = append(errs, cluster.DestroyNetwork(ctx, c.Dir))
	return errors.Join(errs...)
}

// Add implements Grower: a new streaming replica cloned from the primary.
// The DSN gains it in its replicas list.
func (e pgEngine) Add(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	n, err := e.addReplica(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := e.waitStreaming(ctx, c); err != nil {
		return n, err
	}
	c.DSN = pgDSN(c)
	return n, c.Save()
}

// Kill implements Killer: SIGKILL of the node's postmaster (its backends
// exit when they notice the postmaster is gone).
func (pgEngine) Kill(_ context.Context, c *cluster.Cluster, node string) error {
	if err := c.KillNode(node); err != nil {
		return err
	}
	return c.Save()
}

// Restart implements Killer: start a stopped or killed node again on its
// port (crash recovery replays its WAL; a replica resumes streaming).
func (e pgEngine) Restart(ctx context.Context, c *cluster.Cluster, node string) error {
	n, err := c.Node(node)
	if err != nil {
		return err
	}
	if err := cluster.ReadyToRestart(ctx, "postgres", n); err != nil {
		return err
	}
	// Orphaned backends of a SIGKILLed postmaster keep its shared memory;
	// the new postmaster refuses to start until they have gone. It also
	// refuses while the old PID exists at all, a zombie not yet reaped
	// included (its lock files name it), which Alive does not count.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid, ok := pgPIDFile(n.DataDir); !ok || syscall.Kill(pid, 0) == syscall.ESRCH {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.start(ctx, c, n); err != nil {
		return err
	}
	c.DSN = pgDSN(c)
	return c.Save()
}

// NodeNames: pg1 (the primary), pg2... (replicas).
func (pgEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return cluster.Numbered("pg", nodes+adds)
}

// pgCatchUpBytes is how far behind the primary a streaming replica may be
// and still count as settled: under write load a replica is almost never
// exactly at the primary's LSN, but one still copying a backlog is far
// behind.
const pgCatchUpBytes = 16 << 20

// Moving implements Mover for PostgreSQL: data moves while a replica is not
// yet streaming (still restoring its base backup or reconnecting) or is more
// than pgCatchUpBytes behind.
func (e pgEngine) Moving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	sts, err := e.Status(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, detail := cluster.MovingFrom(c, sts, func(st cluster.NodeStatus) string {
		if st.Role == "primary" {
			return ""
		}
		if st.State != "streaming" {
			return "not streaming (" + st.State + ")"
		}
		if lag, _ := strconv.ParseInt(st.Detail["lag_bytes"], 10, 64); lag > pgCatchUpBytes {
			return fmt.Sprintf("%d bytes behind", lag)
		}
		return ""
	})
	return moving, detail, nil
}
