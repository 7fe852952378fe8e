package study

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestVerdicts: each verdict kind from measures built here: intervals
// apart in the paper's order (held), the other way (not held), a tie
// (not held, stated), one run (not judged), unequal conditions (not
// judged, what differs), a database the plan does not run, a metric
// fieldbench does not read, failures and error counts of the claim's
// databases only.
func TestVerdicts(t *testing.T) {
	// sweep is an ingest point: mean and 95 % interval over its runs.
	sweep := func(db string, load int64, y, lo, hi float64) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Database: db, Server: db + " 1", Nodes: 1, Load: load, Value: y, Lo: lo, Hi: hi, N: 10, SD: math.NaN(), Step: "sweep-" + db}
	}
	// one is a single trajectory run: no interval.
	one := func(db string, nodes int, size string, y float64) Measure {
		return Measure{Metric: "throughput", Operation: "write", Database: db, Server: db + " 1", Nodes: nodes, Access: "sequential", Dataset: "dataset0", Size: size, Value: y, SD: math.NaN(), Step: db}
	}
	// rst is a wiki request-set time: mean, SD and count of request sets.
	rst := func(step, db string, nodes, requests int, y, sd float64) Measure {
		return Measure{Metric: "request_set_time", Database: db, Server: db + " 1", Nodes: nodes, Requests: requests, Size: "20,000 articles", Value: y, SD: sd, N: 10, Step: step}
	}
	ingest := &Study{Name: "ingest", Workload: "ingest"}
	traj := &Study{Name: "trajectory", Workload: "trajectory"}
	rank := Claim{ID: "ingest.claim.r", About: "throughput", Databases: []string{"a", "b"}, Ranks: []string{"a", "b"}}
	both := map[string]bool{"a": true, "b": true}
	trajWrite := Claim{ID: "trajectory.claim.write", About: "throughput", Databases: []string{"a", "b"}, Ranks: []string{"a", "b"}}
	_, perf := claimOf(t, "wiki", "wiki.claim.performance-6-12")
	_, perf24 := claimOf(t, "wiki", "wiki.claim.performance-24")
	wiki, _ := Load("wiki")
	_, mongoFails := claimOf(t, "wiki", "wiki.claim.mongodb-fails-at-24")
	ingestFile, ingestFails := claimOf(t, "ingest", "ingest.claim.mongodb-fails")
	micro, crash := claimOf(t, "microblog", "microblog.claim.crash-no-errors")
	_, blockReads := claimOf(t, "microblog", "microblog.claim.few-block-reads")
	failedAt := func(m Measure, why string) Measure { m.Failed, m.Value = why, math.NaN(); return m }
	errs := func(db string, n float64) Measure {
		return Measure{Metric: "errors", Database: db, Server: db + " 1", Nodes: 6, Value: n, SD: math.NaN(), Step: "crash"}
	}
	for _, tc := range []struct {
		name  string
		s     *Study
		c     Claim
		ms    []Measure
		ran   map[string]bool
		want  Verdict
		why   []string
		avoid []string
	}{
		{"held: intervals apart in the paper's order", ingest, rank,
			[]Measure{sweep("a", 10000, 100, 95, 105), sweep("b", 10000, 50, 45, 55)}, both,
			Held, []string{"at 1 node(s), 10,000 records per source, a above b (a 100 [95, 105] and b 50 [45, 55], apart)"}, nil},
		{"not held: the other way, apart", ingest, rank,
			[]Measure{sweep("a", 10000, 50, 45, 55), sweep("b", 10000, 100, 95, 105)}, both,
			NotHeld, []string{"b above a, against the paper"}, nil},
		{"tie: intervals overlap", ingest, rank,
			[]Measure{sweep("a", 10000, 100, 80, 120), sweep("b", 10000, 90, 70, 110)}, both,
			NotHeld, []string{"a tie: a 100 [80, 120] and b 90 [70, 110] overlap, so fieldbench could not confirm a above b"}, nil},
		{"one run each: no interval", traj, trajWrite,
			[]Measure{one("a", 1, "scale 0.01", 200), one("b", 1, "scale 0.01", 100)}, both,
			NotJudged, []string{"one run of a and b, so no interval"}, nil},
		{"unequal loads", ingest, rank,
			[]Measure{sweep("a", 10000, 100, 95, 105), sweep("b", 2000, 50, 45, 55)}, both,
			NotJudged, []string{"unequal conditions", "a at 1 node(s), 10,000 records per source", "b at 1 node(s), 2,000 records per source", "differ in load"}, []string{"above"}},
		{"unequal dataset sizes under one dataset name", traj, trajWrite,
			[]Measure{one("a", 1, "scale 0.01", 200), one("b", 1, "scale 0.001", 100)}, both,
			NotJudged, []string{"unequal conditions", "differ in dataset size"}, nil},
		{"a database measured only where no other was", ingest, Claim{ID: "ingest.claim.r3", About: "throughput", Databases: []string{"a", "b", "c"}, Ranks: []string{"a", "b", "c"}},
			[]Measure{sweep("a", 10000, 100, 95, 105), sweep("b", 10000, 50, 45, 55), sweep("c", 2000, 10, 9, 11)}, map[string]bool{"a": true, "b": true, "c": true},
			NotJudged, []string{"c was measured only at 1 node(s), 2,000 records per source, where no other database of the claim was", "as the paper says: at 1 node(s), 10,000 records per source, a above b"}, nil},
		{"a ranked database the plan does not run", ingest, Claim{ID: "ingest.claim.r3", About: "throughput", Databases: []string{"a", "b", "c"}, Ranks: []string{"a", "b", "c"}},
			[]Measure{sweep("a", 10000, 100, 95, 105), sweep("b", 10000, 50, 45, 55)}, both,
			NotJudged, []string{"c: no step of this study's plan runs it"}, nil},
		{"repeated steps give the interval", ingest, rank,
			[]Measure{sweep("a", 10000, 100, 0, 0), sweep("a", 10000, 102, 0, 0), sweep("a", 10000, 98, 0, 0),
				sweep("b", 10000, 50, 0, 0), sweep("b", 10000, 52, 0, 0), sweep("b", 10000, 48, 0, 0)}, both,
			Held, []string{"a above b"}, nil},
		{"per scale, equal conditions, request sets give the interval", wiki, perf,
			[]Measure{rst("elasticity-hbase", "hbase", 2, 2000, 8, 1), rst("elasticity-cassandra", "cassandra", 2, 2000, 12, 1),
				rst("elasticity-hbase", "hbase", 4, 2000, 8, 1), rst("elasticity-cassandra", "cassandra", 4, 2000, 12, 1)},
			map[string]bool{"hbase": true, "cassandra": true},
			NotJudged, []string{"mongodb: no step of this study's plan runs it", "(the paper's 6 nodes) at 2 node(s)"}, nil},
		{"a scale no step reached", wiki, perf24,
			[]Measure{rst("elasticity-hbase", "hbase", 2, 2000, 8, 1), rst("elasticity-hbase", "hbase", 4, 2000, 8, 1),
				rst("elasticity-cassandra", "cassandra", 2, 2000, 12, 1), rst("elasticity-cassandra", "cassandra", 4, 2000, 12, 1)},
			map[string]bool{"hbase": true, "cassandra": true},
			NotJudged, []string{"cassandra: not measured at the paper's 24 nodes (no step measured a node count standing for it)", "hbase: not measured at the paper's 24 nodes"}, []string{"above"}},
		{"per scale, other request-set sizes", wiki, perf,
			[]Measure{rst("elasticity-hbase", "hbase", 2, 1000, 8, 1), rst("elasticity-cassandra", "cassandra", 2, 2000, 12, 1)},
			map[string]bool{"hbase": true, "cassandra": true, "mongodb": true},
			NotJudged, []string{"unequal conditions", "differ in request-set size"}, nil},
		{"per scale, the paper's order the other way", wiki, perf,
			[]Measure{rst("elasticity-hbase", "hbase", 2, 2000, 12, 1), rst("elasticity-cassandra", "cassandra", 2, 2000, 8, 1),
				rst("elasticity-mongodb", "mongodb", 2, 2000, 10, 1)},
			map[string]bool{"hbase": true, "cassandra": true, "mongodb": true},
			NotHeld, []string{"mongodb above hbase, against the paper", "cassandra above mongodb, against the paper"}, nil},
		{"scaling: one run per node count", traj, Claim{ID: "trajectory.claim.write-scaling", About: "scalability", Databases: []string{"a"}},
			[]Measure{one("a", 1, "scale 0.01", 100), one("a", 4, "scale 0.01", 300)}, both,
			NotJudged, []string{"one run per node count of a, so no interval"}, nil},
		{"scaling with intervals: stated, no expected change to judge", ingest, Claim{ID: "ingest.claim.s", About: "scalability", Databases: []string{"a", "b"}},
			[]Measure{sweep("a", 10000, 100, 95, 105), func() Measure { m := sweep("a", 10000, 200, 190, 210); m.Nodes = 4; return m }(),
				sweep("b", 10000, 100, 95, 105), func() Measure { m := sweep("b", 10000, 101, 95, 107); m.Nodes = 4; return m }()}, both,
			NotJudged, []string{"a batch 1 → 4 nodes (10,000 records per source): rises", "b batch 1 → 4 nodes (10,000 records per source): flat (the intervals overlap)"}, nil},
		{"a metric fieldbench does not read", micro, blockReads, nil, map[string]bool{"cassandra": true},
			NotJudged, []string{"fieldbench's study report reads no block_reads", "couchbase: no step of this study's plan runs it"}, nil},
		{"failure of a database that never ran", wiki, mongoFails, nil, map[string]bool{"cassandra": true, "hbase": true},
			NotJudged, []string{"mongodb never ran here"}, nil},
		{"failure: the subject below the paper's loads, another database failing", ingestFile, ingestFails,
			[]Measure{sweep("mongodb", 6000, 10, 9, 11), failedAt(sweep("cassandra", 10000, 0, 0, 0), "write timeout"), sweep("sqlserver", 10000, 100, 95, 105)},
			map[string]bool{"mongodb": true, "cassandra": true, "sqlserver": true},
			NotHeld, []string{"mongodb finished every load it ran, up to 6,000 records per source, below the 330,000", "couchbase never ran here", "cassandra failed at 10,000 records per source, where the paper says it finished", "sqlserver finished every measure"}, nil},
		{"failure: the subject failed, the others finished", ingestFile, Claim{ID: "x", About: "failure", Databases: []string{"mongodb", "sqlserver"}, Fails: []string{"mongodb"}},
			[]Measure{failedAt(sweep("mongodb", 6000, 0, 0, 0), "out of memory"), sweep("sqlserver", 10000, 100, 95, 105)},
			map[string]bool{"mongodb": true, "sqlserver": true},
			Held, []string{"mongodb failed at 6,000 records per source"}, nil},
		{"errors: none, as the paper, one database not run", micro, crash, []Measure{errs("cassandra", 0)}, map[string]bool{"cassandra": true},
			NotJudged, []string{"cassandra: 0 failed operations in crash (6 node(s)), as the paper's 0", "couchbase: no step of this study's plan runs it"}, nil},
		{"errors: some, against the paper's none", micro, crash, []Measure{errs("cassandra", 12), errs("mongodb", 5)}, map[string]bool{"cassandra": true},
			NotHeld, []string{"cassandra: 12 failed operations in crash (6 node(s)), the paper 0"}, []string{"mongodb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, why := judge(tc.s, tc.c, tc.ms, tc.ran)
			if v != tc.want {
				t.Errorf("verdict %q, want %q (%s)", v, tc.want, why)
			}
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("reason %q lacks %q", why, w)
				}
			}
			for _, w := range tc.avoid {
				if strings.Contains(why, w) {
					t.Errorf("reason %q has %q", why, w)
				}
			}
		})
	}
}

// TestClaimEvidence: the evidence beside a verdict names only the claim's
// databases: a failure claim says a database never ran rather than that
// nothing failed, and sets the others apart from the database it is
// about; an error claim lists no other database's errors; a metric claim
// without ranks that fieldbench measures is ranked under equal
// conditions beside the paper's own order, not "no mapping"; a measured
// database the paper does not rank is stated.
func TestClaimEvidence(t *testing.T) {
	wiki, mongoFails := claimOf(t, "wiki", "wiki.claim.mongodb-fails-at-24")
	ingest, ingestFails := claimOf(t, "ingest", "ingest.claim.mongodb-fails")
	micro, crash := claimOf(t, "microblog", "microblog.claim.crash-no-errors")
	traj, write := claimOf(t, "trajectory", "trajectory.claim.write-throughput")
	sweep := func(db string, load int64, failed string) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Database: db, Server: db + " 1", Nodes: 1, Load: load, Value: 1, N: 10, SD: math.NaN(), Failed: failed, Step: "sweep-" + db}
	}
	tw := func(db string, nodes int, y float64) Measure {
		return Measure{Metric: "throughput", Operation: "write", Database: db, Server: db + " 1", Nodes: nodes, Access: "sequential", Dataset: "dataset0", Size: "scale 0.01", Value: y, SD: math.NaN(), Step: db}
	}
	cassandraDown := Measure{Database: "cassandra", Server: "Apache Cassandra 4.1", Metric: "elasticity_score", Nodes: 2, NodesAfter: 4, Value: math.NaN(), Failed: "no stable window", SD: math.NaN()}
	for _, tc := range []struct {
		name        string
		s           *Study
		c           Claim
		ms          []Measure
		want, avoid []string
	}{
		{"a database that never ran", wiki, mongoFails, []Measure{cassandraDown},
			[]string{"mongodb (the paper: it failed): never ran here"}, []string{"no measurement", "cassandra"}},
		{"the failure claim's subject apart from the others", ingest, ingestFails,
			[]Measure{sweep("mongodb", 2000, ""), sweep("cassandra", 10000, "write timeout")},
			[]string{"mongodb (the paper: it failed): mongodb 1 finished all 1 measures", "cassandra (the paper: it finished): cassandra 1 failed 1 of 1 measures"}, nil},
		{"errors of the claim's databases only", micro, crash,
			[]Measure{{Metric: "errors", Database: "cassandra", Server: "c", Value: 0, Step: "crash"}, {Metric: "errors", Database: "mongodb", Server: "m", Value: 7, Step: "crash"}},
			[]string{"crash: 0 failed operations on c"}, []string{"7 failed"}},
		{"a metric claim without ranks", traj, write,
			[]Measure{tw("postgres", 1, 200), tw("cassandra", 1, 100), tw("cassandra", 4, 400), tw("mongodb", 1, 50)},
			[]string{"by throughput of write", "at 1 node(s), sequential, dataset0, scale 0.01: postgres 200 (postgres 1, one run) > cassandra 100 (cassandra 1, one run); by the means, the paper's order"},
			[]string{"no mapping", "mongodb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := found(tc.s, tc.c, tc.ms)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tc.avoid {
				if strings.Contains(got, w) {
					t.Errorf("%q has %q", got, w)
				}
			}
		})
	}
	// A measured database the paper does not rank is stated, not skipped.
	c := Claim{ID: "trajectory.claim.x", About: "throughput", Databases: []string{"postgres", "cassandra", "mongodb"}, Ranks: []string{"cassandra", "postgres"}}
	got := found(traj, c, []Measure{tw("postgres", 1, 200), tw("cassandra", 1, 100), tw("mongodb", 1, 50)})
	if !strings.Contains(got, "mongodb measured but not ranked by the paper") || !strings.Contains(got, "not the paper's order (cassandra > postgres)") {
		t.Errorf("unranked database: %s", got)
	}
}

// studyMetrics are the metrics each workload's result files give this
// package (measure.go's readers, listed here by hand from them).
var studyMetrics = map[string][]string{
	"ingest":     {"throughput", "ci_amplitude", "record_size", "sweep_load"},
	"trajectory": {"throughput", "latency"},
	"wiki":       {"request_set_time", "elasticity_score", "scalability_score", "data_transfer_time", "additional_time", "stabilization_time"},
	"microblog":  {"cluster_formation_time", "populate_time", "ownership", "convergence_time", "errors"},
}

// publishedMeasures are measures of every metric studyMetrics lists for
// every step of the study's quick plan, at two node counts and a
// transition, as a complete run of the plan would give them.
func publishedMeasures(t *testing.T, s *Study) ([]Measure, map[string]bool) {
	t.Helper()
	p, err := PlanFor(s.Name, SizeQuick)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	var ms []Measure
	for _, st := range p.Steps {
		ran[st.For] = true
		for _, metric := range studyMetrics[s.Workload] {
			for _, n := range []int{1, 2} {
				m := Measure{Metric: metric, Database: st.For, Server: st.For, Nodes: n, Value: float64(n), SD: math.NaN(), Step: st.Name}
				switch s.Workload {
				case "trajectory":
					for _, op := range []string{"write", "distance"} {
						m.Operation, m.Access, m.Dataset = op, "sequential", "dataset0"
						ms = append(ms, m)
					}
					continue
				case "ingest":
					m.Operation, m.Load, m.Lo, m.Hi, m.N = "batch", 10000*int64(n), float64(n)-0.1, float64(n)+0.1, 10
				case "wiki":
					if metric != "request_set_time" {
						m.NodesAfter = 2 * n
					}
				}
				ms = append(ms, m)
			}
		}
	}
	return ms, ran
}

// TestPublishedClaims: over every published file and measures of what its
// quick plan measures, every claim has one of the three verdicts with a
// reason, and no claim's evidence says "no mapping" for a metric a step
// measures.
func TestPublishedClaims(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		ms, ran := publishedMeasures(t, s)
		for _, c := range s.Claims {
			got := found(s, c, ms)
			if slices.Contains(studyMetrics[s.Workload], c.About) && strings.Contains(got, "no mapping") {
				t.Errorf("%s: about %s, which the steps measure, yet: %s", c.ID, c.About, got)
			}
		}
		for _, r := range Claims(s, ms, ran) {
			if !slices.Contains(Verdicts(), r.Verdict) || r.Reason == "" {
				t.Errorf("%s: verdict %q, reason %q", r.Claim.ID, r.Verdict, r.Reason)
			}
		}
	}
}

// TestReportVerdicts: the report opens with the tally, gives each claim its
// verdict and reason, prints the study file's notes, and gives bounds in
// the paper's words ("up to", "more than", "at least") rather than "≈".
func TestReportVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"ingest", []string{"**Claims: 0 held, 0 not held, 8 not judged here** (of 8)", "| **not judged here** |",
			"## The study file's notes", "up to 5 |", "*(A hint: the paper reports it from tests it does not show.)*"}},
		{"wiki", []string{"more than 4 |", "more than 3 |", "## The study file's notes"}},
		{"microblog", []string{"at least 50 % |"}},
		{"trajectory", []string{"The Stdv columns hold values"}},
	} {
		s, err := Load(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanFor(tc.name, SizeQuick)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteReport(&b, s, p, t.TempDir(), nil, nil); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: report lacks %q", tc.name, w)
			}
		}
		if i, j := strings.Index(out, "**Claims:"), strings.Index(out, "## Steps"); i < 0 || i > j {
			t.Errorf("%s: the tally is not at the top (before the steps)", tc.name)
		}
		if strings.Contains(out, "≈ 5 ratio") || strings.Contains(out, "≈ 5 |") {
			t.Errorf("%s: an up-to bound printed as ≈", tc.name)
		}
	}
}

// TestTrajectorySize: each trajectory measure carries its run's scale, so
// that two steps' "dataset0" of different sizes (PostgreSQL's 0.01,
// FerretDB's 0.001) are not ranked against each other.
func TestTrajectorySize(t *testing.T) {
	run := func(scale float64) *result.Run {
		return &result.Run{Header: result.Header{Workload: "trajectory", Options: map[string]any{"scale": scale}},
			Summary: &result.Summary{Extra: map[string]float64{"sequential_write_records_per_sec": 100}}}
	}
	ms := append(measures(run(0.01), Step{Name: "postgres", For: "postgres"}), measures(run(0.001), Step{Name: "mongodb", For: "mongodb"})...)
	assignDatasets(ms)
	if len(ms) != 2 || ms[0].Size != "scale 0.01" || ms[1].Size != "scale 0.001" || ms[0].Dataset != "dataset0" || ms[1].Dataset != "dataset0" {
		t.Fatalf("measures %+v", ms)
	}
	if d := differ(condOf(ms[0]), condOf(ms[1])); !slices.Equal(d, []string{"dataset size"}) {
		t.Errorf("differ: %v, want [dataset size]", d)
	}
}

// TestAssignDatasets: within a step, the scale that names the most runs
// is dataset0; a run at another size (the common 0.1 % beside 1, 2, 4 %)
// keeps its size and no name rather than taking the others' names away.
func TestAssignDatasets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scales []float64
		want   []string
	}{
		{"1x 2x 4x", []float64{0.001, 0.002, 0.004}, []string{"dataset0", "dataset1", "dataset2"}},
		{"a common size beside them", []float64{0.001, 0.01, 0.02, 0.04}, []string{"", "dataset0", "dataset1", "dataset2"}},
		{"two sizes", []float64{0.002, 0.001}, []string{"dataset1", "dataset0"}},
		{"8x is no dataset", []float64{0.001, 0.008}, []string{"dataset0", ""}},
		{"one size", []float64{0.005}, []string{"dataset0"}},
	} {
		var ms []Measure
		for _, sc := range tc.scales {
			r := &result.Run{Header: result.Header{Workload: "trajectory", Options: map[string]any{"scale": sc}},
				Summary: &result.Summary{Extra: map[string]float64{"sequential_write_records_per_sec": 100}}}
			ms = append(ms, measures(r, Step{Name: "cassandra", For: "cassandra"})...)
		}
		assignDatasets(ms)
		var got []string
		for _, m := range ms {
			got = append(got, m.Dataset)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: datasets %q, want %q", tc.name, got, tc.want)
		}
	}
}
