package mariadb

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// needMariaDB fails (skips under -short) when the servers are missing.
func needMariaDB(t *testing.T, galera bool) mariaDB {
	t.Helper()
	m := mariaDB{}
	err := m.Check()
	if err == nil && galera {
		err = checkGalera()
	}
	if err != nil {
		if testing.Short() {
			t.Skipf("MariaDB not installed (run scripts/install-servers.sh): %v", err)
		}
		t.Fatalf("MariaDB not installed (run scripts/install-servers.sh): %v", err)
	}
	return m
}

func TestMariaDBRegistered(t *testing.T) {
	e, err := cluster.Get("mariadb")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(cluster.Grower); !ok {
		t.Error("mariadb engine is not a Grower")
	}
	if _, ok := e.(cluster.Killer); !ok {
		t.Error("mariadb engine is not a Killer")
	}
}

// TestCheckNodes: cluster up mariadb refuses more than 9 nodes, saying
// why (issue 13, finding 2): the mariadb row of cluster's TestCheckNodes,
// which moved here with the engine.
func TestCheckNodes(t *testing.T) {
	t.Parallel()
	if err := cluster.CheckNodes(Name, 9, nil); err != nil {
		t.Errorf("--nodes 9: %v", err)
	}
	if err := cluster.CheckNodes(Name, 10, nil); err == nil || !strings.Contains(err.Error(), "buffer pool") {
		t.Errorf("--nodes 10: error %v, want one saying %q", err, "buffer pool")
	}
}

// TestCheckOptions: the engine's options are checked without starting
// anything (issue 31, finding 5): galera=false is accepted, an unknown
// option refused, naming it. The mariadb rows of cluster's
// TestCheckOptions, which moved here with the engine.
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	if err := cluster.CheckOptions(Name, cluster.Options{Nodes: 1, Extra: map[string]string{"galera": "false"}}); err != nil {
		t.Errorf("--opt galera=false refused: %v", err)
	}
	if err := cluster.CheckOptions(Name, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("--opt bogus=1: %v", err)
	}
}

func TestMariaDBOptions(t *testing.T) {
	m := mariaDB{}
	for _, tc := range []struct {
		name string
		opts cluster.Options
		want string
	}{
		{"unknown option", cluster.Options{Nodes: 1, Extra: map[string]string{"replicas": "1"}}, "unknown option"},
		{"bad bool", cluster.Options{Nodes: 1, Extra: map[string]string{"galera": "maybe"}}, "not true or false"},
		{"galera off with 3 nodes", cluster.Options{Nodes: 3, Extra: map[string]string{"galera": "false"}}, "need galera"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Up(t.Context(), t.TempDir(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Up = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestMariaDBSingleUpStatusDown(t *testing.T) {
	m := needMariaDB(t, false)
	t0 := time.Now()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 1}, 2*time.Minute)
	t.Logf("single server up in %v (version %s)", time.Since(t0).Round(time.Millisecond), c.Version)
	if !strings.Contains(c.Version, "MariaDB") {
		t.Errorf("version %q does not name MariaDB", c.Version)
	}
	u, err := url.Parse(c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	if u.Scheme != "mariadb" || u.User.Username() != "fieldbench" || len(pw) < 16 || u.Path != "/fieldbench" || u.Host != c.Nodes[0].Addr() {
		t.Errorf("unexpected DSN shape (scheme %s user %s host %s path %s)", u.Scheme, u.User.Username(), u.Host, u.Path)
	}
	if b, _ := os.ReadFile(c.Nodes[0].LogFile); strings.Contains(string(b), pw) {
		t.Error("server log contains the password")
	}
	st, err := m.Status(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].State != "up" || st[0].PID == 0 {
		t.Fatalf("status = %+v", st)
	}
	// The account works over TCP with the DSN's password.
	out, err := mariadbQuery(t.Context(), c.Nodes[0], "select count(*) from mysql.global_priv where User = 'fieldbench'")
	if err != nil || strings.TrimSpace(out) != "1" {
		t.Errorf("fieldbench user: %q, %v", out, err)
	}
	loaded, err := cluster.Load(c.Dir)
	if err != nil || loaded.DSN != c.DSN || loaded.Nodes[0].PID != c.Nodes[0].PID {
		t.Errorf("cluster.json: %v", err)
	}
	if err := m.Down(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	st, err = m.Status(t.Context(), c)
	if err != nil || st[0].State != "down" {
		t.Errorf("status after Down = %+v, %v", st, err)
	}
	if _, err := m.Add(t.Context(), c); err == nil {
		t.Error("Add on a single server succeeded")
	}
}

// TestMariaDBGalera starts a 3-node Galera cluster, checks every node is
// Synced in a cluster of 3, writes on node1 and reads on node3, then kills
// node2 and restarts it (it rejoins).
func TestMariaDBGalera(t *testing.T) {
	if testing.Short() {
		t.Skip("Galera cluster start takes ~30 s")
	}
	m := needMariaDB(t, true)
	t0 := time.Now()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 3}, 4*time.Minute)
	t.Logf("3-node Galera up in %v", time.Since(t0).Round(time.Millisecond))
	st, err := m.Status(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.State != "up" || s.Detail["wsrep_cluster_size"] != "3" || s.Detail["wsrep_local_state_comment"] != "Synced" ||
			s.Detail["wsrep_ready"] != "ON" || s.Detail["state_transfer"] != "none" {
			t.Errorf("%s: state %s detail %v", s.Name, s.State, s.Detail)
		}
	}
	u, _ := url.Parse(c.DSN)
	if got := strings.Split(u.Query().Get("nodes"), ","); len(got) != 2 || got[0] != c.Nodes[1].Addr() || got[1] != c.Nodes[2].Addr() {
		t.Errorf("DSN nodes = %v", got)
	}
	if _, err := mariadbQuery(t.Context(), c.Nodes[0],
		"create table fieldbench.probe (id int primary key, v varchar(20)); insert into fieldbench.probe values (1, 'from node1');"); err != nil {
		t.Fatal(err)
	}
	out, err := mariadbQuery(t.Context(), c.Nodes[2], "set session wsrep_sync_wait = 1; select v from fieldbench.probe where id = 1")
	if err != nil || strings.TrimSpace(out) != "from node1" {
		t.Fatalf("read on node3: %q, %v", out, err)
	}

	// Crash node2, write meanwhile, restart it: it catches up.
	if err := m.Kill(t.Context(), c, "node2"); err != nil {
		t.Fatal(err)
	}
	if _, err := mariadbQuery(t.Context(), c.Nodes[0], "insert into fieldbench.probe values (2, 'while down')"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	t1 := time.Now()
	if err := m.Restart(ctx, c, "node2"); err != nil {
		t.Fatal(err)
	}
	t.Logf("node2 rejoined in %v", time.Since(t1).Round(time.Millisecond))
	clustertest.WaitSettled(t, m, c, time.Minute)
	out, err = mariadbQuery(t.Context(), c.Nodes[1], "set session wsrep_sync_wait = 1; select v from fieldbench.probe where id = 2")
	if err != nil || strings.TrimSpace(out) != "while down" {
		t.Fatalf("read on restarted node2: %q, %v", out, err)
	}
}
