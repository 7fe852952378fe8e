package cli_test

import (
	"context"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	couchadapter "github.com/fieldbench/fieldbench/db/couchdb"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

// TestCouchDBHostsReplicate: `cluster up couchdb --nodes 2 --network
// hosts` puts two pouchdb-servers on hosts of their own (the standard
// port 5984 of 198.18.0.1 and .2); the adapter, dialling through the
// load host load1 as an experiment's load does, writes a document on the
// first node and reads it on the second (the nodes replicate across the
// virtual network by their host addresses); the machine's own namespace
// does not reach the nodes; a node killed and restarted on its host
// catches up with a write made while it was down; status names each
// node's address, its server and its host's counters; down leaves no
// namespace.
// healTestCut is how long TestCouchDBHostsReplicate keeps couch2 cut off.
const healTestCut = 15 * time.Second

func TestCouchDBHostsReplicate(t *testing.T) {
	const dsn = "couchdb://198.18.0.1:5984?peers=198.18.0.2:5984"
	h := upOnHosts(t, dsn, "couchdb", "--nodes", "2")
	e, err := cluster.Get("couchdb")
	if err != nil {
		t.Fatal(err)
	}
	// Two minutes for the test's own requests.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The adapter, as an experiment's in-process load uses it: its
	// Transport dials through fieldbench's default dial, which an
	// experiment on hosts points at the load host.
	h.dialFromLoad1(ctx)
	db, err := couchadapter.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("the adapter with the load host's dial: %v", err)
	}
	defer db.Close()
	nodes := db.Nodes()
	if len(nodes) != 2 {
		t.Fatalf("the adapter has %d nodes, want 2", len(nodes))
	}
	// Each node pulls the database from the other by its host address
	// (the clients' bases), from inside its own host.
	const dbName = "hosts_check"
	if err := couchapi.CreateReplicated(ctx, nodes, dbName, false); err != nil {
		t.Fatal(err)
	}
	put := func(n *couchapi.Client, id, v string) {
		t.Helper()
		if err := n.Do(ctx, http.MethodPut, couchapi.Path(dbName, id), nil, map[string]string{"v": v}, nil); err != nil {
			t.Fatalf("put %s on %s: %v", id, n.Base, err)
		}
	}
	// awaitDoc waits for document id on n, as replication brings it.
	awaitDoc := func(n *couchapi.Client, id, want string) {
		t.Helper()
		var doc struct {
			V string `json:"v"`
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			err = n.Do(ctx, http.MethodGet, couchapi.Path(dbName, id), nil, nil, &doc)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || doc.V != want {
			t.Errorf("%s on %s: %q, %v: want %q, replicated", id, n.Base, doc.V, err, want)
		}
	}
	put(nodes[0], "first", "written on couch1")
	awaitDoc(nodes[1], "first", "written on couch1")

	// From the machine's own namespace the address reaches no
	// pouchdb-server (here a gateway outside may accept the connection
	// and answer 404: no welcome either way).
	root := &couchapi.Client{Base: "http://198.18.0.1:5984", HTTP: &http.Client{Timeout: 3 * time.Second}}
	if w, err := root.Welcome(ctx); err == nil {
		t.Errorf("couch1 welcomed from the root namespace: %+v", w)
	}

	// couch2 killed, a write on couch1 while it is down, couch2
	// restarted on its host: its pull from couch1 brings the write.
	h.cluster("kill", "couch2")
	put(nodes[0], "second", "written while couch2 was down")
	h.cluster("restart", "couch2")
	awaitDoc(nodes[1], "second", "written while couch2 was down")

	// couch2 cut off from couch1 long enough for its pull to give up, a
	// write on couch1, the cut healed: the engine's Healed renews the
	// replications (pouchdb-server does not), and the write arrives.
	c, err := cluster.Load(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	couch2, err := c.Node("couch2")
	if err != nil {
		t.Fatal(err)
	}
	if err := vnet.Cut(ctx, couch2.Netns, []netip.Addr{netip.MustParseAddr("198.18.0.1")}); err != nil {
		t.Fatal(err)
	}
	put(nodes[0], "third", "written while couch2 was cut off")
	time.Sleep(healTestCut)
	if err := vnet.Uncut(ctx, couch2.Netns); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FIELDBENCH_TEST_NO_HEAL") == "" {
		if err := e.(cluster.Healer).Healed(ctx, c, []string{"couch2"}); err != nil {
			t.Fatalf("Healed: %v", err)
		}
	}
	awaitDoc(nodes[1], "third", "written while couch2 was cut off")

	h.status("198.18.0.1:5984  pouchdb-server  up", "198.18.0.2:5984  pouchdb-server  up", "server=pouchdb-server")
	db.Close()
	h.down()
}
