package couchbase

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// testdata/external holds answers of CouchbaseMock 1.5.27
// (`cluster up couchbase --nodes 2`): GET /pools and GET /pools/default,
// which has no nodes. It answers /pools/default/rebalanceProgress 404.
// No Couchbase Server runs here: its nodes[] and rebalanceProgress below
// are the shapes its REST API documentation shows, not captured answers.
func cbTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "external", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCouchbaseExternalAnswers(t *testing.T) {
	p, err := parseCBPools(cbTestdata(t, "mock-pools.json"))
	if err != nil || p.ImplementationVersion != couchbaseMockImpl {
		t.Errorf("GET /pools = %+v, %v; want %s", p, err, couchbaseMockImpl)
	}
	d, err := parseCBPoolsDefault(cbTestdata(t, "mock-pools-default.json"))
	if err != nil || d.Nodes != nil {
		t.Errorf("mock /pools/default = %+v, %v; want no nodes", d, err)
	}
	// Couchbase Server's documented shape (not verified here).
	d, err = parseCBPoolsDefault([]byte(`{"name":"default","nodes":[
		{"hostname":"10.0.0.1:8091","status":"healthy","clusterMembership":"active","version":"7.2.0-5325-enterprise"},
		{"hostname":"10.0.0.2:8091","status":"unhealthy","clusterMembership":"active"},
		{"hostname":"10.0.0.3:8091","status":"healthy","clusterMembership":"inactiveAdded"},
		{"hostname":"10.0.0.4:8091","status":"unhealthy","clusterMembership":"inactiveFailed"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"10.0.0.1:8091": "up", "10.0.0.2:8091": "unhealthy, active",
		"10.0.0.3:8091": "healthy, inactiveAdded", "10.0.0.4:8091": "unhealthy, inactiveFailed"}
	if got := cbMembersOf(d.Nodes); !reflect.DeepEqual(got, want) {
		t.Errorf("members = %v, want %v", got, want)
	}
	if _, err := parseCBPools([]byte(`{"pools":[]}`)); err == nil {
		t.Error("GET /pools without implementationVersion: no error")
	}
}

func TestCouchbaseRebalanceProgress(t *testing.T) {
	tests := []struct {
		name, in string
		moving   bool
		why      string
		wantErr  bool
	}{
		{"none", `{"status":"none"}`, false, "", false},
		{"running (the documented example)", `{"status":"running","ns_1@10.143.190.101":{"progress":0.1103515625},"ns_1@10.143.190.103":{"progress":0.3299120234604106}}`,
			true, "rebalance running: ns_1@10.143.190.101 0.11, ns_1@10.143.190.103 0.33", false},
		{"no status", `{}`, false, "", true},
		{"not JSON", `<html>`, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moving, why, err := parseCBRebalance([]byte(tt.in))
			if (err != nil) != tt.wantErr || moving != tt.moving || why != tt.why {
				t.Errorf("got %v %q %v; want %v %q (error %v)", moving, why, err, tt.moving, tt.why, tt.wantErr)
			}
		})
	}
}

// TestExternalCouchbaseMock opens CouchbaseMock, started by the project's
// couchbase engine, as an external Couchbase whose one member is its REST
// port: the version from GET /pools, the member up (the mock lists no
// nodes), nothing moving (no rebalanceProgress, no rebalance), then
// unreachable once the JVM is killed.
func TestExternalCouchbaseMock(t *testing.T) {
	ctx, _, local := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 2}, 3*time.Minute)
	rest, err := strconv.Atoi(local.Options["rest_port"])
	if err != nil {
		t.Fatal(err)
	}
	spec := cluster.ExternalSpec{Database: "couchbase", DSN: local.DSN, Members: []cluster.ExternalMember{{Name: "cb", Host: cluster.Loopback, Port: rest}}}
	ext, c, err := cluster.OpenExternal(ctx, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Down(ctx, c)
	if c.Version != couchbaseMockImpl {
		t.Errorf("version %q, want %q", c.Version, couchbaseMockImpl)
	}
	addr := c.Nodes[0].Addr()
	if m, err := cbRemoteMembers(ctx, c); err != nil || !reflect.DeepEqual(m, map[string]string{addr: "up"}) {
		t.Errorf("members = %v, %v; want %s up", m, err, addr)
	}
	if moving, why, err := ext.Moving(ctx, c); err != nil || moving {
		t.Errorf("moving = %v %q, %v; want nothing moving", moving, why, err)
	}
	if err := cluster.Kill(local.Nodes[0].PID); err != nil {
		t.Fatal(err)
	}
	for _, n := range local.Nodes {
		n.Stopped = true
	}
	if sts, err := ext.Status(ctx, c); err != nil || len(sts) != 1 || sts[0].State != "unreachable" {
		t.Errorf("status after a kill = %+v, %v; want unreachable", sts, err)
	}
	if _, err := cbRemoteMembers(ctx, c); err == nil {
		t.Error("members after a kill: no error")
	}
}
