package mariadb

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/convergence"
	"github.com/fieldbench/fieldbench/convergence/convergencetest"
)

// TestGaleraConvergence measures convergence on a 2-node Galera cluster,
// with the server's wsrep_sync_wait and then with wsrep_sync_wait=1 on the
// reading sessions (every first read must see the value):
// convergence's TestGalera, moved here with the prober and renamed
// beside the adapter's TestGalera (galera_test.go). Flags after the
// package: go test ./db/mariadb/ -run TestGaleraConvergence -rounds=200.
func TestGaleraConvergence(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2, Extra: map[string]string{"galera": "true"}}, 5*time.Minute)
	res := convergencetest.Measure(t, c, convergence.Options{}, "galera 2 nodes, server wsrep_sync_wait")
	if _, ok := res.Settings["wsrep_sync_wait"]; !ok {
		t.Errorf("settings lack wsrep_sync_wait: %v", res.Settings)
	}
	one := 1
	res = convergencetest.Measure(t, c, convergence.Options{MariaDBSyncWait: &one}, "galera 2 nodes, wsrep_sync_wait=1 on reads")
	// Reads that wait for the node to catch up see every write at once.
	for _, nr := range res.PerNode {
		if nr.FirstRead != nr.FromAck.Count {
			t.Errorf("wsrep_sync_wait=1: %s needed more than one read in %d of %d rounds", nr.Node, nr.FromAck.Count-nr.FirstRead, nr.FromAck.Count)
		}
	}
}

// TestOpenUnsupported: convergence.Open refuses a single MariaDB server
// (no other node to read a write on) as cluster.ErrUnsupported, before it
// dials anything: the row of convergence's TestOpenUnsupported that
// moved here with the prober, which that package's tests no longer link.
func TestOpenUnsupported(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		c    *cluster.Cluster
		want string
	}{
		{"mariadb single server", &cluster.Cluster{Engine: Name, Options: map[string]string{"galera": "false"},
			Nodes: []*cluster.Node{{Name: "node1", Host: "127.0.0.1", Port: 1}}}, "single server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := convergence.Open(t.Context(), tt.c, convergence.Options{})
			if err == nil {
				p.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v: want one saying %q, wrapping cluster.ErrUnsupported", err, tt.want)
			}
		})
	}
}
