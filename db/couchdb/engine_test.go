package couchdb

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

// upOwn starts pouchdb-server nodes of the test's own through the
// engine, stopped when the test ends, with a context that ends after
// timeout (clustertest.OwnClusterContext), for a test that calls the
// engine's methods beyond cluster.Engine's (Kill, Restart, Add, Moving).
// The package's adapter tests share another pair (couchdb_test.go).
func upOwn(t *testing.T, opts cluster.Options, timeout time.Duration) (context.Context, couchEngine, *cluster.Cluster) {
	t.Helper()
	ctx, e, c := clustertest.OwnClusterContext(t, Name, opts, timeout)
	ce, ok := e.(couchEngine)
	if !ok {
		t.Fatalf("engine %s is a %T, not a couchEngine", Name, e)
	}
	return ctx, ce, c
}

// waitDoc polls node for db/id until it is there or 30 s pass.
func waitDoc(t *testing.T, node *couchapi.Client, db, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	for {
		err := node.Do(ctx, http.MethodGet, couchapi.Path(db, id), nil, nil, nil)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s/%s never reached %s: %v", db, id, node.Base, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func put(t *testing.T, node *couchapi.Client, db, id string) {
	t.Helper()
	if err := node.Do(t.Context(), http.MethodPut, couchapi.Path(db, id), nil, map[string]int{"v": 1}, nil); err != nil {
		t.Fatalf("write %s/%s on %s: %v", db, id, node.Base, err)
	}
}

// TestCouchReplicatedKillRestartAdd starts two pouchdb-server nodes and
// checks what the engine promises: loopback only, the server named as
// pouchdb-server, writes on either node reaching the other, a killed node
// catching up after Restart (and the other node pulling from it again),
// and an added node receiving the databases.
func TestCouchReplicatedKillRestartAdd(t *testing.T) {
	_, e, c := upOwn(t, cluster.Options{Nodes: 2}, 5*time.Minute) // a first npm install included
	ctx := t.Context()
	for _, n := range c.Nodes {
		ls := clustertest.ListenAddrs(t, n.Port)
		if len(ls) == 0 {
			t.Fatalf("%s: nothing listens on port %d", n.Name, n.Port)
		}
		for _, l := range ls {
			if !strings.HasPrefix(l, "127.0.0.1:") {
				t.Errorf("%s listens on %s: want 127.0.0.1 only", n.Name, l)
			}
		}
	}
	if !strings.HasPrefix(c.Version, "pouchdb-server ") || !strings.Contains(c.DSN, "?peers=") {
		t.Errorf("Version %q, DSN %q: want pouchdb-server and a peer", c.Version, c.DSN)
	}
	a, b := couchClient(c.Nodes[0]), couchClient(c.Nodes[1])
	const db = "fb_repl"
	if err := couchapi.CreateReplicated(ctx, []*couchapi.Client{a, b}, db, false); err != nil {
		t.Fatal(err)
	}
	put(t, a, db, "from-a")
	put(t, b, db, "from-b")
	waitDoc(t, b, db, "from-a")
	waitDoc(t, a, db, "from-b")

	if err := e.Kill(ctx, c, "couch2"); err != nil {
		t.Fatal(err)
	}
	put(t, a, db, "while-down")
	if err := e.Restart(ctx, c, "couch2"); err != nil {
		t.Fatal(err)
	}
	waitDoc(t, b, db, "while-down")
	put(t, b, db, "after-restart")
	waitDoc(t, a, db, "after-restart")

	n3, err := e.Add(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	cn := couchClient(n3)
	waitDoc(t, cn, db, "after-restart")
	put(t, cn, db, "from-new")
	waitDoc(t, a, db, "from-new")
	waitDoc(t, b, db, "from-new")

	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.State != "up" || !strings.HasPrefix(s.Detail["server"], "pouchdb-server ") || s.Detail["replicated_dbs"] != "1" {
			t.Errorf("status %+v: want up, pouchdb-server, 1 replicated database", s)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		moving, detail, err := e.Moving(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !moving {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still moving after 30 s: %s", detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
