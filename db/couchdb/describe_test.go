package couchdb

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the couchdb engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "couchdb",
		Bogus:   `couchdb: unknown option "bogus" (the engine has none)`,
		Max:     8,
		TooMany: "couchdb: 9 node(s) is more than the 8 this machine can run: each node is a Node.js pouchdb-server process (about 100 MB resident) that replicates every database from every other node, so replication work grows with the square of the nodes",
		Remote:  true,
	})
}
