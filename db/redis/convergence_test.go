package redis

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

// TestRedisReplica measures convergence on a Redis Cluster of one master
// and one replica: the prober writes on the master and reads the replica.
func TestRedisReplica(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 1, Extra: map[string]string{"replicas": "1"}}, 2*time.Minute)
	res := convergencetest.Measure(t, c, convergence.Options{}, "redis 1 master+1 replica")
	if len(res.Nodes) != 2 || res.Settings["replicas"] == "" {
		t.Errorf("nodes %v, settings %v", res.Nodes, res.Settings)
	}
}

// A standalone server has no replica to read a write on: convergence's
// Open refuses it (cluster.ErrUnsupported) before dialling anything. It was
// a row of convergence's TestOpenUnsupported while the prober lived
// there.
func TestConvergenceRefusesStandalone(t *testing.T) {
	t.Parallel()
	c := &cluster.Cluster{Engine: Name, Options: map[string]string{"standalone": "true"},
		Nodes: []*cluster.Node{{Name: "redis1", Host: "127.0.0.1", Port: 1}}}
	p, err := convergence.Open(t.Context(), c, convergence.Options{})
	if err == nil {
		p.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("Open: %v, want cluster.ErrUnsupported saying standalone", err)
	}
}
