package job

import (
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/result"
)

// ClusterInfo describes a cluster fieldbench started, as a result file
// records it (nil for none).
func ClusterInfo(c *cluster.Cluster) *result.ClusterInfo {
	if c == nil {
		return nil
	}
	ci := &result.ClusterInfo{Engine: c.Engine, Version: c.Version, Database: c.Database, Dir: c.Dir, Options: c.Options}
	if !c.Budget.Empty() {
		ci.Budget = c.Budget.String()
	}
	for _, n := range c.Nodes {
		cn := result.ClusterNode{Name: n.Name, Addr: n.Addr(), Role: n.Role, Log: n.LogFile}
		if n.Cgroup != nil {
			cn.Budget = c.Budget.For(n.Name).String()
		}
		ci.Nodes = append(ci.Nodes, cn)
	}
	return ci
}
