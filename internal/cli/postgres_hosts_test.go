package cli_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/cluster/vnet"
	pgadapter "github.com/fieldbench/fieldbench/db/postgres"
)

// TestPostgresHostsReplica: `cluster up postgres --nodes 2 --network
// hosts` puts the primary and its replica on hosts of their own (the
// standard port of 198.18.0.1 and .2, the replica streaming from the
// primary's host address, pg_hba trusting the virtual network only); a
// write through the DSN from a load host reaches the replica; the
// machine's own namespace does not reach the nodes; status names each
// node's address; down leaves no namespace. About 15 s here.
func TestPostgresHostsReplica(t *testing.T) {
	// The servers run as postgres, who reaches the directory: upOnHosts
	// makes it world-searchable.
	const dsn = "postgres://postgres@198.18.0.1:5432/fieldbench?sslmode=disable&replicas=198.18.0.2:5432"
	h := upOnHosts(t, dsn, "postgres", "--nodes", "2")
	dir := h.dir

	// The replica was cloned from, and streams from, the primary's host
	// address.
	auto, err := os.ReadFile(filepath.Join(dir, "pg2", "data", "postgresql.auto.conf"))
	if err != nil || !strings.Contains(string(auto), "host=198.18.0.1 port=5432") {
		t.Errorf("pg2's primary_conninfo does not name 198.18.0.1:5432: %v\n%s", err, auto)
	}
	// Every network entry of pg_hba is the virtual network's block, and
	// replication is one of them.
	for _, node := range []string{"pg1", "pg2"} {
		hosts, repl := hbaHosts(t, filepath.Join(dir, node, "data", "pg_hba.conf"))
		for _, a := range hosts {
			if a != vnet.Block.String() {
				t.Errorf("%s: pg_hba admits %s, want %s only", node, a, vnet.Block)
			}
		}
		if len(hosts) == 0 || !repl {
			t.Errorf("%s: pg_hba has %v, replication %v: want %s for queries and replication", node, hosts, repl, vnet.Block)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	load := h.loadHost(ctx, 1)
	opts, err := pgadapter.ParseDSN(dsn)
	if err != nil || len(opts.Replicas) != 1 {
		t.Fatalf("ParseDSN: %+v %v", opts, err)
	}
	primary := connectIn(ctx, t, load.NS, opts.Primary)
	defer primary.Close(context.Background())
	var server, client string
	if err := primary.QueryRow(ctx, "select host(inet_server_addr()), host(inet_client_addr())").Scan(&server, &client); err != nil {
		t.Fatal(err)
	}
	if server != "198.18.0.1" || client != load.Addr.String() {
		t.Errorf("primary sees server %s, client %s: want 198.18.0.1 and the load host %s", server, client, load.Addr)
	}
	if _, err := primary.Exec(ctx, "create table hosts_check (k int primary key, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Exec(ctx, "insert into hosts_check values (1, 'written on the primary')"); err != nil {
		t.Fatal(err)
	}
	replica := connectIn(ctx, t, load.NS, opts.Replicas[0])
	defer replica.Close(context.Background())
	var got string
	var recovery bool
	deadline := time.Now().Add(20 * time.Second)
	for {
		err = replica.QueryRow(ctx, "select v, pg_is_in_recovery() from hosts_check where k = 1").Scan(&got, &recovery)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || got != "written on the primary" || !recovery {
		t.Errorf("replica read %q (in recovery %v), %v: want the primary's write on a replica", got, recovery, err)
	}

	// The adapter, as an experiment's in-process load uses it: its pools
	// dial through fieldbench's default dial, which an experiment on
	// hosts points at the load host (before, pgx's own dial went out of
	// the root namespace and never reached the node).
	restore := dialThrough(load)
	db, err := pgadapter.Open(ctx, dsn)
	restore()
	if err != nil {
		t.Errorf("the adapter with the load host's dial: %v", err)
	} else {
		db.Close()
	}

	// From the machine's own namespace the address reaches no server.
	if c, err := pgx.Connect(ctx, "postgres://postgres@198.18.0.1:5432/fieldbench?sslmode=disable&connect_timeout=2"); err == nil {
		c.Close(ctx)
		t.Error("the primary answered from the root namespace")
	}

	h.status("198.18.0.1:5432  primary", "198.18.0.2:5432  replica  streaming")
	primary.Close(context.Background())
	replica.Close(context.Background())
	h.down()
	// Nothing of this network in `ip netns list` (other networks, e.g. a
	// test running alongside, may be there).
	if nss, _ := vnet.ForDir(dir).Namespaces(); len(nss) > 0 {
		t.Errorf("namespaces left after down: %v", nss)
	}
}

// connectIn connects to dsn from inside namespace ns, as a client on
// that host would.
func connectIn(ctx context.Context, t *testing.T, ns, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = func(ctx context.Context, _, addr string) (net.Conn, error) { return vnet.Dial(ctx, ns, addr) }
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %s from %s: %v", dsn, ns, err)
	}
	return c
}

// hbaHosts reads the addresses of a pg_hba.conf's host entries and
// whether one of them is for replication.
func hbaHosts(t *testing.T, path string) (addrs []string, replication bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 || !strings.HasPrefix(fs[0], "host") {
			continue
		}
		addrs = append(addrs, fs[3])
		replication = replication || fs[1] == "replication"
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return addrs, replication
}
