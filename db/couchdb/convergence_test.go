package couchdb

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/convergence"
	"github.com/fieldbench/fieldbench/convergence/convergencetest"
)

// TestCouchDB measures convergence on two pouchdb-server nodes of the
// test's own, each pulling the other's databases by continuous
// replication: every round's write seen on the other node, and the
// server named in the settings.
func TestCouchDB(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2}, 5*time.Minute)
	res := convergencetest.Measure(t, c, convergence.Options{}, "couchdb (pouchdb-server) 2 nodes, continuous replication both ways")
	if len(res.Nodes) != 2 || res.Settings["server"] == "" {
		t.Errorf("nodes %v, settings %v", res.Nodes, res.Settings)
	}
}
