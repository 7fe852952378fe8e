package mongodb

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the mongodb engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine: "mongodb",
		Bogus:  `mongodb: unknown option "bogus" (known: log-level)`,
		Remote: true,
	})
}
