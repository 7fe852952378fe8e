package study

import (
	"math"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestMicroblogMeasures: the microblog reader takes the experiment's
// summary figures (formation, populate, ownership, convergence) and, in a
// run with a kill, the failed operations; the report sets them beside the
// paper's in its units.
func TestMicroblogMeasures(t *testing.T) {
	nodes := make([]result.ClusterNode, 6)
	r := &result.Run{
		Header: result.Header{Workload: "microblog", Adapter: "cassandra", Database: adapterInfo("Apache Cassandra", "5.0.9"),
			Machine: result.Machine{Cores: 2},
			Cluster: &result.ClusterInfo{Engine: "cassandra", Nodes: nodes, Options: map[string]string{"rf": "3", "consistency": "ONE"}}},
		Events: []result.Event{{At: 100, Name: "kill", Detail: "cass5"}},
		Summary: &result.Summary{
			Ops: map[string]result.OpSummary{"post": {Errors: map[string]int64{"timeout": 400, "unavailable": 109}}, "timeline": {}},
			Extra: map[string]float64{"cluster_formation_seconds": 90, "populate_seconds": 13, "ownership_mean_pct": 16.65, "ownership_sd_pct": 3.3,
				"convergence_mean_ms": 14, "convergence_sd_ms": 2, "audit_acknowledged": 12207, "audit_lost": 0},
		},
	}
	ms := measures(r, Step{Name: "crash", For: "cassandra"})
	s, err := Load("microblog")
	if err != nil {
		t.Fatal(err)
	}
	rows := Match(s, ms, map[string]bool{"cassandra": true}, nil)
	want := map[string]struct {
		measured float64
		reason   string
	}{
		"microblog.setup.cassandra.formation": {1.5, "share this machine's 2 cores"},
		"microblog.convergence.cassandra":     {0.014, "replication factor 3 here, 4"},
		"microblog.crash.cassandra.errors":    {509, "audit: 12,207 acknowledged posts, 0 lost"},
		"microblog.ownership.cassandra":       {16.65, "replication factor 3 here, 4"},
	}
	seen := 0
	for _, row := range rows {
		w, ok := want[row.Value.ID]
		if !ok {
			continue
		}
		seen++
		if math.Abs(row.Measured-w.measured) > 1e-9 {
			t.Errorf("%s: measured %v, want %v", row.Value.ID, row.Measured, w.measured)
		}
		if all := strings.Join(row.Reasons, "; ") + " " + row.How; !strings.Contains(all, w.reason) {
			t.Errorf("%s: %q lacks %q", row.Value.ID, all, w.reason)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d values found in the study file", seen, len(want))
	}
}

// TestAlignedMethodsInMeasures: what a result records of the aligned
// methods reaches the measures: the replication factor of a cluster run
// with rf: nodes (the adapter's own record, else the node count), and the
// caveat of a normalized run whose bodies were not read separately.
func TestAlignedMethodsInMeasures(t *testing.T) {
	tests := []struct {
		name       string
		clusterRF  string
		adapterRF  string
		nodes      int
		options    map[string]any
		wantRF     int
		wantCaveat bool
	}{
		{"rf nodes, adapter's record", "nodes", "3", 3, nil, 3, false},
		{"rf nodes, no adapter record", "nodes", "", 2, nil, 2, false},
		{"rf number", "2", "2", 4, nil, 2, false},
		{"normalized, one request", "3", "3", 3, map[string]any{"model": "normalized"}, 3, true},
		{"normalized, separate reads", "3", "3", 3, map[string]any{"model": "normalized", "timeline_reads": "separate"}, 3, false},
		{"denormalized", "3", "3", 3, map[string]any{"model": "denormalized"}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := adapterInfo("Apache Cassandra", "5.0.9")
			info.Config = map[string]string{}
			if tt.adapterRF != "" {
				info.Config["rf"] = tt.adapterRF
			}
			r := &result.Run{
				Header: result.Header{Workload: "microblog", Adapter: "cassandra", Database: info, Options: tt.options,
					Cluster: &result.ClusterInfo{Engine: "cassandra", Nodes: make([]result.ClusterNode, tt.nodes), Options: map[string]string{"rf": tt.clusterRF, "consistency": "QUORUM"}}},
				Summary: &result.Summary{Extra: map[string]float64{"populate_seconds": 13}},
			}
			ms := measures(r, Step{Name: "steady", For: "cassandra"})
			if len(ms) != 1 {
				t.Fatalf("%d measures, want 1", len(ms))
			}
			if ms[0].RF != tt.wantRF {
				t.Errorf("RF %d, want %d", ms[0].RF, tt.wantRF)
			}
			if got := strings.Contains(ms[0].Caveat, "50 separate reads"); got != tt.wantCaveat {
				t.Errorf("caveat %q, want one about separate reads: %v", ms[0].Caveat, tt.wantCaveat)
			}
		})
	}
}

// TestMicroblogSteadyJoinConvergence: a steady run (no crash, no join)
// gives each operation's mean latency with the SD of its one-second means
// (an operation that never succeeded is a failed measure, with its
// errors) and, on budgets, the nodes' idle share of their budgets; a
// join run the time from the join until the data settled, 4 → 6 nodes,
// and its ownership of the 6 nodes at its end; a
// convergence run (its own workload name) its convergence time.
func TestMicroblogSteadyJoinConvergence(t *testing.T) {
	hist := func(us ...int64) string {
		h := result.NewHist()
		for _, v := range us {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	header := func(workload string, nodes int) result.Header {
		return result.Header{Workload: workload, Adapter: "cassandra", Database: adapterInfo("Apache Cassandra", "5.0.9"), Machine: result.Machine{Cores: 2},
			Cluster: &result.ClusterInfo{Engine: "cassandra", Nodes: make([]result.ClusterNode, nodes), Options: map[string]string{"rf": "3", "consistency": "ONE"}}}
	}
	steady := &result.Run{
		Header: header("microblog", 3),
		Intervals: []result.Interval{
			{Warmup: true, Ops: map[string]result.OpInterval{"timeline": {Count: 1, Hist: hist(900_000)}}},
			{Ops: map[string]result.OpInterval{"timeline": {Count: 2, Hist: hist(10_000, 30_000)}}},
			{Ops: map[string]result.OpInterval{"timeline": {Count: 1, Hist: hist(40_000)}}},
		},
		Points: []result.Point{{Series: "node-budget-cpu", Y: 90}, {Series: "node-budget-cpu", Y: 70}, {Series: "node-budget-cpu", Y: 104}},
		Summary: &result.Summary{Ops: map[string]result.OpSummary{
			"timeline": {Count: 3, MeanUS: 26_667},
			"userline": {Errors: map[string]int64{"timeout": 7}},
		}},
	}
	join := &result.Run{
		Header:  header("microblog", 4),
		Events:  []result.Event{{At: 30, Name: "join"}, {At: 228, Name: "node-added"}, {At: 360.8, Name: "node-added"}, {At: 360.8, Name: "joined"}, {At: 367.5, Name: "data-settled"}},
		Summary: &result.Summary{Ops: map[string]result.OpSummary{"timeline": {Count: 9, MeanUS: 1000}}, Extra: map[string]float64{"ownership_mean_pct": 16.65}},
	}
	conv := &result.Run{Header: header("convergence", 4), Summary: &result.Summary{Extra: map[string]float64{"convergence_mean_ms": 64, "convergence_sd_ms": 38}}}
	got := map[string]Measure{}
	for _, r := range []*result.Run{steady, join, conv} {
		for _, m := range measures(r, Step{Name: "s", For: "cassandra"}) {
			got[m.Metric+"/"+m.Operation] = m
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-3 }
	if m := got["latency/timeline"]; !near(m.Value, 26.667) || m.N != 2 || math.Abs(m.SD-math.Sqrt(200)) > 0.05 {
		t.Errorf("timeline latency %+v, want 26.667 ms, SD of the two measured seconds' means (20 and 40 ms), N 2", m)
	}
	if m := got["latency/userline"]; !strings.Contains(m.Failed, "every userline failed (7 errors") {
		t.Errorf("userline latency %+v, want a failed measure naming its 7 errors", m)
	}
	if m := got["cpu_idle/"]; !near(m.Value, (10+30+0)/3.0) || m.N != 3 {
		t.Errorf("cpu idle %+v, want the mean of 10, 30 and 0 %% (a sample over the budget idles nothing)", m)
	}
	if m, ok := got["join_time/"]; !ok || !near(m.Value, 337.5) || m.Nodes != 4 || m.NodesAfter != 6 {
		t.Errorf("join time %+v, want 337.5 s from the join to the data settled, 4 → 6 nodes", m)
	}
	if m := got["ownership/"]; m.Nodes != 6 {
		t.Errorf("ownership after the join %+v, want it of the 6 nodes at the run's end", m)
	}
	if _, ok := got["latency/timeline"]; ok && got["latency/timeline"].Nodes != 3 {
		t.Errorf("the join run's latency was taken as steady")
	}
	if m := got["convergence_time/"]; !near(m.Value, 0.064) || !near(m.SD, 0.038) {
		t.Errorf("convergence %+v, want 0.064 s ± 0.038 from the convergence run", m)
	}

	// Beside the paper's join time: on budgets, an absolute figure is one
	// of nodes of the budget's size, not of shared cores.
	join.Header.Cluster.Budget = "cpu=0.25,memory=1.5GiB each"
	s, err := Load("microblog")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range Match(s, measures(join, Step{Name: "join", For: "cassandra"}), map[string]bool{"cassandra": true}, nil) {
		if row.Value.ID != "microblog.join.cassandra" {
			continue
		}
		reasons := strings.Join(row.Reasons, "; ")
		if !near(row.Measured, 337.5/60) || !strings.Contains(reasons, "each node a budget of cpu=0.25,memory=1.5GiB of this machine's 2 cores") || strings.Contains(reasons, "share this machine's") {
			t.Errorf("microblog.join.cassandra: measured %v min, reasons %q; want 5.625 min, on nodes of the budget's size", row.Measured, reasons)
		}
		return
	}
	t.Error("microblog.join.cassandra not in the study file")
}
