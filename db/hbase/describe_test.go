package hbase

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the hbase engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "hbase",
		Bogus:   `hbase: unknown option "bogus" (known: heap, rest-heap, rest-client-timeout, balancer-period, rs-hosts)`,
		Remote:  true,
		DSNHint: "dsn: required with database hbase: the adapter's DSN naming the REST gateway (hbase://host:8080): the members are region servers",
	})
}
