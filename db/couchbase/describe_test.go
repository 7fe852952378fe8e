package couchbase

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// couchbaseWhy is why the engine runs on loopback only.
const couchbaseWhy = "CouchbaseMock simulates every node inside one JVM that advertises one address, " +
	"so its nodes cannot be hosts of their own (they differ by port only, and a fault on one host would hit them all); " +
	"and the Couchbase SDK (gocbcore) dials key-value ports with a net.Dialer of its own, at addresses it reads from the bucket's configuration, " +
	"so an experiment's load cannot reach them from a load host. The mock already runs in a network namespace of its own (fbcb-*), " +
	"reached through a forwarder on 127.0.0.1; see docs/network.md"

// TestDescribe pins what the couchbase engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "couchbase",
		NoHosts: "--network hosts: the couchbase engine starts on loopback only: " + couchbaseWhy,
		Bogus:   `couchbase: option bogus="1": the engine's one option is buckets=N (0..32), extra buckets fb1..fbN besides default`,
		Max:     8,
		TooMany: "couchbase: 9 node(s) is more than the 8 this machine can run: CouchbaseMock simulates every node in one JVM: more nodes are more threads of that one process",
		Remote:  true,
		DSNHint: "dsn: required with database couchbase: the adapter's DSN (couchbase://host:kvport/bucket): the members are REST addresses (port 8091)",
	})
}
