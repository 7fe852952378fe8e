package postgres

import (
	"context"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

func TestPostgresRegistered(t *testing.T) {
	e, err := cluster.Get("postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(cluster.Grower); !ok {
		t.Error("postgres engine is not a Grower")
	}
	if _, ok := e.(cluster.Killer); !ok {
		t.Error("postgres engine is not a Killer")
	}
	// cluster stop (StopNode) asks the engine for its signal: SIGINT,
	// PostgreSQL's fast shutdown, not SIGTERM's smart one.
	if s, ok := e.(cluster.StopSignaler); !ok || s.StopSignal() != syscall.SIGINT {
		t.Error("postgres engine does not stop its servers with SIGINT")
	}
}

// TestCheckNodes: cluster up postgres refuses more than 16 nodes, saying
// why (issue 13, finding 2): the postgres row of cluster's TestCheckNodes,
// which moved here with the engine.
func TestCheckNodes(t *testing.T) {
	t.Parallel()
	if err := cluster.CheckNodes(Name, 16, nil); err != nil {
		t.Errorf("--nodes 16: %v", err)
	}
	if err := cluster.CheckNodes(Name, 17, nil); err == nil || !strings.Contains(err.Error(), "more than the 16") {
		t.Errorf("--nodes 17: error %v, want one saying %q", err, "more than the 16")
	}
}

// TestCheckOptions: the engine's options are server settings, which it
// leaves to the server to judge, so none is refused before the start: the
// postgres row of cluster's TestCheckOptions, which moved here with the
// engine.
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	if err := cluster.CheckOptions(Name, cluster.Options{Nodes: 1, Extra: map[string]string{"shared_buffers": "128MB"}}); err != nil {
		t.Errorf("--opt shared_buffers=128MB refused: %v", err)
	}
}

func TestPostgresSettingsFile(t *testing.T) {
	s := pgSettings(map[string]string{"read_from": "replicas", "synchronous_commit": "off"})
	if _, ok := s["read_from"]; ok {
		t.Error("engine option read_from written as a server setting")
	}
	if s["synchronous_commit"] != "off" || s["fsync"] != "on" {
		t.Errorf("settings = %v", s)
	}
	p := t.TempDir() + "/x.conf"
	if err := writePGConf(p, map[string]string{"bad name": "1"}); err == nil {
		t.Error("invalid setting name accepted")
	}
	if err := writePGConf(p, map[string]string{"search_path": "it's"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "search_path = 'it''s'") {
		t.Errorf("settings file:\n%s", b)
	}
}

func TestPostgresSingleNode(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 1}, 3*time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if len(c.Nodes) != 1 || c.Nodes[0].Role != "primary" {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	want := "postgres://postgres@" + c.Nodes[0].Addr() + "/fieldbench?sslmode=disable"
	if c.DSN != want {
		t.Errorf("DSN = %q, want %q", c.DSN, want)
	}
	if !strings.HasPrefix(c.Version, "PostgreSQL ") {
		t.Errorf("Version = %q", c.Version)
	}
	for _, k := range []string{"shared_buffers", "synchronous_commit", "fsync", "wal_level", "max_connections", "postgis"} {
		if c.Options[k] == "" {
			t.Errorf("Options[%s] missing: %v", k, c.Options)
		}
	}
	saved, err := cluster.Load(c.Dir)
	if err != nil || saved.DSN != c.DSN || saved.Nodes[0].PID != c.Nodes[0].PID {
		t.Fatalf("Load = %+v, %v", saved, err)
	}
	e := pgEngine{}
	st, err := e.Status(ctx, saved)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].State != "up" || st[0].Role != "primary" || st[0].Detail["wal_lsn"] == "" {
		t.Errorf("Status = %+v", st)
	}
	conn, err := pgConnect(ctx, c.Nodes[0], PGDatabase)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := conn.QueryRow(ctx, "select postgis_version()").Scan(&v); err != nil {
		t.Errorf("PostGIS: %v", err)
	}
	conn.Close(ctx)
	port, pid := c.Nodes[0].Port, c.Nodes[0].PID
	if err := e.Down(ctx, saved); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(pid) || !pgPortFree(port) {
		t.Errorf("server still running after Down (pid %d alive %v)", pid, cluster.Alive(pid))
	}
	st, err = e.Status(ctx, saved)
	if err != nil || st[0].State != "down" {
		t.Errorf("Status after Down = %+v, %v", st, err)
	}
	// Restart brings the stopped node back with its data.
	if err := e.Restart(ctx, saved, "pg1"); err != nil {
		t.Fatal(err)
	}
	c.Nodes = saved.Nodes // the cleanup stops what is running now
	st, err = e.Status(ctx, saved)
	if err != nil || st[0].State != "up" {
		t.Errorf("Status after Restart = %+v, %v", st, err)
	}
}

func TestPostgresReplica(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2, Extra: map[string]string{"read_from": "replicas"}}, 3*time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := pgEngine{}
	if len(c.Nodes) != 2 || c.Nodes[1].Role != "replica" {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	if !strings.Contains(c.DSN, "replicas="+c.Nodes[1].Addr()) || !strings.Contains(c.DSN, "read_from=replicas") {
		t.Errorf("DSN = %q", c.DSN)
	}
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Detail["replicas_streaming"] != "1" || st[1].State != "streaming" || st[1].Detail["lag_bytes"] == "" {
		t.Errorf("Status = %+v", st)
	}

	// A row written on the primary becomes visible on the replica.
	p, err := pgConnect(ctx, c.Nodes[0], PGDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if _, err := p.Exec(ctx, "create table probe (id int primary key, v text); insert into probe values (1, 'hello')"); err != nil {
		t.Fatal(err)
	}
	waitRow := func(n *cluster.Node, id int, want string) {
		t.Helper()
		r, err := pgConnect(ctx, n, PGDatabase)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		start := time.Now()
		for {
			var v string
			err := r.QueryRow(ctx, "select v from probe where id = $1", id).Scan(&v)
			if err == nil && v == want {
				t.Logf("row %d visible on %s after %v", id, n.Name, time.Since(start))
				return
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("row %d not visible on %s after 30s: %v", id, n.Name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitRow(c.Nodes[1], 1, "hello")

	// Kill and restart the replica: it resumes streaming and catches up.
	if err := e.Kill(ctx, c, "pg2"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "insert into probe values (2, 'while down')"); err != nil {
		t.Fatal(err)
	}
	st, _ = e.Status(ctx, c)
	if st[1].State != "down" {
		t.Errorf("killed replica state = %q", st[1].State)
	}
	if err := e.Restart(ctx, c, "pg2"); err != nil {
		t.Fatal(err)
	}
	waitRow(c.Nodes[1], 2, "while down")

	// Add a third node: a new replica with the data.
	n, err := e.Add(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "pg3" || !strings.Contains(c.DSN, n.Addr()) {
		t.Errorf("added %s, DSN %q", n.Name, c.DSN)
	}
	waitRow(n, 2, "while down")
	st, err = e.Status(ctx, c)
	clustertest.WaitSettled(t, e, c, 30*time.Second)
	if err != nil || st[0].Detail["replicas_streaming"] != "2" {
		t.Errorf("Status after Add = %+v, %v", st, err)
	}
}

// pgPortFree reports whether port is free on the loopback (for tests).
func pgPortFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(cluster.Loopback, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// TestPostgresBudget: a primary and a replica each held to a budget. The
// postmaster runs as the postgres user, dropped to through setpriv after
// it joined its group as root; the backends and replication processes it
// forks are born in the group (more processes than the postmaster in it),
// and the teardown leaves no group.
func TestPostgresBudget(t *testing.T) {
	t.Parallel()
	plan, err := budget.ParsePlan([]string{"cpu=0.5,memory=512MiB"})
	if err != nil {
		t.Fatal(err)
	}
	clustertest.SkipWithoutBudgets(t, plan.Node)
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2, Budget: plan}, 3*time.Minute)
	groups := clustertest.CheckHeld(t, c)
	if len(groups) != 2 {
		t.Fatalf("%d groups for a primary and a replica", len(groups))
	}
	for i, g := range groups {
		pids, _ := g.ProcsAll()
		if len(pids) < 2 {
			t.Errorf("%s's group holds %v: the postmaster's children are not in it", c.Nodes[i].Name, pids)
		}
		if owner := procUser(t, c.Nodes[i].PID); owner != pgUser {
			t.Errorf("%s's postmaster runs as %q, want %q", c.Nodes[i].Name, owner, pgUser)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := cluster.Teardown(ctx, c); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckRemoved(t, groups)
}

// procUser is the name of the user pid runs as (its real uid).
func procUser(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			u, err := user.LookupId(f[1])
			if err != nil {
				return f[1]
			}
			return u.Username
		}
	}
	return ""
}
