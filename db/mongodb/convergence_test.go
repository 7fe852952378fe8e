package mongodb

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/experiment/convergence"
)

// TestConvergenceInapplicable: convergence.Open refuses a mongodb
// cluster, the engine's or an external one, with the reason this folder
// registers (convergence.go), as cluster.ErrUnsupported, before it dials
// anything; without the registration it would say only that mongodb is
// not among the engines convergence is measured on.
func TestConvergenceInapplicable(t *testing.T) {
	t.Parallel()
	nodes := []*cluster.Node{{Name: "ferretdb1", Host: cluster.Loopback, Port: 1}}
	for _, c := range []*cluster.Cluster{
		{Engine: Name, Nodes: nodes},
		{Engine: cluster.EngineExternal, Database: Name, Nodes: nodes},
	} {
		p, err := convergence.Open(t.Context(), c, convergence.Options{})
		if err == nil {
			p.Close()
			t.Fatalf("%s: Open succeeded", c.Engine)
		}
		if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), "one FerretDB server, which has no replication") {
			t.Errorf("%s: %v; want the registered reason, wrapping cluster.ErrUnsupported", c.Engine, err)
		}
	}
}
