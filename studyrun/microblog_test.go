package studyrun

import (
	"math"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/study"
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
	s, err := study.Load("microblog")
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
