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
