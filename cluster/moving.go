package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// pgCatchUpBytes is how far behind the primary a streaming replica may be
// and still count as settled: under write load a replica is almost never
// exactly at the primary's LSN, but one still copying a backlog is far
// behind.
const pgCatchUpBytes = 16 << 20

// Moving implements Mover for PostgreSQL: data moves while a replica is not
// yet streaming (still restoring its base backup or reconnecting) or is more
// than pgCatchUpBytes behind.
func (e pgEngine) Moving(ctx context.Context, c *Cluster) (bool, string, error) {
	sts, err := e.Status(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, detail := MovingFrom(c, sts, func(st NodeStatus) string {
		if st.Role == "primary" {
			return ""
		}
		if st.State != "streaming" {
			return "not streaming (" + st.State + ")"
		}
		if lag, _ := strconv.ParseInt(st.Detail["lag_bytes"], 10, 64); lag > pgCatchUpBytes {
			return fmt.Sprintf("%d bytes behind", lag)
		}
		return ""
	})
	return moving, detail, nil
}

// Moving implements Mover for MariaDB: in Galera, data moves while a node is
// joining or donating (state transfer) or not yet synced.
func (e mariaDB) Moving(ctx context.Context, c *Cluster) (bool, string, error) {
	sts, err := e.Status(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, detail := MovingFrom(c, sts, func(st NodeStatus) string {
		if st.Detail["state_transfer"] == "in progress" {
			return "state transfer"
		}
		if st.State != "up" {
			return st.State
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
