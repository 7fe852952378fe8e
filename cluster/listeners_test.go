package cluster

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// listeners returns the local addresses (hex, as /proc/net/tcp* writes
// them) of sockets listening on port. It was couchdb_test.go's, which
// moved to db/couchdb (asking clustertest.ListenAddrs there); it stays
// for couchbase_test.go, the one test of the package left using it, and
// goes when that test moves to its database folder too.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[3] != "0A" { // 0A = LISTEN
				continue
			}
			if strings.HasSuffix(fs[1], fmt.Sprintf(":%04X", port)) {
				out = append(out, fs[1])
			}
		}
	}
	return out
}
