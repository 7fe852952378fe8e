package cluster

import (
	"context"
	"strings"
)

// Moving implements Mover for Redis Cluster: data moves while any slot is
// migrating or importing (a rebalance after add-node), or the cluster state
// is not ok.
func (e redisEngine) Moving(ctx context.Context, c *Cluster) (bool, string, error) {
	sts, err := e.Status(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, detail := MovingFrom(c, sts, func(st NodeStatus) string {
		if m := st.Detail["migrating"]; m != "" && m != "0" {
			return m + " slots migrating"
		}
		if s := st.Detail["cluster_state"]; s != "" && s != "ok" {
			return "cluster_state " + s
		}
		return ""
	})
	return moving, detail, nil
}

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
