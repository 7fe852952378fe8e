package redis

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster"
)

// Remote implements Remoter: an external Redis Cluster is asked with
// CLUSTER NODES (members) and INFO (version, resources) of each node.
func (redisEngine) Remote() *cluster.RemoteDB {
	return &cluster.RemoteDB{DSN: redisDSN, Version: func(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
		return redisVersion(ctx, n)
	},
		Members: redisMembers, Resources: redisResources, Reported: []string{"cpu", "rss"},
		Source: "INFO of each node: cpu = used_cpu_sys + used_cpu_user, rss = used_memory_rss"}
}

// redisMembers lists the nodes CLUSTER NODES shows, "up" for those that
// are connected and not failing.
func redisMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	view, err := clusterView(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cn := range view {
		switch {
		case cn.failed(), strings.Contains(cn.flags, "handshake"), strings.Contains(cn.flags, "noaddr"):
			out[cn.addr] = cn.flags
		case !cn.myself() && cn.link != "connected":
			out[cn.addr] = "link " + cn.link
		default:
			out[cn.addr] = "up"
		}
	}
	return out, nil
}

// redisResources reads INFO cpu and memory on every running node: CPU
// time (used_cpu_sys + used_cpu_user) and used_memory_rss.
func redisResources(ctx context.Context, c *cluster.Cluster) (map[string]cluster.NodeResources, error) {
	out := map[string]cluster.NodeResources{}
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := nodeClient(n)
		info, err := cl.Info(ctx, "cpu", "memory").Result()
		cl.Close()
		if err != nil {
			continue // a node that does not answer has no figures
		}
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(infoField(info, k), 64)
			if err != nil {
				return math.NaN()
			}
			return v
		}
		out[n.Name] = cluster.NodeResources{CPUSeconds: num("used_cpu_sys") + num("used_cpu_user"), RSSBytes: num("used_memory_rss"), DiskBytes: math.NaN()}
	}
	return out, nil
}
