package sqlserver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestParseTDSPrelogin reads pre-login responses: testdata's was captured
// from Iridium SQL 0.1.13 (packet type 0x12, VERSION 16.0.4105).
func TestParseTDSPrelogin(t *testing.T) {
	iridium, err := os.ReadFile(filepath.Join("testdata", "external", "iridium-prelogin.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   []byte
		want string
		err  bool
	}{
		{"Iridium 0.1.13", iridium, "16.0.4105", false},
		{"TDS packet type 0x04", append([]byte{0x04}, iridium[1:]...), "16.0.4105", false},
		{"another packet type", append([]byte{0x11}, iridium[1:]...), "", true},
		{"no VERSION option", []byte{0x04, 1, 0, 9, 0, 0, 1, 0, 0xFF}, "", true},
		{"short", []byte{0x04, 1}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTDSPrelogin(tt.in)
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tt.want, tt.err)
			}
		})
	}
}

// TestExternalSQLServerIridium opens Iridium SQL, started by the project's
// sqlserver engine, as an external SQL Server: its version from the
// pre-login, one member up, then unreachable once killed.
func TestExternalSQLServerIridium(t *testing.T) {
	ctx, _, local := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 2*time.Minute)
	n := local.Nodes[0]
	ext, c, err := cluster.OpenExternal(ctx, cluster.ExternalSpec{Database: "sqlserver", Members: []cluster.ExternalMember{{Name: "s1", Host: n.Host, Port: n.Port}}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Down(ctx, c)
	if c.Version != "16.0.4105" || c.DSN != "sqlserver://"+n.Addr()+"?database=fieldbench" {
		t.Errorf("version %q, DSN %q; want what Iridium 0.1.13 announces, 16.0.4105", c.Version, c.DSN)
	}
	if m, err := sqlRemoteMembers(ctx, c); err != nil || len(m) != 1 || m[n.Addr()] != "up" {
		t.Errorf("members = %v, %v", m, err)
	}
	if err := cluster.Kill(n.PID); err != nil {
		t.Fatal(err)
	}
	n.Stopped = true
	if sts, err := ext.Status(ctx, c); err != nil || len(sts) != 1 || sts[0].State != "unreachable" {
		t.Errorf("status of a killed member = %+v, %v; want unreachable", sts, err)
	}
	if m, _ := sqlRemoteMembers(ctx, c); len(m) != 0 {
		t.Errorf("members after a kill = %v, want none", m)
	}
}
