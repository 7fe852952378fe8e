package cli_test

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hbaseadapter "github.com/fieldbench/fieldbench/adapter/hbase"
	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// TestHBaseHostsRegionServer: `cluster up hbase --network hosts` puts the
// master (its ZooKeeper and in-process region server) and the REST
// gateway on host 198.18.0.1, every listener of theirs on that address
// but the embedded ZooKeeper's (every address of the master's host, see
// cluster/hbase.go); the machine's own namespace gets no answer from the
// gateway; microblog loads and runs from load host load1 without errors;
// the adapter opens with load1's dial as an experiment's load does;
// `cluster add` starts a region server on a host of its own (198.18.0.2,
// listening there only) that the master lists; it is killed and
// restarted on its host and listed again; status names the addresses and
// the hosts' counters; down leaves no namespace. HBase takes a minute or
// more to start here, hence long tests only.
func TestHBaseHostsRegionServer(t *testing.T) {
	onlyLong(t, "about 3 min here, HBase on hosts: TestFaultMatrix and the hbase adapter's tests cover HBase on loopback in CI")
	needHostsEngine(t, "hbase")
	bin := fieldbenchBin(t)
	dir := filepath.Join(t.TempDir(), "hb")
	code, out, stderr := upHosts(t, bin, dir, "hbase")
	const dsn = "hbase://198.18.0.1:8080"
	if code != 0 || !strings.Contains(out, "DSN: "+dsn+"\n") {
		t.Fatalf("up: exit %d, want DSN %s\n%s\n%s", code, dsn, out, stderr)
	}
	c, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Node("master")
	if err != nil {
		t.Fatal(err)
	}
	// Every listening socket in the master's host: the master's RPC,
	// JMX and in-process region server, the gateway, all on 198.18.0.1;
	// ZooKeeper on 2181 of every address of the host.
	listen := listeners(t, m.Netns)
	for _, want := range []string{"198.18.0.1:16000", "198.18.0.1:16010", "198.18.0.1:8080", "0.0.0.0:2181"} {
		if !listen[want] {
			t.Errorf("nothing listens on %s in the master's host: %v", want, listen)
		}
	}
	for a := range listen {
		if !strings.HasPrefix(a, "198.18.0.1:") && a != "0.0.0.0:2181" {
			t.Errorf("the master's host listens on %s, not its address", a)
		}
	}
	// From the machine's own namespace the address reaches no gateway
	// (a gateway outside may accept the connection: no HBase version
	// either way).
	root := &http.Client{Timeout: 3 * time.Second}
	if resp, err := root.Get("http://198.18.0.1:8080/version/cluster"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the gateway answered from the root namespace: %s", resp.Status)
		}
	}

	loadAndRunOnLoadHostUsers(t, bin, dir, filepath.Join(t.TempDir(), "res"), "50")

	// The adapter, as an experiment's in-process load uses it: its
	// Transport dials through fieldbench's default dial, which an
	// experiment on hosts points at the load host.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	load, err := vnet.ForDir(dir).AddHost(ctx, "load1", vnet.LoadAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	restore := netdial.Set(func(ctx context.Context, _, addr string) (net.Conn, error) { return vnet.Dial(ctx, load.NS, addr) })
	db, err := hbaseadapter.Open(ctx, dsn)
	restore()
	if err != nil {
		t.Fatalf("the adapter with the load host's dial: %v", err)
	}
	db.Close()

	if code, out, stderr := runBin(t, bin, "cluster", "add", "--dir", dir); code != 0 || !strings.Contains(out, "added rs2 at 198.18.0.2:16020") {
		t.Fatalf("add: exit %d\n%s\n%s", code, out, stderr)
	}
	if c, err = cluster.Load(dir); err != nil {
		t.Fatal(err)
	}
	rs, err := c.Node("rs2")
	if err != nil {
		t.Fatal(err)
	}
	if listen := listeners(t, rs.Netns); len(listen) != 1 || !listen["198.18.0.2:16020"] {
		t.Errorf("rs2's host listens on %v, want 198.18.0.2:16020 only", listen)
	}
	// The master lists it (status reads the master's live servers).
	statusHas(t, bin, dir, "rs2        198.18.0.2:16020  regionserver              up")

	if code, out, stderr := runBin(t, bin, "cluster", "kill", "rs2", "--dir", dir); code != 0 {
		t.Fatalf("kill rs2: exit %d\n%s\n%s", code, out, stderr)
	}
	// restart returns once the master lists the new run of rs2.
	if code, out, stderr := runBin(t, bin, "cluster", "restart", "rs2", "--dir", dir); code != 0 {
		t.Fatalf("restart rs2: exit %d\n%s\n%s", code, out, stderr)
	}
	statusHas(t, bin, dir,
		"master     198.18.0.1:2181   master",
		"rest       198.18.0.1:8080   rest",
		"198.18.0.1:", "regionserver (in master)",
		"rs2        198.18.0.2:16020  regionserver              up")
	downAndAssertGone(t, bin, dir)
}

// listeners are the addresses TCP sockets listen on in namespace ns
// (`ss -ltnH`), as host:port.
func listeners(t *testing.T, ns string) map[string]bool {
	t.Helper()
	argv := vnet.Command(ns, "ss", "-ltnH")
	b, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, b)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			out[f[3]] = true
		}
	}
	return out
}
