package rethinkdb

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// testdata/external holds reqlite 2.3.0's rethinkdb.server_status
// (the one row fieldbench's start script writes) and table_status (empty,
// read with a table in place), as JSON. No RethinkDB runs here: its rows
// below are the shapes of its documented system tables, not captured.
func rethinkTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "external", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRethinkExternalServerStatus(t *testing.T) {
	rows, err := parseRethinkServerStatus(rethinkTestdata(t, "reqlite-server_status.json"))
	if err != nil || len(rows) != 1 {
		t.Fatalf("reqlite server_status = %+v, %v", rows, err)
	}
	if m, ok := rethinkMembersOf(rows); ok || len(m) != 0 {
		t.Errorf("reqlite members = %v, %v; want none named (no reql_port)", m, ok)
	}
	// RethinkDB's documented shape (not verified here).
	rows, err = parseRethinkServerStatus([]byte(`[
		{"name":"a","network":{"reql_port":28015,"canonical_addresses":[{"host":"10.0.0.1","port":29015}]},"process":{"version":"rethinkdb 2.4.4~0bookworm (GCC 12.2.0)"}},
		{"name":"b","network":{"reql_port":28015,"canonical_addresses":[{"host":"10.0.0.2","port":29015},{"host":"::1","port":29015}]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"10.0.0.1:28015": "up", "10.0.0.2:28015": "up", "[::1]:28015": "up"}
	if m, ok := rethinkMembersOf(rows); !ok || !reflect.DeepEqual(m, want) {
		t.Errorf("members = %v, %v; want %v", m, ok, want)
	}
}

func TestRethinkExternalTableStatus(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		moving bool
		why    string
	}{
		{"reqlite (captured)", rethinkTestdata(t, "reqlite-table_status.json"), false, ""},
		{"ready", []byte(`[{"db":"fb","name":"t","shards":[{"primary_replicas":["a"],"replicas":[{"server":"a","state":"ready"},{"server":"b","state":"ready"}]}]}]`), false, ""},
		{"backfilling", []byte(`[{"db":"fb","name":"t","shards":[{"replicas":[{"server":"a","state":"ready"}]},{"replicas":[{"server":"a","state":"ready"},{"server":"c","state":"backfilling"}]}]}]`),
			true, "fb.t shard 2 on c: backfilling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moving, why, err := rethinkNotReady(tt.in)
			if err != nil || moving != tt.moving || why != tt.why {
				t.Errorf("got %v %q %v; want %v %q", moving, why, err, tt.moving, tt.why)
			}
		})
	}
	if _, _, err := rethinkNotReady([]byte(`{`)); err == nil {
		t.Error("bad JSON: no error")
	}
}

// TestExternalRethinkReqlite opens reqlite, started by the project's
// rethinkdb engine, as an external RethinkDB: the version from
// server_status, the member up, nothing moving with a table in place
// (reqlite's table_status is empty), a restart done once the member
// answers, then unreachable once killed.
func TestExternalRethinkReqlite(t *testing.T) {
	ctx, _, local := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 2*time.Minute)
	n := local.Nodes[0]
	// restart runs true: the member is up throughout, and Restart returns
	// once the database's own status says so (not the local engine's,
	// which knows no PID of a remote node).
	ext, c, err := cluster.OpenExternal(ctx, cluster.ExternalSpec{Database: "rethinkdb", Members: []cluster.ExternalMember{{Name: "r1", Host: n.Host, Port: n.Port}},
		Commands: map[string]string{"restart": "true"}, JoinTimeout: 30 * time.Second}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Down(ctx, c)
	if c.Version != "reqlite "+ReqliteVersion || c.DSN != "rethinkdb://"+n.Addr()+"/fieldbench" {
		t.Errorf("version %q, DSN %q", c.Version, c.DSN)
	}
	if m, err := rethinkRemoteMembers(ctx, c); err != nil || !reflect.DeepEqual(m, map[string]string{n.Addr(): "up"}) {
		t.Errorf("members = %v, %v", m, err)
	}
	s, done, err := rethinkSession(n)
	if err != nil {
		t.Fatal(err)
	}
	err = r.DBCreate("extcheck").Exec(s)
	if err == nil {
		err = r.DB("extcheck").TableCreate("t").Exec(s)
	}
	done()
	if err != nil {
		t.Fatal(err)
	}
	if moving, why, err := ext.Moving(ctx, c); err != nil || moving {
		t.Errorf("moving = %v %q, %v; want nothing moving", moving, why, err)
	}
	if err := ext.Restart(ctx, c, "r1"); err != nil {
		t.Errorf("restart of an answering member: %v", err)
	}
	if err := cluster.Kill(n.PID); err != nil {
		t.Fatal(err)
	}
	n.Stopped = true
	if sts, err := ext.Status(ctx, c); err != nil || len(sts) != 1 || sts[0].State != "unreachable" {
		t.Errorf("status after a kill = %+v, %v; want unreachable", sts, err)
	}
	if _, err := rethinkRemoteMembers(ctx, c); err == nil {
		t.Error("members after a kill: no error")
	}
}
