package cluster

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// TestFitsOneMore: `cluster add` on a cluster with budgets is refused when
// the new node's budget would not fit the machine beside the others'.
func TestFitsOneMore(t *testing.T) {
	t.Parallel()
	m := budget.Machine{CPUs: 2, Memory: 8 << 30}
	nodes := func(n int) []*Node {
		var out []*Node
		for i := range n {
			out = append(out, &Node{Name: Numbered("redis", n)[i]})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		c     *Cluster
		wantS string // "" fits
	}{
		{"no budget", &Cluster{Nodes: nodes(16)}, ""},
		{"room for one more", &Cluster{Nodes: nodes(6), Budget: budget.Plan{Node: budget.Budget{CPU: 0.25}}}, ""},
		{"full", &Cluster{Nodes: nodes(7), Budget: budget.Plan{Node: budget.Budget{CPU: 0.25}}}, "8 node(s) ask 2 CPUs"},
		{"an override counts", &Cluster{Nodes: nodes(3), Budget: budget.Plan{Node: budget.Budget{CPU: 0.25}, Nodes: map[string]budget.Budget{"redis1": {CPU: 1.25}}}}, "4 node(s) ask 2 CPUs"},
	} {
		err := fitsOneMore(c.c, m)
		if c.wantS == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.wantS != "" && (err == nil || !strings.Contains(err.Error(), c.wantS)) {
			t.Errorf("%s: %v; want a refusal saying %q", c.name, err, c.wantS)
		}
	}
}
