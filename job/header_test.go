package job

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
)

type fakeAdapter struct{ adapter.Adapter }

func (fakeAdapter) Name() string { return "mariadb" }

// The header is what a result file and a report show: a DSN password must
// never reach it, and a cluster started for the run must be described.
func TestHeaderRedactsAndDescribesCluster(t *testing.T) {
	cl := &cluster.Cluster{Engine: "mariadb", Version: "10.11", Dir: "/tmp/c",
		Nodes:   []*cluster.Node{{Name: "node1", Host: "127.0.0.1", Port: 3307, Role: "primary", LogFile: "/tmp/c/node1/log"}},
		Options: map[string]string{"innodb_buffer_pool_size": "128M"}}
	env := &Env{Cluster: ClusterInfo(cl)}
	h := newHeader(env, "wiki", fakeAdapter{}, adapter.Info{Name: "mariadb"}, "mariadb://fieldbench:s3cretpw@127.0.0.1:3307/fieldbench", 1, nil)
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cretpw") {
		t.Fatalf("password in the header: %s", b)
	}
	if h.Cluster == nil || h.Cluster.Engine != "mariadb" || len(h.Cluster.Nodes) != 1 || h.Cluster.Nodes[0].Addr != "127.0.0.1:3307" || h.Cluster.Options["innodb_buffer_pool_size"] != "128M" {
		t.Fatalf("cluster not described: %+v", h.Cluster)
	}
}
