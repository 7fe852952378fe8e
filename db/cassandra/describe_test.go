package cassandra

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the cassandra engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "cassandra",
		Bogus:   `cassandra: unknown option "bogus" (known: version, heap, rf (a number or nodes), consistency, replicas, request_timeout, dcs)`,
		Max:     8,
		TooMany: "cassandra: 9 node(s) is more than the 8 this machine can run: each node is a JVM with its own heap (512 MB by default, about 1 GB resident), and nodes join one at a time (about a minute each)",
		Remote:  true,
	})
}
