package postgres

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the postgres engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "postgres",
		Max:     16,
		TooMany: "postgres: 17 node(s) is more than the 16 this machine can run: each node is a full PostgreSQL server (shared buffers, WAL sender, a base backup of the primary)",
	})
}
