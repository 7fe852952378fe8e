// Package convergencetest measures convergence against a real cluster in
// a test, as convergence's own tests do: Measure, with the flags
// -rounds and -convergence.json after the package (docs/convergence.md).
// A database folder's convergence test (db/<name>) starts its cluster with
// clustertest.OwnCluster and hands it here.
package convergencetest

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
	"github.com/fieldbench/fieldbench/convergence"
)

var (
	rounds  = flag.Int("rounds", 30, "rounds per convergence measurement against a real cluster")
	jsonOut = flag.String("convergence.json", "", "append every measured Result as a JSON line to this file")
)

// timeout is generous: a write not seen within it is a failure of the
// database or of this machine, not a slow convergence.
const timeout = 10 * time.Second

// Measure opens a prober on c, runs the rounds (-rounds) and checks the
// result: every round visible on every polled node, times plausible, node
// names the cluster's; with -convergence.json it appends the result to
// that file. It is convergence's own measure, for the probers that
// live in their database's folder (db/<name>/convergence.go), whose
// tests cannot reach that package's test helpers.
func Measure(t testing.TB, c *cluster.Cluster, opts convergence.Options, label string) convergence.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p, err := convergence.Open(ctx, c, opts)
	if err != nil {
		t.Fatalf("%s: Open: %v", label, err)
	}
	defer p.Close()
	res, err := convergence.Measure(ctx, p, *rounds, time.Millisecond, timeout)
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
			Label  string             `json:"label"`
			Result convergence.Result `json:"result"`
		}{label, res})
		f, err := os.OpenFile(*jsonOut, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return res
}
