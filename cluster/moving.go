package cluster

import "strings"

// MovingFrom applies why to every node that should be running (nodes
// stopped on purpose or killed are not data movement) and reports whether
// any is moving, and which and why.
func MovingFrom(c *Cluster, sts []NodeStatus, why func(NodeStatus) string) (bool, string) {
	running := map[string]bool{}
	for _, n := range c.Nodes {
		running[n.Name] = n.Running()
	}
	var parts []string
	for _, st := range sts {
		if !running[st.Name] {
			continue
		}
		if w := why(st); w != "" {
			parts = append(parts, st.Name+": "+w)
		}
	}
	return len(parts) > 0, strings.Join(parts, "; ")
}
