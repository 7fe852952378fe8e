package cluster

import (
	"fmt"
	"strconv"
)

// NodeNamer is an engine whose node names can be told before it starts, so
// a scenario naming a node that will never exist is refused before any
// server starts. adds is how many nodes the scenario adds later.
type NodeNamer interface {
	NodeNames(nodes int, extra map[string]string, adds int) []string
}

// Numbered names n nodes prefix1, prefix2... prefixN.
func Numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// KnownNode reports whether a node called name can exist in a cluster of
// engine e started with nodes and extra and grown by adds nodes; engines
// that cannot tell accept every name.
func KnownNode(e Engine, nodes int, extra map[string]string, adds int, name string) error {
	nn, ok := e.(NodeNamer)
	if !ok {
		return nil
	}
	names := nn.NodeNames(nodes, extra, adds)
	for _, n := range names {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("no node %q in this %s cluster (its nodes will be %v)", name, e.Name(), names)
}
