package rethinkdb

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the rethinkdb engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine: "rethinkdb",
		Bogus:  `rethinkdb: unknown option "bogus" (the engine has none)`,
		Remote: true,
	})
}
