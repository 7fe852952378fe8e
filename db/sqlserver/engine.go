package sqlserver

import (
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// The sqlserver engine starts Iridium SQL, a TDS 7.4 server written in
// Rust that reports itself as SQL Server 2022: Microsoft SQL Server cannot
// be installed on these machines, and nothing else here speaks TDS. It is
// named as what it is everywhere: the cluster's Version, its "server"
// option and every node's status say Iridium SQL, never SQL Server, and
// its figures say nothing about SQL Server's speed (its writes slow down
// as a table grows). To measure a real SQL Server, point --db at it.
//
// The official Go driver, go-mssqldb, cannot talk to Iridium 0.1.13 as it
// is (two protocol defects, see docs/sqlserver.md). The DSN this engine
// prints carries standin=iridium, which makes the sqlserver adapter
// rewrite both defects on its own connections: it works as it is with
// --db, and with --cluster sqlserver. A real SQL Server never needs it.
//
// Iridium is built once with cargo into ~/.cache/fieldbench/iridium-0.1.13
// (FIELDBENCH_IRIDIUM overrides) by scripts/install-servers.sh; the build
// took 10 minutes on the shared two cores here, so the engine does not start it
// on its own. It binds the address given by --host (127.0.0.1 here: checked
// with ss), runs without TLS (go-mssqldb with encrypt=disable) and without
// authentication (it accepts any login: its only credentials would be
// command-line arguments, which every local user can read in /proc).
//
// With --network hosts (Options.Network) the node is a host of its own on
// the cluster's virtual network (package vnet): iridium-server runs inside
// its host's namespace (`ip netns exec`) and binds the host's address only
// (198.18.0.1, its --host) on SQL Server's standard port 1433; fieldbench
// administers it from inside the namespace (the pre-login dials through
// it), the adapter dials through adapter/netdial, so an experiment's load
// reaches it from a load host, and Down removes the network.
//
// One node only (Iridium has no replication); it can be killed and
// restarted on its data directory (on its host, on hosts).
func init() {
	cluster.Register(&cluster.KillableSingle{Single: cluster.Single{
		Engine: Name, Server: "Iridium SQL", NodeName: "iridium1", LogFile: "iridium.log", DataDir: "data", StandardPort: sqlServerPort,
		CheckInstall: checkIridium, Prepare: prepareSQLServer, Start: startIridium, Describe: describeSQLServer,
		Detail:       func(*cluster.Cluster) map[string]string { return map[string]string{"server": IridiumServer} },
		Probe:        probeSQLServer,
		ParseOptions: func(o cluster.Options) error { _, err := parseSQLServerOpts(o); return err },
		External:     &sqlRemote,
	}})
}

const (
	// IridiumVersion is the Iridium SQL release the engine runs.
	IridiumVersion = "0.1.13"
	// IridiumServer names the stand-in wherever a result or a status
	// says which server ran.
	IridiumServer = "Iridium SQL " + IridiumVersion + ", a SQL Server stand-in (TDS 7.4 server in Rust; not SQL Server)"
	// sqlServerDatabase is the database the cluster's DSN names.
	sqlServerDatabase = "fieldbench"
	// sqlServerPort is SQL Server's standard port, the node's port on a
	// host of its own.
	sqlServerPort = 1433
)

// IridiumBinary is where scripts/install-servers.sh puts iridium-server:
// $FIELDBENCH_IRIDIUM/bin, else $XDG_CACHE_HOME/fieldbench/iridium-0.1.13/bin,
// else ~/.cache/fieldbench/iridium-0.1.13/bin.
func IridiumBinary() (string, error) {
	root := os.Getenv("FIELDBENCH_IRIDIUM")
	if root == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("sqlserver: no home directory (set FIELDBENCH_IRIDIUM): %w", err)
			}
			base = filepath.Join(home, ".cache")
		}
		root = filepath.Join(base, "fieldbench", "iridium-"+IridiumVersion)
	}
	return filepath.Join(root, "bin", "iridium-server"), nil
}

// checkIridium is the engine's Check: the iridium-server binary is built.
func checkIridium() error {
	bin, err := IridiumBinary()
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("sqlserver: Iridium SQL %s is not built (scripts/install-servers.sh builds it with cargo, about 15 minutes): %w", IridiumVersion, err)
	}
	return nil
}

// parseSQLServerOpts returns the storage option: "disk" (the default,
// Iridium's persistent storage in the node's data directory) or "memory"
// (Iridium's --memory: nothing survives a restart).
func parseSQLServerOpts(o cluster.Options) (storage string, err error) {
	storage = "disk"
	for k, v := range o.Extra {
		switch k {
		case "storage":
			if v != "disk" && v != "memory" {
				return "", fmt.Errorf("sqlserver: option storage=%q: want disk or memory", v)
			}
			storage = v
		default:
			return "", fmt.Errorf("sqlserver: unknown option %q (known: storage)", k)
		}
	}
	if o.Nodes > 1 {
		return "", fmt.Errorf("sqlserver: Iridium SQL has no replication, so the engine starts one node (got --nodes %d): %w", o.Nodes, cluster.ErrUnsupported)
	}
	return storage, nil
}

// prepareSQLServer reads the options and checks that Iridium is built;
// the node keeps its data under dir/iridium1/data, and listens on SQL
// Server's port 1433 on hosts.
func prepareSQLServer(_ context.Context, opts cluster.Options) (map[string]string, error) {
	storage, err := parseSQLServerOpts(opts)
	if err != nil {
		return nil, err
	}
	if err := checkIridium(); err != nil {
		return nil, err
	}
	return map[string]string{
		"server":  IridiumServer,
		"storage": storage,
		"tls":     "off",
		"auth":    "off (Iridium accepts any login)",
		"go-mssqldb": "cannot connect to Iridium as it is (pre-login answered with packet type 0x12, collation change with 5 extra bytes); " +
			"standin=iridium in the DSN makes the sqlserver adapter rewrite both (never needed on a real SQL Server)",
	}, nil
}

// describeSQLServer names the cluster after the Iridium version the node
// logged and gives the DSN of its database.
func describeSQLServer(_ context.Context, _ *cluster.Cluster, n *cluster.Node) (version, dsn string, err error) {
	v, err := iridiumVersionOf(n)
	if err != nil {
		return "", "", err
	}
	// standin=iridium: the adapter rewrites Iridium's two TDS defects
	// (sqlserver.go, internal/tdsfix); encrypt=disable, as Iridium runs without TLS.
	return "Iridium SQL " + v, fmt.Sprintf("sqlserver://fieldbench@%s?database=%s&encrypt=disable&standin=iridium", n.Addr(), sqlServerDatabase), nil
}

// startIridium starts n on its address, port and data and waits until it
// answers a TDS pre-login; on a host, inside its namespace (`ip netns
// exec` execs iridium-server: the PID is the server's).
func startIridium(ctx context.Context, c *cluster.Cluster, n *cluster.Node) error {
	bin, err := IridiumBinary()
	if err != nil {
		return err
	}
	args := []string{
		"--host", n.Host, "--port", fmt.Sprint(n.Port),
		"--database", sqlServerDatabase,
		"--no-tls",
		"--pool-max", "256", // the adapter's pool keeps up to 256 connections
	}
	if c.Options["storage"] == "memory" {
		args = append(args, "--memory")
	} else {
		args = append(args, "--data-dir", n.DataDir)
	}
	argv := n.Command(append([]string{bin}, args...)...)
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Dir: filepath.Dir(n.DataDir), LogFile: n.LogFile,
		Env: []string{"RUST_LOG=warn,iridium_server=info"}, Args: argv[1:], Cluster: c, Node: n})
	if err != nil {
		return err
	}
	n.PID, n.Stopped = pid, false
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		_ = cluster.Kill(pid)
		n.PID = 0
		return err
	}
	// The port opens before the server answers on it: a connection reset
	// right after the start (seen about once in six restarts) is retried
	// while the server lives and the start's minute lasts.
	for {
		_, err := nodePrelogin(wctx, n)
		if err == nil {
			return nil
		}
		if !cluster.Alive(pid) || wctx.Err() != nil {
			_ = cluster.Kill(pid)
			n.PID = 0
			return fmt.Errorf("sqlserver: %s does not answer a TDS pre-login: %w", n.Addr(), err)
		}
		select {
		case <-wctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// iridiumVersionRE finds the version Iridium logs at start.
var iridiumVersionRE = regexp.MustCompile(`iridium-server v(\S+)`)

// iridiumVersionOf reads the version iridium-server logged, which is how
// it names itself (over TDS it claims to be SQL Server).
func iridiumVersionOf(n *cluster.Node) (string, error) {
	b, err := os.ReadFile(n.LogFile)
	if err != nil {
		return "", fmt.Errorf("sqlserver: read the log of %s: %w", n.Name, err)
	}
	m := iridiumVersionRE.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("sqlserver: the log of %s names no iridium-server version: is it Iridium SQL?", n.Name)
	}
	return string(m[1]), nil
}

// TDSPrelogin sends a TDS PRELOGIN request to addr and returns the server
// version its response announces (major.minor.build), so that status can
// tell a TDS server that answers from a port that is merely open. It
// accepts a response of packet type 0x04 (TDS) or 0x12 (what Iridium
// sends).
func TDSPrelogin(ctx context.Context, addr string) (string, error) {
	d := net.Dialer{}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	return preloginOver(ctx, c)
}

// nodePrelogin is TDSPrelogin of node n from where n is: from inside its
// host's namespace for a node on a virtual network, the only place its
// address is reachable from.
func nodePrelogin(ctx context.Context, n *cluster.Node) (string, error) {
	c, err := n.Dial(ctx, n.Addr())
	if err != nil {
		return "", err
	}
	return preloginOver(ctx, c)
}

// preloginOver sends the pre-login on c, reads the answer and closes c.
func preloginOver(ctx context.Context, c net.Conn) (string, error) {
	defer c.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = c.SetDeadline(deadline)
	// Options: VERSION (6 bytes at offset 11), ENCRYPTION (1 byte at 17:
	// not supported), terminator.
	payload := []byte{0x00, 0, 11, 0, 6, 0x01, 0, 17, 0, 1, 0xFF, 0, 0, 0, 0, 0, 0, 0x02}
	req := make([]byte, 8, 8+len(payload))
	req[0], req[1] = 0x12, 0x01
	be.BigEndian.PutUint16(req[2:], uint16(8+len(payload)))
	req[6] = 1
	if _, err := c.Write(append(req, payload...)); err != nil {
		return "", err
	}
	h := make([]byte, 8)
	if _, err := io.ReadFull(c, h); err != nil {
		return "", fmt.Errorf("read the pre-login response: %w", err)
	}
	if h[0] != 0x04 && h[0] != 0x12 {
		return "", fmt.Errorf("pre-login response of packet type %#x", h[0])
	}
	size := int(be.BigEndian.Uint16(h[2:]))
	if size < 8 {
		return "", errors.New("pre-login response shorter than its header")
	}
	body := make([]byte, size-8)
	if _, err := io.ReadFull(c, body); err != nil {
		return "", fmt.Errorf("read the pre-login response: %w", err)
	}
	return parseTDSPrelogin(append(h, body...))
}

// parseTDSPrelogin reads the VERSION option of a pre-login response
// packet (its 8-byte header included).
func parseTDSPrelogin(packet []byte) (string, error) {
	if len(packet) < 8 {
		return "", errors.New("pre-login response shorter than its header")
	}
	if packet[0] != 0x04 && packet[0] != 0x12 {
		return "", fmt.Errorf("pre-login response of packet type %#x", packet[0])
	}
	body := packet[8:]
	for i := 0; i+5 <= len(body) && body[i] != 0xFF; i += 5 {
		if body[i] != 0x00 {
			continue
		}
		off, l := int(be.BigEndian.Uint16(body[i+1:])), int(be.BigEndian.Uint16(body[i+3:]))
		if l < 4 || off+l > len(body) {
			break
		}
		v := body[off:]
		return fmt.Sprintf("%d.%d.%d", v[0], v[1], be.BigEndian.Uint16(v[2:])), nil
	}
	return "", errors.New("pre-login response has no VERSION")
}

// probeSQLServer is the engine's status of a running node: whether it
// answers a TDS pre-login and the SQL Server version it claims (the
// detail names the server it really is).
func probeSQLServer(ctx context.Context, n *cluster.Node, detail map[string]string) error {
	v, err := nodePrelogin(ctx, n)
	if err != nil {
		return err
	}
	detail["sqlserver_compat"] = v
	return nil
}
