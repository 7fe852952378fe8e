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

func Numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// NodeNames: pg1 (the primary), pg2... (replicas).
func (pgEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return Numbered("pg", nodes+adds)
}

// NodeNames: node1, node2...
func (mariaDB) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return Numbered("node", nodes+adds)
}

// NodeNames: redis1... — every master with its replicas (option replicas).
func (redisEngine) NodeNames(nodes int, extra map[string]string, adds int) []string {
	replicas := 0
	if v, ok := extra["replicas"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			replicas = n
		}
	}
	return Numbered("redis", max(nodes, 1)*(1+replicas)+adds)
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

// NodeNames: couch1, couch2...
func (couchEngine) NodeNames(nodes int, _ map[string]string, adds int) []string {
	return Numbered("couch", nodes+adds)
}

// NodeNames: master, rest (the REST gateway, on the master's host), then
// the region server processes: rs1..rsN with the option rs-hosts, and the
// added ones numbered after the --nodes region servers either way (in the
// master, those have no node of their own).
func (hbaseEngine) NodeNames(nodes int, extra map[string]string, adds int) []string {
	first := max(nodes, 1) + 1
	if on, _ := strconv.ParseBool(extra["rs-hosts"]); on {
		first = 1
	}
	names := []string{"master", "rest"}
	for k := first; k < max(nodes, 1)+1+adds; k++ {
		names = append(names, "rs"+strconv.Itoa(k))
	}
	return names
}
