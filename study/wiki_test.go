package study

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/result"
)

// wikiRun writes a wiki result file as an elasticity-then-scalability
// scenario would: step 1 on 2 nodes with request sets every 10 s, a join
// of 2 nodes at 102 s, data settled at 128 s, sets every 5 s on 4 nodes;
// step 2 on 4 nodes. RF 2 at ONE, as the scaled scenarios run.
func wikiRun(t *testing.T) *result.Run {
	t.Helper()
	dir := t.TempDir()
	w, err := result.Create(dir, result.Header{
		Version: "test", Workload: "wiki", Adapter: "cassandra", Operations: []string{"read"},
		Database: adapterInfo("Apache Cassandra", "4.1.5"),
		Started:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Machine:  result.Machine{Cores: 2},
		Options:  map[string]any{"requests": 2000, "articles": 20000},
		Cluster:  &result.ClusterInfo{Engine: "cassandra", Nodes: []result.ClusterNode{{Name: "c1"}, {Name: "c2"}}, Options: map[string]string{"rf": "2", "consistency": "ONE"}},
		Series:   map[string]result.SeriesMeta{score.SeriesRequestSet: {Title: "request sets", XIsTime: true, Band: "sd"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := result.NewHist()
	if err := h.RecordValues(1000, 2); err != nil {
		t.Fatal(err)
	}
	enc, err := result.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 225; s++ {
		iv := result.Interval{Start: float64(s), End: float64(s + 1), Warmup: s < 5, Ops: map[string]result.OpInterval{"read": {Count: 2, Hist: enc}}}
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	set := 0
	point := func(x, y float64, step, nodes string, warm bool) {
		set++
		p := result.Point{Series: score.SeriesRequestSet, X: x, Y: y, SD: 0.5, N: 10, Warmup: warm,
			Labels: map[string]string{score.LabelSet: strconv.Itoa(set), score.LabelStep: step, score.LabelNodes: nodes}}
		if err := w.Point(p); err != nil {
			t.Fatal(err)
		}
	}
	point(5, 50, "1", "2", true)
	for x := 10.0; x <= 100; x += 10 {
		point(x, 10+0.01*x, "1", "2", false)
	}
	if err := w.Event(result.Event{At: 102, Name: score.EventJoin, Detail: "+2 nodes"}); err != nil {
		t.Fatal(err)
	}
	for x := 105.0; x <= 160; x += 5 {
		if x == 130 {
			if err := w.Event(result.Event{At: 128, Name: score.EventSettled}); err != nil {
				t.Fatal(err)
			}
		}
		point(x, 10+0.01*x, "1", "4", false)
	}
	point(195, 40, "2", "4", true)
	for x := 200.0; x <= 220; x += 5 {
		point(x, 11.6, "2", "4", false)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWikiMeasures: the wiki reader recomputes the join's figures and the
// steps' with analysis/score, and the report sets the 2 → 4 doubling
// beside the paper's 6 → 12 with the differences named. The stable moment
// depends on the detector (not pinned here); the data transfer does not.
func TestWikiMeasures(t *testing.T) {
	ms := measures(wikiRun(t), Step{Name: "elasticity-cassandra", For: "cassandra"})
	got := map[string]Measure{}
	for _, m := range ms {
		got[m.Metric+"/"+strconv.Itoa(m.Nodes)] = m
	}
	dt, ok := got["data_transfer_time/2"]
	if !ok || math.Abs(dt.Value-26) > 1e-9 || dt.NodesAfter != 4 || dt.StandIn {
		t.Fatalf("data transfer %+v (have %v)", dt, keys(got))
	}
	for _, k := range []string{"elasticity_score/2", "request_set_time/2", "request_set_time/4", "scalability_score/2"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s measure (have %v)", k, keys(got))
		}
	}
	// The request-set size and the dataset's, which a ranking needs equal.
	if r := got["request_set_time/2"]; r.Requests != 2000 || r.Size != "20,000 articles" {
		t.Errorf("request sets of %d requests on %q, want 2000 on 20,000 articles", r.Requests, r.Size)
	}
	s, err := Load("wiki")
	if err != nil {
		t.Fatal(err)
	}
	rows := Match(s, ms, map[string]bool{"cassandra": true}, nil)
	for _, r := range rows {
		if r.Value.ID != "wiki.t1.cassandra.6-12.transfer" {
			continue
		}
		if math.Abs(r.Measured-26.0/60) > 1e-9 || math.Abs(r.Ratio-26.0/60/113) > 1e-9 || r.Comparable {
			t.Errorf("transfer row: %v min, ratio %v, comparable %v", r.Measured, r.Ratio, r.Comparable)
		}
		why := strings.Join(r.Reasons, "; ")
		for _, want := range []string{"2 → 4 nodes here, 6 → 12", "replication factor 2 here, 3", "consistency ONE here, QUORUM", "2 cores"} {
			if !strings.Contains(why, want) {
				t.Errorf("transfer row's reasons %q lack %q", why, want)
			}
		}
		return
	}
	t.Error("no row for wiki.t1.cassandra.6-12.transfer")
}

func keys(m map[string]Measure) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func adapterInfo(name, version string) adapter.Info {
	return adapter.Info{Name: name, Version: version}
}

// TestAcrossRuns: a stepped scenario's runs (one per node count) give the
// scalability score of each consecutive pair, from the last step of one
// run to the first of the next; a run alone gives none. A score rests on
// both runs: the machine bound it when it bound either run.
func TestAcrossRuns(t *testing.T) {
	b := Measure{Database: "cassandra", SD: math.NaN(), Step: "scalability-cassandra", Bound: BoundBudget}
	machine := b
	machine.Bound = BoundMachine
	bases := []Measure{b, machine, b}
	runs := [][]score.Step{
		{{Nodes: "1", Avg: 2.0}},
		{{Nodes: "2", Avg: 1.5}},
		{{Nodes: "4", Avg: 3.0}},
	}
	got := acrossRuns(bases, runs)
	if len(got) != 2 {
		t.Fatalf("%d measures, want 2: %+v", len(got), got)
	}
	for i, want := range []struct {
		from, to int
		score    float64
		bound    string
	}{{1, 2, score.Scalability(2.0, 1.5), BoundMachine}, {2, 4, score.Scalability(1.5, 3.0), BoundMachine}} {
		m := got[i]
		if m.Metric != "scalability_score" || m.Nodes != want.from || m.NodesAfter != want.to || math.Abs(m.Value-want.score) > 1e-12 || m.Bound != want.bound {
			t.Errorf("transition %d: %+v, want %d → %d score %v", i, m, want.from, want.to, want.score)
		}
	}
	if got := acrossRuns([]Measure{b, b}, runs[1:]); len(got) != 1 || got[0].Bound != BoundBudget {
		t.Errorf("two budget-bound runs: %+v, want one score bound by the budgets", got)
	}
	if len(acrossRuns(bases[:1], runs[:1])) != 0 {
		t.Error("one run gave a transition")
	}
}
