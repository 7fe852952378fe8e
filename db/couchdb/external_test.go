package couchdb

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

// testdata/external holds answers of pouchdb-server 4.2.0 (`cluster
// up couchdb --nodes 2`): its welcome, and /_membership of both servers,
// which say the same node1@127.0.0.1 (no cluster behind it). No Apache
// CouchDB runs here: its /_membership and /_system are not captured.
func couchTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "external", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCouchExternalAnswers(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal(couchTestdata(t, "pouchdb-welcome.json"), &m); err != nil {
		t.Fatal(err)
	}
	if w := couchapi.ParseWelcome(m); w.Server+" "+w.Version != "pouchdb-server 4.2.0" {
		t.Errorf("welcome = %+v", w)
	}
	tests := []struct {
		file string
		want map[string]string
	}{
		// The same answer from both servers: why pouchdb-server's
		// membership is not asked.
		{"pouchdb-membership.json", map[string]string{"127.0.0.1:5984": "up"}},
		{"pouchdb-membership-node2.json", map[string]string{"127.0.0.1:5984": "up"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			mem, err := parseCouchMembership(couchTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := couchMembersOf(mem, 5984); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCouchDocsDiffer(t *testing.T) {
	tests := []struct {
		name   string
		counts map[string]map[string]int64
		moving bool
		why    string
	}{
		{"equal", map[string]map[string]int64{"a": {"c1": 3, "c2": 3}}, false, ""},
		{"one behind", map[string]map[string]int64{"a": {"c1": 3, "c2": 3}, "b": {"c1": 5, "c2": 2}}, true, "b: documents per member c1=5 c2=2"},
		{"one member", map[string]map[string]int64{"a": {"c1": 3}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if moving, why := couchDocsDiffer(tt.counts); moving != tt.moving || why != tt.why {
				t.Errorf("got %v %q, want %v %q", moving, why, tt.moving, tt.why)
			}
		})
	}
}

// TestExternalCouchPouchDB opens two pouchdb-servers started by the
// project's couchdb engine as an external CouchDB: the version from the
// welcome, both members up, documents written to one moving until the
// other has them by replication, then settled; a killed member is
// unreachable and no longer a member.
func TestExternalCouchPouchDB(t *testing.T) {
	ctx, _, local := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 2}, 5*time.Minute)
	var members []cluster.ExternalMember
	for i, n := range local.Nodes {
		members = append(members, cluster.ExternalMember{Name: fmt.Sprintf("c%d", i+1), Host: n.Host, Port: n.Port})
	}
	ext, c, err := cluster.OpenExternal(ctx, cluster.ExternalSpec{Database: "couchdb", Members: members}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Down(ctx, c)
	if c.Version != "pouchdb-server "+PouchDBVersion || c.DSN != "couchdb://"+local.Nodes[0].Addr() {
		t.Errorf("version %q, DSN %q", c.Version, c.DSN)
	}
	got, err := couchRemoteMembers(ctx, c)
	if want := map[string]string{local.Nodes[0].Addr(): "up", local.Nodes[1].Addr(): "up"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("members = %v, %v; want %v", got, err, want)
	}
	clients := []*couchapi.Client{couchClient(local.Nodes[0]), couchClient(local.Nodes[1])}
	if err := couchapi.CreateReplicated(ctx, clients, "extcheck", false); err != nil {
		t.Fatal(err)
	}
	const docs = 200
	for i := range docs {
		if err := clients[0].Do(ctx, "PUT", couchapi.Path("extcheck", fmt.Sprintf("d%03d", i)), nil, map[string]int{"i": i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sawMoving := false
	deadline := time.Now().Add(2 * time.Minute)
	for {
		moving, why, err := ext.Moving(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if !moving {
			break
		}
		sawMoving = true
		if time.Now().After(deadline) {
			t.Fatalf("still moving after 2 minutes: %s", why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if i, err := clients[1].DBInfo(ctx, "extcheck"); err != nil || i.DocCount != docs {
		t.Errorf("settled, but the second member holds %+v, %v; want %d documents", i, err, docs)
	}
	t.Logf("moving seen before settled: %v (the copy may finish before the first poll)", sawMoving)
	sts, err := ext.Status(ctx, c)
	if err != nil || len(sts) != 2 || sts[1].State != "up" || sts[1].Detail["docs"] != fmt.Sprint(docs) {
		t.Errorf("status = %+v, %v", sts, err)
	}
	if err := cluster.Kill(local.Nodes[1].PID); err != nil {
		t.Fatal(err)
	}
	local.Nodes[1].Stopped = true
	got, err = couchRemoteMembers(ctx, c)
	if want := map[string]string{local.Nodes[0].Addr(): "up"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("members after a kill = %v, %v; want %v", got, err, want)
	}
	if sts, _ := ext.Status(ctx, c); len(sts) != 2 || sts[1].State != "unreachable" {
		t.Errorf("status of the killed member = %+v, want unreachable", sts)
	}
}
