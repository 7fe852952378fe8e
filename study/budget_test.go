package study

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// boundRun is a trajectory run on nodes with the given budget, its
// budget-bound event's detail and its budget_* summary figures ("" and
// nil: none recorded).
func boundRun(nodes int, budget, detail string, extra map[string]float64) (result.Header, []result.Event, map[string]float64) {
	h := result.Header{
		Version: "test", Workload: "trajectory", Adapter: "cassandra", Database: adapterInfo("Apache Cassandra", "5.0.9"),
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Machine: result.Machine{Cores: 2},
		Options: map[string]any{"scale": 0.01},
		Cluster: &result.ClusterInfo{Engine: "cassandra", Budget: budget},
	}
	for i := 1; i <= nodes; i++ {
		h.Cluster.Nodes = append(h.Cluster.Nodes, result.ClusterNode{Name: "cass" + string(rune('0'+i))})
	}
	var ev []result.Event
	if detail != "" {
		ev = append(ev, result.Event{At: 30, Name: "budget-bound", Detail: detail})
	}
	x := map[string]float64{"sequential_write_records_per_sec": 1000 * float64(nodes)}
	for k, v := range extra {
		x[k] = v
	}
	return h, ev, x
}

// TestBoundOf: what a run records of its budgets reaches the run's bound
// and every measure of it: the summary's budget_machine_bound decides, the
// event's first word when the figures are missing, a budgeted run with
// neither has no verdict, and a run without budgets none at all.
func TestBoundOf(t *testing.T) {
	const machineLine = "machine: it ran out of CPU first (machine 4 % idle, 0.0 % stolen, under 10 %): the shape is the machine's"
	for _, tc := range []struct {
		name, budget, detail string
		extra                map[string]float64
		want                 string
		str                  []string
	}{
		{"no budget", "", "", nil, "", []string{": no budget"}},
		{"the machine ran out first", "cpu=0.5 each", machineLine,
			map[string]float64{"budget_machine_bound": 1, "budget_nodes_bound": 2, "budget_machine_idle_pct": 4, "budget_cass1_throttled_pct": 40},
			BoundMachine, []string{"the machine ran out first (4 % idle)"}},
		{"bound by the budgets", "cpu=0.5 each", "budget: cass1, cass2 held back by its budget",
			map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 2, "budget_machine_idle_pct": 35, "budget_cass1_throttled_pct": 62, "budget_cass2_throttled_pct": 55},
			BoundBudget, []string{"bound by the budgets (2 node(s) held back; throttled cass1 62 %, cass2 55 %)"}},
		{"neither", "cpu=0.5 each", "neither: no node held back by its budget",
			map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 0, "budget_machine_idle_pct": 60},
			BoundNeither, []string{"neither"}},
		{"the event alone", "cpu=0.5 each", machineLine, nil, BoundMachine, []string{"the machine ran out first"}},
		{"the figures alone", "cpu=0.5 each", "", map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 1}, BoundBudget, nil},
		{"budgets, no verdict", "cpu=0.5 each", "", nil, BoundUnknown, []string{"no verdict recorded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ev, x := boundRun(2, tc.budget, tc.detail, tc.extra)
			r := &result.Run{Dir: "/r/run-1", Header: h, Events: ev, Summary: &result.Summary{Extra: x}}
			b := boundOf(r)
			if b.Bound != tc.want || b.Budget != tc.budget {
				t.Errorf("bound %q budget %q, want %q and %q", b.Bound, b.Budget, tc.want, tc.budget)
			}
			for _, w := range tc.str {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%q lacks %q", b.String(), w)
				}
			}
			ms := measures(r, Step{Name: "cassandra", For: "cassandra"})
			if len(ms) == 0 {
				t.Fatal("no measure")
			}
			for _, m := range ms {
				if m.Bound != tc.want || m.Budget != tc.budget {
					t.Errorf("measure %s: bound %q budget %q, want %q and %q", m.How, m.Bound, m.Budget, tc.want, tc.budget)
				}
			}
		})
	}
	// A budget set per node only is the run's budget too.
	h, _, _ := boundRun(2, "", "", nil)
	h.Cluster.Nodes[1].Budget = "cpu=0.25"
	if b := boundOf(&result.Run{Header: h}); b.Budget != "cass2: cpu=0.25" || b.Bound != BoundUnknown {
		t.Errorf("per-node budget: %+v", b)
	}
}

// TestBudgetVerdicts: a measure from a run where the machine ran out first
// makes the claim resting on it not judged, with the reason and what the
// measures alone give; a budget-bound (or neither) run leaves it judged;
// without budgets, a claim about how a figure changes with node count is
// not judged (the nodes shared the machine's cores) while a single-scale
// comparison is.
func TestBudgetVerdicts(t *testing.T) {
	ingest := &Study{Name: "ingest", Workload: "ingest"}
	rank := Claim{ID: "ingest.claim.r", About: "throughput", Databases: []string{"a", "b"}, Ranks: []string{"a", "b"}}
	sweep := func(db, bound string, y float64) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Database: db, Server: db + " 1", Nodes: 1, Load: 10000, Value: y, Lo: y - 5, Hi: y + 5, N: 10, SD: math.NaN(),
			Step: "sweep-" + db, Dir: "/r/sweep-" + db + "/run-1", Bound: bound}
	}
	wiki, err := Load("wiki")
	if err != nil {
		t.Fatal(err)
	}
	// A node-count claim: the elasticity of the doubling standing for 6 → 12.
	elastic := Claim{ID: "wiki.claim.e", About: "elasticity_score", Per: "transition", At: []int{6}, Databases: []string{"hbase", "cassandra"}, Ranks: []string{"hbase", "cassandra"}}
	es := func(db, bound string, y float64) Measure {
		return Measure{Metric: "elasticity_score", Database: db, Server: db + " 1", Nodes: 2, NodesAfter: 4, Value: y, Lo: y - 10, Hi: y + 10, N: 5, SD: math.NaN(),
			Step: "elasticity-" + db, Dir: "/r/elasticity-" + db + "/run-1", Bound: bound}
	}
	ran := map[string]bool{"a": true, "b": true, "hbase": true, "cassandra": true}
	for _, tc := range []struct {
		name  string
		s     *Study
		c     Claim
		ms    []Measure
		want  Verdict
		why   []string
		avoid []string
	}{
		{"single scale, budget-bound: judged", ingest, rank, []Measure{sweep("a", BoundBudget, 100), sweep("b", BoundBudget, 50)},
			Held, []string{"a above b"}, []string{"machine"}},
		{"single scale, no budget: judged", ingest, rank, []Measure{sweep("a", "", 100), sweep("b", "", 50)},
			Held, []string{"a above b"}, []string{"without budgets"}},
		{"single scale, the machine ran out first: not judged", ingest, rank, []Measure{sweep("a", BoundMachine, 100), sweep("b", BoundBudget, 50)},
			NotJudged, []string{"the machine ran out of CPU first in sweep-a (run-1): the figures there are the machine's", "the measures alone give: held (at 1 node(s)"}, []string{"sweep-b"}},
		{"node count, budget-bound: judged", wiki, elastic, []Measure{es("hbase", BoundBudget, 100), es("cassandra", BoundBudget, 300)},
			Held, []string{"hbase above cassandra"}, []string{"machine", "without budgets"}},
		{"node count, neither: judged", wiki, elastic, []Measure{es("hbase", BoundNeither, 100), es("cassandra", BoundBudget, 300)},
			Held, []string{"hbase above cassandra"}, nil},
		{"node count, the machine ran out first: not judged", wiki, elastic, []Measure{es("hbase", BoundBudget, 100), es("cassandra", BoundMachine, 300)},
			NotJudged, []string{"the machine ran out of CPU first in elasticity-cassandra (run-1)", "the measures alone give: held"}, nil},
		{"node count, no budget: not judged", wiki, elastic, []Measure{es("hbase", "", 100), es("cassandra", "", 300)},
			NotJudged, []string{"nodes shared the machine's cores without budgets (elasticity-hbase (run-1), elasticity-cassandra (run-1)): how the figure changes with node count is the shared machine's here"}, nil},
		{"node count, budgets without a verdict: not judged", wiki, elastic, []Measure{es("hbase", BoundUnknown, 100), es("cassandra", BoundBudget, 300)},
			NotJudged, []string{"what bound the nodes was not recorded (elasticity-hbase (run-1))"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Study{Name: tc.s.Name, Workload: tc.s.Workload, Values: tc.s.Values, Databases: tc.s.Databases, Claims: []Claim{tc.c}}
			rows := Claims(s, tc.ms, ran)
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			if rows[0].Verdict != tc.want {
				t.Errorf("verdict %q, want %q (%s)", rows[0].Verdict, tc.want, rows[0].Reason)
			}
			for _, w := range tc.why {
				if !strings.Contains(rows[0].Reason, w) {
					t.Errorf("reason %q lacks %q", rows[0].Reason, w)
				}
			}
			for _, w := range tc.avoid {
				if strings.Contains(rows[0].Reason, w) {
					t.Errorf("reason %q has %q", rows[0].Reason, w)
				}
			}
		})
	}
}

// TestNodeCountClaims: which published claims are about how a figure
// changes with node count (not judged without budgets), and which compare
// databases at one scale (judged without them).
func TestNodeCountClaims(t *testing.T) {
	for id, want := range map[string]bool{
		"trajectory.claim.write-throughput":     true, // PostgreSQL first on 1 node, Cassandra on 4
		"trajectory.claim.write-scaling":        true,
		"trajectory.claim.read-scaling":         true,
		"trajectory.claim.write-latency":        false, // a ranking at each node count
		"trajectory.claim.read-throughput":      false,
		"wiki.claim.most-elastic":               true,
		"wiki.claim.scalability-6-12":           true,
		"wiki.claim.no-best-at-all-scales":      true,
		"wiki.claim.performance-6-12":           false, // a ranking at 6 and at 12 nodes
		"wiki.claim.performance-24":             false,
		"ingest.claim.ranking":                  false,
		"ingest.claim.single-node-nosql-faster": true,
		"microblog.claim.crash-no-errors":       false,
	} {
		name, _, _ := strings.Cut(id, ".")
		s, c := claimOf(t, name, id)
		if got := nodeCountClaim(s, c); got != want {
			t.Errorf("%s: node-count claim %v, want %v", id, got, want)
		}
	}
}

// writeStep writes one complete experiment of a step: its runs' result
// files and the report.html that marks it concluded.
func writeStep(t *testing.T, results, step string, runs ...func(dir string)) {
	t.Helper()
	exp := filepath.Join(results, step, "20260101T000000-experiment-"+step)
	for i, run := range runs {
		run(filepath.Join(exp, "run-"+string(rune('1'+i))))
	}
	if err := os.WriteFile(filepath.Join(exp, CompleteFile), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeBoundRun writes a trajectory run as boundRun describes it.
func writeBoundRun(t *testing.T, nodes int, budget, detail string, extra map[string]float64) func(string) {
	return func(dir string) {
		h, ev, x := boundRun(nodes, budget, detail, extra)
		w, err := result.Create(dir, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ev {
			if err := w.Event(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Summary(result.Summary{Ops: map[string]result.OpSummary{}, Extra: x}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportStepBudgets: the report's steps table gives each step's budget
// and, run by run, what bound the nodes — read from the result files —
// and a step without budgets says the shape over node count is the
// shared machine's.
func TestReportStepBudgets(t *testing.T) {
	results := t.TempDir()
	writeStep(t, results, "cassandra",
		writeBoundRun(t, 1, "cpu=0.5 each", "budget: cass1 held back", map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 1, "budget_cass1_throttled_pct": 70}),
		writeBoundRun(t, 2, "cpu=0.5 each", "machine: it ran out of CPU first", map[string]float64{"budget_machine_bound": 1, "budget_machine_idle_pct": 3}))
	writeStep(t, results, "postgres", writeBoundRun(t, 1, "", "", nil))
	p := Plan{Study: "trajectory", Size: "test", Steps: []Step{{Name: "cassandra", For: "cassandra"}, {Name: "postgres", For: "postgres"}}}
	s, err := Load("trajectory")
	if err != nil {
		t.Fatal(err)
	}
	ms, states, err := Collect(p, results)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteReport(&b, s, p, results, ms, states); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, w := range []string{
		"| budget | what bound the nodes |",
		"| cpu=0.5 each | the machine ran out first in 1 of 2 run(s): the shape over node count is the machine's — run-1: bound by the budgets (1 node(s) held back; throttled cass1 70 %); run-2: the machine ran out first (3 % idle) |",
		"| none | no budget: the nodes shared the machine's cores, so the shape over node count is the shared machine's |",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
	// The write-throughput claim rests on the machine-bound run.
	for _, c := range Claims(s, ms, map[string]bool{"cassandra": true, "postgres": true}) {
		if c.Claim.ID == "trajectory.claim.write-throughput" && (c.Verdict != NotJudged || !strings.Contains(c.Reason, "the machine ran out of CPU first in cassandra (run-2)")) {
			t.Errorf("%s: %s (%s)", c.Claim.ID, c.Verdict, c.Reason)
		}
	}
}
