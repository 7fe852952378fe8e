package postgres

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

// TestPostgresReplicaConvergence measures convergence on a primary and one
// streaming replica: convergence's TestPostgresReplica, moved here
// with the prober and renamed beside the engine's TestPostgresReplica
// (engine_test.go). Flags after the package: go test ./db/postgres/ -run
// TestPostgresReplicaConvergence -rounds=200.
func TestPostgresReplicaConvergence(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2}, 3*time.Minute)
	res := convergencetest.Measure(t, c, convergence.Options{}, "postgres primary+1 replica")
	if res.Settings["synchronous_commit"] == "" {
		t.Errorf("settings lack synchronous_commit: %v", res.Settings)
	}
}

// TestOpenUnsupported: convergence.Open refuses a PostgreSQL cluster whose
// replica is stopped (no other node to read a write on) as
// cluster.ErrUnsupported, before it dials anything: the row of
// convergence's TestOpenUnsupported that moved here with the
// prober, which that package's tests no longer link.
func TestOpenUnsupported(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		nodes []*cluster.Node
		want  string
	}{
		{"postgres primary alone", []*cluster.Node{{Name: "pg1", Host: "127.0.0.1", Port: 1}, {Name: "pg2", Stopped: true}}, "1 running node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := convergence.Open(t.Context(), &cluster.Cluster{Engine: Name, Nodes: tt.nodes}, convergence.Options{})
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
