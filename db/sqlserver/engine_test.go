package sqlserver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

func TestParseSQLServerOpts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts    cluster.Options
		want    string
		wantErr string
	}{
		{cluster.Options{Nodes: 1}, "disk", ""},
		{cluster.Options{Nodes: 0, Extra: map[string]string{"storage": "memory"}}, "memory", ""},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"storage": "tape"}}, "", "want disk or memory"},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"replicas": "1"}}, "", "unknown option"},
		{cluster.Options{Nodes: 2}, "", "no replication"},
	} {
		got, err := parseSQLServerOpts(tc.opts)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseSQLServerOpts(%+v) error %v, want %q", tc.opts, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSQLServerOpts(%+v) = %q, %v; want %q", tc.opts, got, err, tc.want)
		}
	}
	if _, err := parseSQLServerOpts(cluster.Options{Nodes: 3}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("3 nodes: %v does not wrap ErrUnsupported", err)
	}
}

// TestSQLServerEngine starts Iridium SQL through the engine, checks that
// it listens on 127.0.0.1 only, that the cluster and its status name
// Iridium (never SQL Server) and that status reads the SQL Server version
// it claims over TDS; then a kill, a restart and a stop.
func TestSQLServerEngine(t *testing.T) {
	ctx, e, c := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 2*time.Minute)
	n := c.Nodes[0]
	if c.Version != "Iridium SQL "+IridiumVersion || !strings.HasPrefix(c.DSN, "sqlserver://fieldbench@127.0.0.1:") ||
		!strings.HasSuffix(c.DSN, "?database=fieldbench&encrypt=disable&standin=iridium") || n.Host != cluster.Loopback || c.Options["server"] != IridiumServer {
		t.Fatalf("cluster = version %q, DSN %q, host %q, options %v", c.Version, c.DSN, n.Host, c.Options)
	}
	if got := clustertest.ListenAddrs(t, n.Port); len(got) != 1 || got[0] != n.Addr() {
		t.Errorf("listening sockets on port %d: %v; want %s only", n.Port, got, n.Addr())
	}
	st, err := e.Status(ctx, c)
	if err != nil || len(st) != 1 || st[0].State != "up" || st[0].Detail["server"] != IridiumServer ||
		!strings.HasPrefix(st[0].Detail["sqlserver_compat"], "16.0.") {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	k := e.(cluster.Killer)
	if err := k.Kill(ctx, c, n.Name); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Status(ctx, c); err != nil || st[0].State != "stopped" {
		t.Fatalf("Status after kill = %+v, %v", st, err)
	}
	if err := k.Restart(ctx, c, n.Name); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Status(ctx, c); err != nil || st[0].State != "up" {
		t.Fatalf("Status after restart = %+v, %v", st, err)
	}
	if err := e.Down(ctx, c); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(n.PID) || !n.Stopped {
		t.Errorf("node after Down: pid %d alive %v, stopped %v", n.PID, cluster.Alive(n.PID), n.Stopped)
	}
}
