package mariadb

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// The "mariadb" engine: one mariadbd, or a Galera cluster of N mariadbd
// processes on loopback (multi-primary; every node after the first joins by
// an rsync state transfer). Each node gets its own directory under the
// cluster directory with its data, its config file (my.cnf, read with
// --defaults-file so no system-wide config leaks in), socket, pid file and
// log. The server runs as the user running fieldbench (root: --user=root),
// root's account authenticates by unix_socket only, and the benchmark talks
// to database "fieldbench" as user "fieldbench" with a random password that
// only the DSN (in cluster.json) holds.
//
// With --network hosts (Options.Network) every node is a host of its own
// on the cluster's virtual network (package vnet) instead: mariadbd runs
// inside its host's namespace (`ip netns exec`, which execs it in place)
// and binds its host's address only (198.18.0.N) on the standard ports:
// 3306 for clients, and in Galera 4567 (group communication), 4568 (IST)
// and 4444 (rsync SST); the Galera cluster address names the other nodes'
// host addresses. mariadbd drops root to the mysql user itself (user= in
// my.cnf), as on loopback, so it needs no setpriv. fieldbench administers
// every node through its Unix socket, which is a file and so reachable
// from outside the namespace, and waits for a node by dialling its address
// from inside its host. Down removes the network.
func init() { cluster.Register(mariaDB{}) }

// Settings every node gets: small memory (a 2-core laptop runs three
// nodes), no performance schema, no DNS lookups, and what Galera needs
// (row-based replication, interleaved auto-increment locks).
var mariadbSettings = [][2]string{
	{"innodb_buffer_pool_size", "128M"},
	{"innodb_log_file_size", "64M"},
	{"innodb_flush_log_at_trx_commit", "1"},
	{"max_connections", "500"},
	{"max_allowed_packet", "256M"},
	{"performance_schema", "OFF"},
	{"skip_name_resolve", "ON"},
	{"character_set_server", "utf8mb4"},
	{"collation_server", "utf8mb4_bin"},
	{"default_storage_engine", "InnoDB"},
	{"binlog_format", "ROW"},
	{"innodb_autoinc_lock_mode", "2"},
}

// galeraProvider is where Debian's galera-4 package puts the provider.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// mariadbDB and mariadbUser are the benchmark's database and account.
const (
	mariadbDB   = "fieldbench"
	mariadbUser = "fieldbench"
)

// The standard ports, a node's ports on a host of its own: the client
// port, and Galera's group communication, incremental state transfer and
// (rsync) state snapshot transfer ports.
const (
	mariadbPort     = 3306
	galeraGcommPort = 4567
	galeraISTPort   = 4568
	galeraSSTPort   = 4444
)

// mariadbNodeWait bounds one node's start (a Galera joiner's state
// transfer included).
const mariadbNodeWait = 3 * time.Minute

type mariaDB struct{}

func (mariaDB) Name() string { return "mariadb" }

// Hosts implements Hoster: the engine starts its nodes on hosts too.
func (mariaDB) Hosts() (bool, string) { return true, "" }

// Budgets implements cluster.BudgetHolder: every node is one mariadbd, started through cluster.Start with its node named (a Galera state transfer's rsync is its child, born in its group).
func (mariaDB) Budgets() (bool, string) { return true, "" }

// CheckNodes implements NodeLimiter.
func (m mariaDB) CheckNodes(nodes int, _ map[string]string) error {
	return cluster.NodeLimit(m.Name(), nodes, 9, "each node is a full MariaDB server (buffer pool, and in Galera a full state transfer to join)")
}

// CheckOptions implements OptionChecker.
func (mariaDB) CheckOptions(o cluster.Options) error { _, err := parseMariaOpts(o); return err }

// binary finds name in PATH or the sbin directories a non-root PATH lacks.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (install mariadb-server: scripts/install-servers.sh)", name)
}

// Check implements Engine. Galera's provider and rsync are checked by Up
// when more than one node is asked for.
func (mariaDB) Check() error {
	var errs []error
	for _, b := range []string{"mariadbd", "mariadb-install-db", "mariadb"} {
		if _, err := binary(b); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkGalera() error {
	var errs []error
	if _, err := os.Stat(galeraProvider); err != nil {
		errs = append(errs, fmt.Errorf("galera provider %s missing (install galera-4: scripts/install-servers.sh): %w", galeraProvider, err))
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		errs = append(errs, fmt.Errorf("rsync (Galera state transfer) missing (scripts/install-servers.sh): %w", err))
	}
	return errors.Join(errs...)
}

// serverUser is the account mariadbd runs as: "mysql" when fieldbench runs
// as root (Galera's rsync state transfer runs an rsync daemon, which as
// root writes as "nobody" and cannot create the joiner's files), else the
// user running fieldbench.
func serverUser() (string, error) {
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("mysql"); err != nil {
			return "", fmt.Errorf("mariadb runs as the mysql user when fieldbench runs as root: %w (install mariadb-server: scripts/install-servers.sh)", err)
		}
		return "mysql", nil
	}
	return osUser()
}

// prepareDir creates a node directory and its data directory for the
// server user: when fieldbench runs as root they are given to mysql, and
// the cluster directory is made traversable.
func prepareDir(clusterDir, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	if err := os.Chmod(clusterDir, 0o755); err != nil {
		return fmt.Errorf("mariadb: make %s traversable for the mysql user: %w", clusterDir, err)
	}
	if err := cluster.Chown(dir, "mysql"); err != nil {
		return fmt.Errorf("mariadb: give %s to the mysql user: %w", dir, err)
	}
	return nil
}

// osUser is the login of the mariadb client on the unix socket (root's
// unix_socket account when fieldbench runs as root): the user running
// fieldbench.
func osUser() (string, error) {
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("current user: %w", err)
	}
	return u.Username, nil
}

func randomPassword() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// nodeDir is node's directory inside the cluster directory.
func mariadbNodeDir(c *cluster.Cluster, name string) string { return filepath.Join(c.Dir, name) }

// mariadbSocket is the node's unix socket: in its directory unless that
// path is too long for a socket address (108 bytes), then a fixed name in
// the temp directory derived from the node directory.
func mariadbSocket(nodeDir string) string {
	p := filepath.Join(nodeDir, "mariadbd.sock")
	if len(p) < 100 {
		return p
	}
	h := sha1.Sum([]byte(nodeDir))
	return filepath.Join(os.TempDir(), "fb-mariadb-"+hex.EncodeToString(h[:6])+".sock")
}

func isGalera(c *cluster.Cluster) bool { return c.Options["galera"] == "true" }

// Up implements Engine. With Nodes = 1 (and no galera=true option) it
// starts one plain server; otherwise a Galera cluster: node1 bootstraps it
// (--wsrep-new-cluster), then each other node joins by rsync state transfer
// once the previous one reports Synced. On error the partial cluster is
// returned so the caller can Down it.
func (m mariaDB) Up(ctx context.Context, dir string, opts cluster.Options) (*cluster.Cluster, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	n := max(opts.Nodes, 1)
	galera, err := parseMariaOpts(opts)
	if err != nil {
		return nil, err
	}
	if galera {
		if err := checkGalera(); err != nil {
			return nil, err
		}
	}
	pw, err := randomPassword()
	if err != nil {
		return nil, err
	}
	c := &cluster.Cluster{
		Engine:  m.Name(),
		Dir:     dir,
		Started: time.Now().UTC(),
		Budget:  opts.Budget,
		Options: map[string]string{"galera": strconv.FormatBool(galera), "nodes": strconv.Itoa(n)},
	}
	for _, kv := range mariadbSettings {
		c.Options[kv[0]] = kv[1]
	}
	if galera {
		c.Options["wsrep_provider"] = galeraProvider
		c.Options["wsrep_sst_method"] = "rsync"
		c.Options["gcache.size"] = "64M"
	}
	// The password lives only in the DSN; the DSN is set once node1 is up.
	for i := 1; i <= n; i++ {
		c.Nodes = append(c.Nodes, &cluster.Node{Name: "node" + strconv.Itoa(i), Role: "primary", Host: cluster.Loopback, Stopped: true})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mariadb: cluster directory: %w", err)
	}
	if opts.Network == cluster.NetworkHosts {
		if err := cluster.CheckNetwork(m.Name(), cluster.NetworkHosts); err != nil {
			return nil, err
		}
		// From here on a failure returns c, whose Down (the caller's)
		// removes the network.
		if err := c.CreateHosts(ctx); err != nil {
			return c, err
		}
		for _, node := range c.Nodes {
			if err := mariadbPlaceOnHost(ctx, c, node); err != nil {
				return c, err
			}
		}
	}
	first := c.Nodes[0]
	if err := mariadbInstall(ctx, dir, mariadbNodeDir(c, first.Name)); err != nil {
		return c, err
	}
	if err := m.startNode(ctx, c, first, true); err != nil {
		return c, err
	}
	if err := mariadbSetup(ctx, c, first, pw); err != nil {
		return c, err
	}
	v, err := mariadbQuery(ctx, first, "select version()")
	if err != nil {
		return c, err
	}
	c.Version = strings.TrimSpace(v)
	c.DSN = mariadbDSN(c, pw)
	_ = c.Save()
	for _, node := range c.Nodes[1:] {
		if err := prepareDir(dir, mariadbNodeDir(c, node.Name)); err != nil {
			return c, err
		}
		if err := m.startNode(ctx, c, node, false); err != nil {
			return c, err
		}
		c.DSN = mariadbDSN(c, pw)
		_ = c.Save()
	}
	return c, nil
}

// mariadbPlaceOnHost makes node's host, at the first node address no
// other node has, and gives node its address, namespace and the standard
// ports.
func mariadbPlaceOnHost(ctx context.Context, c *cluster.Cluster, node *cluster.Node) error {
	h, err := cluster.AddNodeHost(ctx, c, node.Name)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	node.Host, node.Netns, node.Port = h.Addr.String(), h.NS, mariadbPort
	if isGalera(c) {
		node.Ports = []int{galeraGcommPort, galeraISTPort, galeraSSTPort}
	}
	return nil
}

// mariadbDSN is the adapter's DSN: node1's address, and for a cluster the
// other live nodes in nodes= so the adapter can spread connections.
func mariadbDSN(c *cluster.Cluster, pw string) string {
	u := url.URL{Scheme: "mariadb", User: url.UserPassword(mariadbUser, pw), Host: c.Nodes[0].Addr(), Path: "/" + mariadbDB}
	var others []string
	for _, n := range c.Nodes[1:] {
		if n.Port != 0 {
			others = append(others, n.Addr())
		}
	}
	if len(others) > 0 {
		u.RawQuery = "nodes=" + strings.Join(others, ",")
	}
	return u.String()
}

// dsnPassword reads the password back from the cluster's DSN (Add rebuilds
// the DSN with the new node).
func dsnPassword(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// mariadbInstall creates a fresh data directory with the system tables.
func mariadbInstall(ctx context.Context, clusterDir, nodeDir string) error {
	data := filepath.Join(nodeDir, "data")
	if err := prepareDir(clusterDir, nodeDir); err != nil {
		return err
	}
	bin, err := binary("mariadb-install-db")
	if err != nil {
		return err
	}
	usr, err := serverUser()
	if err != nil {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cluster.RunAs(ictx, "", nodeDir, bin, "--no-defaults", "--datadir="+data, "--user="+usr,
		"--auth-root-authentication-method=socket", "--skip-test-db", "--skip-name-resolve"); err != nil {
		return fmt.Errorf("mariadb: initialize %s: %w", data, err)
	}
	return nil
}

// writeConfig writes the node's my.cnf for its current ports.
func (mariaDB) writeConfig(c *cluster.Cluster, node *cluster.Node) (string, error) {
	dir := mariadbNodeDir(c, node.Name)
	usr, err := serverUser()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# written by fieldbench; started with --defaults-file\n[mariadbd]\n")
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	kv("user", usr)
	kv("datadir", node.DataDir)
	kv("socket", mariadbSocket(dir))
	kv("pid-file", filepath.Join(dir, "mariadbd.pid"))
	kv("log-error", node.LogFile)
	kv("port", strconv.Itoa(node.Port))
	kv("bind-address", node.Host)
	for _, s := range mariadbSettings {
		kv(s[0], s[1])
	}
	if isGalera(c) {
		var peers []string
		for _, n := range c.Nodes {
			if len(n.Ports) > 0 {
				peers = append(peers, fmt.Sprintf("%s:%d", n.Host, n.Ports[0]))
			}
		}
		gcomm, ist, sst := node.Ports[0], node.Ports[1], node.Ports[2]
		kv("wsrep_on", "ON")
		kv("wsrep_provider", galeraProvider)
		kv("wsrep_cluster_name", "fieldbench")
		kv("wsrep_cluster_address", "gcomm://"+strings.Join(peers, ","))
		kv("wsrep_node_name", node.Name)
		kv("wsrep_node_address", fmt.Sprintf("%s:%d", node.Host, gcomm))
		kv("wsrep_node_incoming_address", node.Addr())
		kv("wsrep_provider_options", fmt.Sprintf("'gmcast.listen_addr=tcp://%s:%d; ist.recv_addr=%s:%d; gcache.size=64M'", node.Host, gcomm, node.Host, ist))
		kv("wsrep_sst_method", "rsync")
		kv("wsrep_sst_receive_address", fmt.Sprintf("%s:%d", node.Host, sst))
		kv("wsrep_slave_threads", "2")
	}
	cfg := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("mariadb: write %s: %w", cfg, err)
	}
	return cfg, nil
}

// startNode picks ports, writes the config and starts node, retrying with
// new ports when one was taken before the server bound it. bootstrap
// starts a new Galera cluster (--wsrep-new-cluster). It returns once the
// node answers queries and, in Galera, reports Synced.
func (m mariaDB) startNode(ctx context.Context, c *cluster.Cluster, node *cluster.Node, bootstrap bool) error {
	dir := mariadbNodeDir(c, node.Name)
	node.DataDir = filepath.Join(dir, "data")
	node.LogFile = filepath.Join(dir, "mariadbd.log")
	bin, err := binary("mariadbd")
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		nports := 1
		if isGalera(c) {
			nports = 4
		}
		// A restarted node keeps its ports when they are free: clients
		// holding the DSN (or the other Galera nodes) find it where it
		// was. New ports only for a new node, or when they are taken. A
		// node on a host has its host's address and the standard ports
		// to itself: they never change.
		prev := append([]int{node.Port}, node.Ports...)
		if node.Netns == "" && (attempt > 0 || node.Port == 0 || len(prev) != nports || !cluster.PortsFree(node.Host, prev)) {
			ports, err := cluster.FreePorts(node.Host, nports)
			if err != nil {
				return err
			}
			node.Port, node.Ports = ports[0], ports[1:]
		}
		cfg, err := m.writeConfig(c, node)
		if err != nil {
			return err
		}
		node.Config = cfg
		var logStart int64
		if st, err := os.Stat(node.LogFile); err == nil {
			logStart = st.Size()
		}
		argv := []string{bin, "--defaults-file=" + cfg}
		if isGalera(c) && bootstrap {
			argv = append(argv, "--wsrep-new-cluster")
		}
		// On a host, inside its namespace (ip execs mariadbd in place:
		// the PID is the server's).
		argv = node.Command(argv...)
		pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: dir, LogFile: filepath.Join(dir, "stdout.log"), Cluster: c, Node: node})
		if err != nil {
			return fmt.Errorf("mariadb %s: %w", node.Name, err)
		}
		node.PID, node.Stopped = pid, false
		_ = c.Save()
		lastErr = m.waitReady(ctx, c, node)
		if lastErr == nil {
			return nil
		}
		_ = cluster.Stop(pid, 30*time.Second)
		node.PID, node.Stopped = 0, true
		if node.Netns != "" || !bindLost(node.LogFile, logStart) {
			break
		}
	}
	return fmt.Errorf("mariadb %s: %w", node.Name, lastErr)
}

// bindLost reports whether the log written since offset says a port was
// taken (the race between FreePort and the server's bind).
func bindLost(logFile string, offset int64) bool {
	b, err := os.ReadFile(logFile)
	if err != nil || int64(len(b)) < offset {
		return false
	}
	s := string(b[offset:])
	return strings.Contains(s, "Address already in use") || strings.Contains(s, "Can't start server: Bind")
}

// waitReady waits until node accepts connections on its address (dialled
// from where the node is: inside its host on a virtual network) and
// queries over its socket and, in a Galera cluster, reports
// wsrep_local_state_comment = Synced.
func (mariaDB) waitReady(ctx context.Context, c *cluster.Cluster, node *cluster.Node) error {
	wctx, cancel := context.WithTimeout(ctx, mariadbNodeWait)
	defer cancel()
	if err := cluster.WaitDial(wctx, node.Dial, node.Addr(), node.PID, node.LogFile); err != nil {
		return err
	}
	for {
		var err error
		if isGalera(c) {
			var st map[string]string
			st, err = mariadbStatus(wctx, node)
			if err == nil && st["wsrep_local_state_comment"] != "Synced" {
				err = fmt.Errorf("wsrep_local_state_comment = %q", st["wsrep_local_state_comment"])
			}
		} else {
			_, err = mariadbQuery(wctx, node, "select 1")
		}
		if err == nil {
			return nil
		}
		if !cluster.Alive(node.PID) {
			return fmt.Errorf("server (pid %d) exited; log %s ends:\n%s", node.PID, node.LogFile, cluster.LogTail(node.LogFile, 1500))
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("not ready: %w (last: %v); log %s ends:\n%s", wctx.Err(), err, node.LogFile, cluster.LogTail(node.LogFile, 1500))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mariadbQuery runs sql through the mariadb client on node's socket as the
// OS user (root's unix_socket login) and returns its tab-separated output
// without headers. The SQL goes through stdin, so nothing secret shows in
// the process list; errors carry the client's output, never the SQL.
func mariadbQuery(ctx context.Context, node *cluster.Node, sql string) (string, error) {
	bin, err := binary("mariadb")
	if err != nil {
		return "", err
	}
	usr, err := osUser()
	if err != nil {
		return "", err
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(qctx, bin, "--no-defaults", "--socket="+mariadbSocket(filepath.Dir(node.Config)),
		"--user="+usr, "--batch", "--skip-column-names", "--connect-timeout=5")
	cmd.Stdin = strings.NewReader(sql)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mariadb client on %s: %w: %s", node.Name, err, strings.TrimSpace(cluster.Tail(stderr.String(), 500)))
	}
	return out.String(), nil
}

// mariadbStatus reads the node's wsrep status variables.
func mariadbStatus(ctx context.Context, node *cluster.Node) (map[string]string, error) {
	out, err := mariadbQuery(ctx, node, "show global status like 'wsrep%'")
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			st[k] = v
		}
	}
	return st, nil
}

// mariadbSetup creates the benchmark's database and account on node. The
// account may create and drop databases whose names start with
// "fieldbench" (a wildcard grant), so tests and the conformance suite can
// use a fresh database per family.
func mariadbSetup(ctx context.Context, c *cluster.Cluster, node *cluster.Node, pw string) error {
	sql := fmt.Sprintf("create database if not exists `%s`;\n"+
		"create user if not exists '%s'@'%%' identified by '%s';\n"+
		"grant all privileges on `%s%%`.* to '%s'@'%%';\n"+
		"grant process, replication client on *.* to '%s'@'%%';\n",
		mariadbDB, mariadbUser, pw, mariadbDB, mariadbUser, mariadbUser)
	if _, err := mariadbQuery(ctx, node, sql); err != nil {
		// The client's message may quote the statement, password included.
		return errors.New("mariadb: create database and user: " + strings.ReplaceAll(err.Error(), pw, "xxxxx"))
	}
	return nil
}

// Status implements Engine: per node whether it runs, and in Galera its
// cluster size, state, readiness and whether a state transfer is under way.
func (mariaDB) Status(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	out := make([]cluster.NodeStatus, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		ns := cluster.NodeStatus{Name: n.Name, Addr: n.Addr(), Role: n.Role, PID: n.PID, Detail: map[string]string{}}
		cluster.AddHostCounters(ctx, n, ns.Detail)
		switch {
		case n.PID == 0 || !cluster.Alive(n.PID):
			ns.State, ns.PID = "down", 0
			if n.Stopped {
				ns.Detail["stopped"] = "on purpose"
			}
		case !isGalera(c):
			if _, err := mariadbQuery(ctx, n, "select 1"); err != nil {
				ns.State, ns.Detail["error"] = "starting", err.Error()
			} else {
				ns.State = "up"
			}
		default:
			st, err := mariadbStatus(ctx, n)
			if err != nil {
				// A joiner does not answer until its state transfer is over.
				ns.State, ns.Detail["error"] = "starting", err.Error()
				if sstRunning(n) {
					ns.Detail["state_transfer"] = "in progress"
				}
				break
			}
			comment := st["wsrep_local_state_comment"]
			for _, k := range []string{"wsrep_cluster_size", "wsrep_local_state_comment", "wsrep_ready", "wsrep_cluster_status", "wsrep_connected"} {
				ns.Detail[k] = st[k]
			}
			transfer := strings.Contains(comment, "Join") || strings.Contains(comment, "Donor")
			ns.Detail["state_transfer"] = map[bool]string{true: "in progress", false: "none"}[transfer]
			switch {
			case comment == "Synced" && st["wsrep_ready"] == "ON":
				ns.State = "up"
			case transfer:
				ns.State = "joining"
			default:
				ns.State = strings.ToLower(comment)
			}
		}
		out = append(out, ns)
	}
	return out, nil
}

// sstRunning reports whether the rsync SST of node is under way (the rsync
// SST script keeps its pid file in the data directory while it runs).
func sstRunning(n *cluster.Node) bool {
	for _, f := range []string{"rsync_sst.pid", "sst_in_progress"} {
		if _, err := os.Stat(filepath.Join(n.DataDir, f)); err == nil {
			return true
		}
	}
	return false
}

// Down implements Engine: SIGTERM to each node by PID, the last started
// first, so the bootstrap node leaves last and its data is safe to
// bootstrap from. On a virtual network it then removes every namespace
// and interface of the network, found from the directory alone.
func (mariaDB) Down(ctx context.Context, c *cluster.Cluster) error {
	var errs []error
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		n := c.Nodes[i]
		if n.PID != 0 {
			if err := cluster.Stop(n.PID, 60*time.Second); err != nil {
				errs = append(errs, fmt.Errorf("mariadb %s: %w", n.Name, err))
				continue
			}
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

// Kill implements Killer: SIGKILL, as a crash.
func (mariaDB) Kill(ctx context.Context, c *cluster.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if n.PID != 0 {
		if err := cluster.Kill(n.PID); err != nil {
			return fmt.Errorf("mariadb %s: %w", name, err)
		}
	}
	n.PID, n.Stopped = 0, true
	return c.Save()
}

// Restart implements Killer: the node starts again on its config; in
// Galera it rejoins through the live nodes (IST, or SST when its gcache
// window is gone). With no live node left it bootstraps a new cluster
// from its own data.
func (m mariaDB) Restart(ctx context.Context, c *cluster.Cluster, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if n.PID != 0 && cluster.Alive(n.PID) {
		return fmt.Errorf("mariadb %s is running (pid %d)", name, n.PID)
	}
	// Its ports once the killed server's sockets are gone: startNode
	// moves it to new ones only when another program holds them.
	cluster.AwaitPorts(ctx, n)
	bootstrap := true
	for _, o := range c.Nodes {
		if o != n && o.PID != 0 && cluster.Alive(o.PID) {
			bootstrap = false
		}
	}
	if isGalera(c) && bootstrap {
		if err := markSafeToBootstrap(n.DataDir); err != nil {
			return err
		}
	}
	if err := m.startNode(ctx, c, n, bootstrap); err != nil {
		return err
	}
	c.DSN = mariadbDSN(c, dsnPassword(c.DSN))
	return c.Save()
}

// markSafeToBootstrap sets safe_to_bootstrap: 1 in grastate.dat: Galera
// refuses to bootstrap from a node that was not the last to leave, and
// after a kill it is the user's explicit choice (restarting the node).
func markSafeToBootstrap(data string) error {
	p := filepath.Join(data, "grastate.dat")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	s := strings.Replace(string(b), "safe_to_bootstrap: 0", "safe_to_bootstrap: 1", 1)
	return os.WriteFile(p, []byte(s), 0o644)
}

// Add implements Grower: a new Galera node joins the running cluster by
// rsync state transfer; Add returns once it is Synced.
func (m mariaDB) Add(ctx context.Context, c *cluster.Cluster) (*cluster.Node, error) {
	if !isGalera(c) {
		return nil, fmt.Errorf("mariadb: a single server cannot grow (start it with --nodes 2 or --opt galera=true): %w", cluster.ErrUnsupported)
	}
	live := false
	for _, o := range c.Nodes {
		live = live || (o.PID != 0 && cluster.Alive(o.PID))
	}
	if !live {
		return nil, fmt.Errorf("mariadb: no live node to join")
	}
	n := &cluster.Node{Name: "node" + strconv.Itoa(len(c.Nodes)+1), Role: "primary", Host: cluster.Loopback, Stopped: true}
	if c.OnHosts() {
		if err := mariadbPlaceOnHost(ctx, c, n); err != nil {
			return nil, err
		}
	}
	c.Nodes = append(c.Nodes, n)
	if err := prepareDir(c.Dir, mariadbNodeDir(c, n.Name)); err != nil {
		return nil, err
	}
	if err := m.startNode(ctx, c, n, false); err != nil {
		_ = c.Save()
		return n, err
	}
	c.Options["nodes"] = strconv.Itoa(len(c.Nodes))
	c.DSN = mariadbDSN(c, dsnPassword(c.DSN))
	return n, c.Save()
}

var (
	_ cluster.Grower = mariaDB{}
	_ cluster.Killer = mariaDB{}
	_ cluster.Mover  = mariaDB{}
)

// parseMariaOpts reads the engine's one option, galera (default: on for
// more than one node).
func parseMariaOpts(opts cluster.Options) (galera bool, err error) {
	n := max(opts.Nodes, 1)
	galera = n > 1
	if v, ok := opts.Extra["galera"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("mariadb: option galera=%q is not true or false", v)
		}
		if !b && n > 1 {
			return false, fmt.Errorf("mariadb: %d nodes need galera (option galera=false allows one node only)", n)
		}
		galera = b
	}
	for k := range opts.Extra {
		if k != "galera" {
			return false, fmt.Errorf("mariadb: unknown option %q (known: galera)", k)
		}
	}
	return galera, nil
}

// NodeNames: node1, node2...
func (mariaDB) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return cluster.Numbered("node", nodes+adds)
}

// Moving implements Mover for MariaDB: in Galera, data moves while a node is
// joining or donating (state transfer) or not yet synced.
func (e mariaDB) Moving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	sts, err := e.Status(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, detail := cluster.MovingFrom(c, sts, func(st cluster.NodeStatus) string {
		if st.Detail["state_transfer"] == "in progress" {
			return "state transfer"
		}
		if st.State != "up" {
			return st.State
		}
		return ""
	})
	return moving, detail, nil
}
