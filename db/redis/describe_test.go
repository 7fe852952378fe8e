package redis

import (
	"testing"

	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// TestDescribe pins what the redis engine says of itself before anything
// starts, in the words the user reads (clustertest.Description).
func TestDescribe(t *testing.T) {
	t.Parallel()
	clustertest.CheckDescription(t, clustertest.Description{
		Engine:  "redis",
		Bogus:   `redis: unknown option "bogus" (known: replicas, standalone, node-timeout, appendfsync)`,
		Max:     64,
		TooMany: "redis: 65 node(s) is more than the 64 this machine can run: each Redis server is a process with a client port, a cluster bus port, an append-only file and a log; 64 servers (masters × (1 + replicas)) already outnumber this machine's cores many times over",
		Remote:  true,
	})
}
