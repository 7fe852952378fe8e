package all

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
)

// TestConvergenceInapplicable: convergence.Open refuses a cluster of each
// database whose engine runs one server, the engine's or an external one,
// with the reason its folder registers (its convergence.go), as
// cluster.ErrUnsupported, before it dials anything; without the
// registration it would say only that the database is not among those
// convergence is measured on. One table here, where every folder is
// linked, rather than a copy of the test in each folder.
func TestConvergenceInapplicable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ db, node, why string }{
		{"mongodb", "ferretdb1", "one FerretDB server, which has no replication"},
		{"rethinkdb", "reqlite1", "one reqlite server, which has no replication"},
	} {
		nodes := []*cluster.Node{{Name: tc.node, Host: cluster.Loopback, Port: 1}}
		for _, c := range []*cluster.Cluster{
			{Engine: tc.db, Nodes: nodes},
			{Engine: cluster.EngineExternal, Database: tc.db, Nodes: nodes},
		} {
			p, err := convergence.Open(t.Context(), c, convergence.Options{})
			if err == nil {
				p.Close()
				t.Fatalf("%s (engine %s): Open succeeded", tc.db, c.Engine)
			}
			if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("%s (engine %s): %v; want the registered reason, wrapping cluster.ErrUnsupported", tc.db, c.Engine, err)
			}
		}
	}
}
