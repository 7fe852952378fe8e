package mariadb

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the mariadb engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "mariadb",
		Bogus:   `mariadb: unknown option "bogus" (known: galera)`,
		Max:     9,
		TooMany: "mariadb: 10 node(s) is more than the 9 this machine can run: each node is a full MariaDB server (buffer pool, and in Galera a full state transfer to join)",
	})
}
