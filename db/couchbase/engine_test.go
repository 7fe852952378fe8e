package couchbase

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestCouchbaseMockContained starts CouchbaseMock with two simulated nodes
// and checks what the engine promises: the JVM runs in a namespace of its
// own, every port the host has for it listens on 127.0.0.1 only (the
// forwarder), the server is named as CouchbaseMock, status reaches every
// node through the forwarder, and Down ends both processes and removes
// the namespace.
func TestCouchbaseMockContained(t *testing.T) {
	e := couchbaseEngine{}
	if err := e.Check(); err != nil {
		if testing.Short() {
			t.Skipf("CouchbaseMock cannot run here: %v", err)
		}
		t.Fatalf("CouchbaseMock cannot run here (run scripts/install-servers.sh as root): %v", err)
	}
	dir := t.TempDir()
	if _, err := cluster.Prepare(dir, e.Name()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a first jar fetch included
	defer cancel()
	c, err := e.Up(ctx, dir, cluster.Options{Nodes: 2})
	t.Cleanup(func() {
		if c != nil {
			_ = e.Down(context.Background(), c)
		}
	})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if c.Version != CouchbaseMockServer || len(c.Nodes) != 2 || !strings.HasPrefix(c.DSN, "couchbase://127.0.0.1:") {
		t.Fatalf("cluster %+v: want %q, 2 nodes, a loopback DSN", c, CouchbaseMockServer)
	}
	ns := c.Options["netns"]
	if ns == "" || !cluster.NetnsExists(ns) {
		t.Fatalf("namespace %q does not exist", ns)
	}
	jvm := c.Nodes[0].PID
	link, err := os.Readlink("/proc/" + strconv.Itoa(jvm) + "/ns/net")
	self, err2 := os.Readlink("/proc/self/ns/net")
	if err != nil || err2 != nil || link == self {
		t.Errorf("the JVM's network namespace %q (%v) is this process's %q (%v)", link, err, self, err2)
	}
	rest, _ := strconv.Atoi(c.Options["rest_port"])
	for _, p := range []int{rest, c.Nodes[0].Port, c.Nodes[1].Port} {
		ls := clustertest.ListenAddrs(t, p)
		if len(ls) == 0 {
			t.Errorf("nothing listens on the host on port %d", p)
		}
		for _, l := range ls {
			if !strings.HasPrefix(l, "127.0.0.1:") {
				t.Errorf("port %d listens on %s on the host: want 127.0.0.1 only", p, l)
			}
		}
	}
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.State != "up" || s.Detail["server"] != CouchbaseMockServer {
			t.Errorf("status %+v: want up, %s", s, CouchbaseMockServer)
		}
	}
	fpid, _ := strconv.Atoi(c.Options["forwarder_pid"])
	// A forwarder never outlives its server (here killed behind Down's
	// back): it would hold the server's ports on the host.
	if err := cluster.Kill(jvm); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); cluster.Alive(fpid) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if cluster.Alive(fpid) {
		t.Errorf("the forwarder (pid %d) still runs 10 s after its server ended", fpid)
	}
	if err := e.Down(ctx, c); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if cluster.Alive(jvm) || cluster.Alive(fpid) || cluster.NetnsExists(ns) {
		t.Errorf("after Down: JVM alive %v, forwarder alive %v, namespace %s exists %v", cluster.Alive(jvm), cluster.Alive(fpid), ns, cluster.NetnsExists(ns))
	}
}
