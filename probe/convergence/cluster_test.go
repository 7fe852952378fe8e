package convergence

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// These tests start real clusters through the engines, one per engine,
// in parallel, and tear them down whatever happens.

var (
	rounds  = flag.Int("rounds", 30, "rounds per convergence measurement against a real cluster")
	jsonOut = flag.String("convergence.json", "", "append every measured Result as a JSON line to this file")
)

// timeout is generous: a write not seen within it is a failure of the
// database or of this machine, not a slow convergence.
const timeout = 10 * time.Second

// up starts a cluster of engine with nodes and extra options for the test
// alone (clustertest.OwnCluster: it fails, or skips under -short, when the
// servers are missing, and stops the cluster when the test ends).
func up(t *testing.T, engine string, nodes int, extra map[string]string, limit time.Duration) *cluster.Cluster {
	t.Helper()
	_, c := clustertest.OwnCluster(t, engine, cluster.Options{Nodes: nodes, Extra: extra}, limit)
	return c
}

// measure opens a prober on c, runs the rounds and checks the result:
// every round visible on every polled node, times plausible, node names
// the cluster's.
func measure(t *testing.T, c *cluster.Cluster, opts Options, label string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p, err := Open(ctx, c, opts)
	if err != nil {
		t.Fatalf("%s: Open: %v", label, err)
	}
	defer p.Close()
	res, err := Measure(ctx, p, *rounds, time.Millisecond, timeout)
	if err != nil {
		t.Fatalf("%s: Measure: %v", label, err)
	}
	names := map[string]bool{}
	for _, n := range c.Nodes {
		names[n.Name] = true
	}
	for _, n := range p.Nodes() {
		if !names[n] {
			t.Errorf("%s: prober node %q is not in the cluster %v", label, n, c.Nodes)
		}
	}
	if res.WriteErrors != 0 {
		t.Errorf("%s: %d write errors, last: %s", label, res.WriteErrors, res.LastWriteError)
	}
	var writers []string
	for w := range res.Writers {
		if !names[w] {
			t.Errorf("%s: writer %q is not in the cluster", label, w)
		}
		writers = append(writers, w)
	}
	if len(res.PerNode) != len(p.Nodes())-1 {
		t.Errorf("%s: %d polled nodes, want %d (all but the writer %v)", label, len(res.PerNode), len(p.Nodes())-1, writers)
	}
	for _, nr := range res.PerNode {
		if slices.Contains(writers, nr.Node) {
			t.Errorf("%s: the writer %s was polled", label, nr.Node)
		}
		if nr.FromAck.Timeouts != 0 || nr.FromAck.Count != *rounds {
			t.Errorf("%s: %s saw %d of %d rounds (%d timeouts; read errors %d, last %q)",
				label, nr.Node, nr.FromAck.Count, *rounds, nr.FromAck.Timeouts, nr.ReadErrors, nr.LastError)
		}
		for i, d := range nr.Samples {
			if d < 0 || d >= timeout {
				t.Errorf("%s: %s round %d: time to visible %v outside [0, %v)", label, nr.Node, i, d, timeout)
			}
		}
		if nr.FromStart.Min < nr.FromAck.Min {
			t.Errorf("%s: %s: from the write's start (%v) shorter than from its acknowledgement (%v)", label, nr.Node, nr.FromStart.Min, nr.FromAck.Min)
		}
		t.Logf("%s: %s: %s (first read already saw it in %d of %d rounds; %d reads)", label, nr.Node, nr.FromAck, nr.FirstRead, nr.FromAck.Count, nr.Reads)
	}
	if res.Overall.Timeouts != 0 || res.AllVisible.Count != *rounds {
		t.Errorf("%s: overall %s, all visible %s", label, res.Overall, res.AllVisible)
	}
	keys := make([]string, 0, len(res.Settings))
	for k := range res.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var set []string
	for _, k := range keys {
		set = append(set, k+"="+res.Settings[k])
	}
	t.Logf("%s: settings: %s", label, strings.Join(set, "; "))
	t.Logf("%s: write %s", label, res.Write)
	t.Logf("%s: overall %s", label, res.Overall)
	t.Logf("%s: from start %s", label, res.OverallFromStart)
	t.Logf("%s: all visible %s", label, res.AllVisible)
	if *jsonOut != "" {
		b, _ := json.Marshal(struct {
			Label  string `json:"label"`
			Result Result `json:"result"`
		}{label, res})
		f, err := os.OpenFile(*jsonOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return res
}

func TestPostgresReplica(t *testing.T) {
	t.Parallel()
	c := up(t, "postgres", 2, nil, 3*time.Minute)
	res := measure(t, c, Options{}, "postgres primary+1 replica")
	if res.Settings["synchronous_commit"] == "" {
		t.Errorf("settings lack synchronous_commit: %v", res.Settings)
	}
}

func TestRedisReplica(t *testing.T) {
	t.Parallel()
	c := up(t, "redis", 1, map[string]string{"replicas": "1"}, 2*time.Minute)
	res := measure(t, c, Options{}, "redis 1 master+1 replica")
	if len(res.Nodes) != 2 || res.Settings["replicas"] == "" {
		t.Errorf("nodes %v, settings %v", res.Nodes, res.Settings)
	}
}

func TestGalera(t *testing.T) {
	t.Parallel()
	c := up(t, "mariadb", 2, map[string]string{"galera": "true"}, 5*time.Minute)
	res := measure(t, c, Options{}, "galera 2 nodes, server wsrep_sync_wait")
	if _, ok := res.Settings["wsrep_sync_wait"]; !ok {
		t.Errorf("settings lack wsrep_sync_wait: %v", res.Settings)
	}
	one := 1
	res = measure(t, c, Options{MariaDBSyncWait: &one}, "galera 2 nodes, wsrep_sync_wait=1 on reads")
	// Reads that wait for the node to catch up see every write at once.
	for _, nr := range res.PerNode {
		if nr.FirstRead != nr.FromAck.Count {
			t.Errorf("wsrep_sync_wait=1: %s needed more than one read in %d of %d rounds", nr.Node, nr.FromAck.Count-nr.FirstRead, nr.FromAck.Count)
		}
	}
}

func TestCouchDB(t *testing.T) {
	t.Parallel()
	c := up(t, "couchdb", 2, nil, 5*time.Minute)
	res := measure(t, c, Options{}, "couchdb (pouchdb-server) 2 nodes, continuous replication both ways")
	if len(res.Nodes) != 2 || res.Settings["server"] == "" {
		t.Errorf("nodes %v, settings %v", res.Nodes, res.Settings)
	}
}
