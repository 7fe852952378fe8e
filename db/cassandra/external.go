package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// Remote implements Remoter: an external Cassandra is asked over CQL,
// its ring (members) as the first running node sees it, and each node's
// system tables (version, disk use).
func (cassandraEngine) Remote() *cluster.RemoteDB {
	return &cluster.RemoteDB{DSN: func(c *cluster.Cluster) string {
		var hosts []string
		for _, n := range c.Nodes {
			if !cassRemoved(n) {
				hosts = append(hosts, n.Addr())
			}
		}
		return "cassandra://" + strings.Join(hosts, ",") + "/fieldbench"
	}, Version: func(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
		return cassVersion(ctx, n)
	}, Members: cassMembers, Resources: cassResources, Reported: []string{"disk"},
		Source: "system_views.disk_usage of each node: disk = the sum over its tables of their SSTables, each table rounded up to whole MiB (no commit log, hints or snapshots)"}
}

// cassMembers lists the endpoints of the ring as the first running node
// sees it, at that node's client port, "up" for NORMAL.
func cassMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	var errs []error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		view, err := ringView(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out := map[string]string{}
		for a, m := range view {
			st := m.status
			if st == "NORMAL" {
				st = "up"
			}
			out[net.JoinHostPort(a, strconv.Itoa(n.Port))] = st
		}
		return out, nil
	}
	return nil, fmt.Errorf("cassandra: no running node answered: %w", errors.Join(errs...))
}

// cassResources asks every running node for its disk use (cassDiskUsage),
// all at once: a node that does not answer only delays the others by its
// own timeout. Cassandra reports no CPU time or memory through CQL (no
// virtual table of 5.0 has them; nodetool reads them over JMX, which
// fieldbench does not use for nodes it did not start), so those are NaN.
// A node that does not answer has no entry; it is an error only when no
// running node answered.
func cassResources(ctx context.Context, c *cluster.Cluster) (map[string]cluster.NodeResources, error) {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(d), 100*time.Millisecond))
	}
	var running []*cluster.Node
	for _, n := range c.Nodes {
		if n.Running() {
			running = append(running, n)
		}
	}
	disk := make([]float64, len(running))
	errs := make([]error, len(running))
	var wg sync.WaitGroup
	for i, n := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			disk[i], errs[i] = cassDiskUsage(ctx, n, timeout)
		}()
	}
	wg.Wait()
	out := map[string]cluster.NodeResources{}
	for i, n := range running {
		if errs[i] == nil {
			out[n.Name] = cluster.NodeResources{CPUSeconds: math.NaN(), RSSBytes: math.NaN(), DiskBytes: disk[i]}
		}
	}
	if len(out) == 0 && len(running) > 0 {
		return nil, fmt.Errorf("cassandra: no running node reported its disk use: %w", errors.Join(errs...))
	}
	return out, nil
}

// cassDiskUsage is node n's disk use as n itself reports it: the sum of
// the mebibytes column of the node-local virtual table
// system_views.disk_usage (Cassandra 4.0 and later), one row per table of
// every keyspace, system ones included, in bytes. Each row is the table's
// TotalDiskSpaceUsed metric (the bytes of its SSTables, obsolete ones not
// yet deleted included) rounded *up* to whole MiB, so the sum is an upper
// bound, above the bytes by less than 1 MiB per table that has any
// SSTable. Commit log, hints, saved caches and snapshots are not in it.
// A virtual table answers for the node asked only, hence a session to n
// alone (cassNodeSession).
func cassDiskUsage(ctx context.Context, n *cluster.Node, timeout time.Duration) (float64, error) {
	s, err := cassNodeSession(n, timeout)
	if err != nil {
		return 0, fmt.Errorf("%s (%s): %w", n.Name, n.Addr(), err)
	}
	defer s.Close()
	var total, mib int64
	it := s.Query("SELECT mebibytes FROM system_views.disk_usage").IterContext(ctx)
	for it.Scan(&mib) {
		total += mib
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("%s (%s): read system_views.disk_usage: %w", n.Name, n.Addr(), err)
	}
	return float64(total) * (1 << 20), nil
}

// cassVersion asks n for its release_version.
func cassVersion(ctx context.Context, n *cluster.Node) (string, error) {
	s, err := cassNodeSession(n, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var v string
	err = s.Query("SELECT release_version FROM system.local").ScanContext(ctx, &v)
	return v, err
}
