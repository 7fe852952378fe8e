package rethinkdb

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

func TestParseRethinkOpts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts    cluster.Options
		wantErr string
	}{
		{cluster.Options{Nodes: 1}, ""},
		{cluster.Options{Nodes: 0}, ""},
		{cluster.Options{Nodes: 3}, "no clustering"},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"replicas": "1"}}, "unknown option"},
	}
	for _, tt := range tests {
		err := parseRethinkOpts(tt.opts)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("parseRethinkOpts(%+v) = %v", tt.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseRethinkOpts(%+v) error %v, want %q", tt.opts, err, tt.wantErr)
		}
	}
	if err := parseRethinkOpts(cluster.Options{Nodes: 2}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("2 nodes: %v does not wrap ErrUnsupported", err)
	}
}

// TestRethinkEngine starts reqlite through the engine and checks that it
// listens on 127.0.0.1 only (the start script's first workaround), that
// the Go driver completes the handshake (the second: the salt), that the
// cluster and its status name reqlite and never RethinkDB, and that Down
// stops it.
func TestRethinkEngine(t *testing.T) {
	ctx, e, c := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 5*time.Minute) // a first npm install included
	n := c.Nodes[0]
	if c.Version != "reqlite "+ReqliteVersion || !strings.HasPrefix(c.DSN, "rethinkdb://127.0.0.1:") || n.Host != cluster.Loopback ||
		!strings.Contains(c.Options["server"], "reqlite") {
		t.Fatalf("cluster = version %q, DSN %q, host %q, options %v", c.Version, c.DSN, n.Host, c.Options)
	}
	if got := clustertest.ListenAddrs(t, n.Port); len(got) != 1 || got[0] != n.Addr() {
		t.Errorf("port %d listens on %v, want only %s", n.Port, got, n.Addr())
	}
	st, err := e.Status(ctx, c)
	if err != nil || len(st) != 1 || st[0].State != "up" || !strings.HasPrefix(st[0].Detail["server"], "reqlite "+ReqliteVersion) {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	s, done, err := rethinkSession(n)
	if err != nil {
		t.Fatalf("the Go driver's handshake with reqlite: %v", err)
	}
	defer done()
	if err := r.DBCreate("enginetest").Exec(s); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Status(ctx, c); st[0].Detail["databases"] != "1" {
		t.Errorf("Status after a database was created = %+v", st[0])
	}
	if _, ok := e.(cluster.Killer); ok {
		t.Error("the engine offers Kill/Restart, but reqlite keeps nothing across a restart")
	}
	if err := e.Down(ctx, c); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(n.PID) {
		t.Error("reqlite still running after Down")
	}
}

// TestReqliteStartRefusesOtherHosts: the start script listens on loopback
// addresses and on those of fieldbench's virtual network (198.18.0.0/15)
// only: anything else, a wildcard or a name is refused before reqlite is
// loaded.
func TestReqliteStartRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	if err := cluster.CheckNodeJS(); err != nil {
		t.Skip(err)
	}
	script := t.TempDir() + "/" + reqliteScript
	if err := os.WriteFile(script, reqliteStart, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"0.0.0.0", "::", "10.0.0.1", "localhost", "198.20.0.1"} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "node", script, "--reqlite", "/nonexistent", "--host", host, "--port", "1").CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "virtual network only") {
			t.Errorf("--host %s: %v, output %q; want a refusal", host, err, out)
		}
	}
}
