package cli_test

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	hbaseadapter "github.com/fieldbench/fieldbench/db/hbase"
)

// TestHBaseHostsRegionServer: `cluster up hbase --network hosts` puts the
// master (its ZooKeeper and in-process region server) and the REST
// gateway on host 198.18.0.1, every listener of theirs on that address
// but the embedded ZooKeeper's (every address of the master's host, see
// db/hbase/engine.go); the machine's own namespace gets no answer from the
// gateway; microblog loads and runs from load host load1 without errors;
// the adapter opens with load1's dial as an experiment's load does;
// `cluster add` starts a region server on a host of its own (198.18.0.2,
// listening there only) that the master lists; it is killed and
// restarted on its host and listed again; status names the addresses and
// the hosts' counters; down leaves no namespace. HBase takes a minute or
// more to start here, hence long tests only.
func TestHBaseHostsRegionServer(t *testing.T) {
	onlyLong(t, "about 3 min here, HBase on hosts: TestFaultMatrix and the hbase adapter's tests cover HBase on loopback in CI")
	const dsn = "hbase://198.18.0.1:8080"
	h := upOnHosts(t, dsn, "hbase")
	m := h.node("master")
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

	h.loadAndRun("50")

	// The adapter, as an experiment's in-process load uses it: its
	// Transport dials through fieldbench's default dial, which an
	// experiment on hosts points at the load host.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	load := h.loadHost(ctx, 1)
	restore := netdial.Set(func(ctx context.Context, _, addr string) (net.Conn, error) { return vnet.Dial(ctx, load.NS, addr) })
	db, err := hbaseadapter.Open(ctx, dsn)
	restore()
	if err != nil {
		t.Fatalf("the adapter with the load host's dial: %v", err)
	}
	db.Close()

	if out := h.cluster("add"); !strings.Contains(out, "added rs2 at 198.18.0.2:16020") {
		t.Fatalf("add: %s", out)
	}
	rs := h.node("rs2")
	if listen := listeners(t, rs.Netns); len(listen) != 1 || !listen["198.18.0.2:16020"] {
		t.Errorf("rs2's host listens on %v, want 198.18.0.2:16020 only", listen)
	}
	// The master lists it (status reads the master's live servers).
	h.status("rs2        198.18.0.2:16020  regionserver              up")

	// restart returns once the master lists the new run of rs2.
	h.killRestart("rs2")
	h.status(
		"master     198.18.0.1:2181   master",
		"rest       198.18.0.1:8080   rest",
		"198.18.0.1:", "regionserver (in master)",
		"rs2        198.18.0.2:16020  regionserver              up")
	h.down()
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
