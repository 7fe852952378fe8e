package cluster_test

import (
	"slices"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	_ "github.com/fieldbench/fieldbench/db/all" // the engines of the database folders, which package cluster's own tests cannot link
)

// LoopbackEngines and HostsEngines split the registered engines in two,
// each sorted, couchbase (CouchbaseMock: one JVM) on loopback only.
func TestLoopbackEngines(t *testing.T) {
	t.Parallel()
	on, off := cluster.HostsEngines(), cluster.LoopbackEngines()
	if !slices.IsSorted(off) || !slices.Contains(off, "couchbase") || slices.Contains(off, "redis") {
		t.Errorf("LoopbackEngines() = %v, want sorted, couchbase in it, redis not", off)
	}
	both := slices.Sorted(slices.Values(append(slices.Clone(on), off...)))
	if !slices.Equal(both, cluster.Engines()) {
		t.Errorf("HostsEngines() %v and LoopbackEngines() %v are not the registered engines %v, each once", on, off, cluster.Engines())
	}
}
