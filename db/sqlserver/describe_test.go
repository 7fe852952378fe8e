package sqlserver

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the sqlserver engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine: "sqlserver",
		Bogus:  `sqlserver: unknown option "bogus" (known: storage)`,
		Remote: true,
	})
}
