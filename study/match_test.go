package study

import (
	"math"
	"strings"
	"testing"
)

const testStudy = `study: wiki
workload: wiki
databases: [cassandra, hbase, mongodb]
conditions: {replication_factor: 3, consistency: QUORUM}
values:
  - {id: wiki.a, source: {table: "2"}, metric: elasticity_score, database: cassandra, unit: score, value: 1000, conditions: {nodes: 6, nodes_after: 12}}
  - {id: wiki.b, source: {table: "2"}, metric: elasticity_score, database: cassandra, unit: score, value: 2000, conditions: {nodes: 12, nodes_after: 24}}
  - {id: wiki.c, source: {table: "1"}, metric: stabilization_time, database: hbase, unit: min, value: 2, conditions: {nodes: 6, nodes_after: 12}}
  - {id: wiki.d, source: {table: "2"}, metric: elasticity_score, database: mongodb, unit: score, value: 4000, conditions: {nodes: 6, nodes_after: 12}}
  - {id: wiki.e, source: {table: "3"}, metric: scalability_score, database: hbase, unit: score, value: 0.5, conditions: {nodes: 6, nodes_after: 12}}
  - {id: wiki.f, source: {table: "4"}, metric: request_set_time, database: cassandra, unit: s, value: 10, conditions: {nodes: 6}}
  - {id: wiki.g, source: {table: "2"}, metric: elasticity_score, database: hbase, unit: score, value: 70, conditions: {nodes: 6, nodes_after: 12}}
`

// TestMatch: which measure stands beside which value, the ratio in the
// value's unit, and why a pair is not comparable or a value not measured.
func TestMatch(t *testing.T) {
	s, err := Parse([]byte(testStudy))
	if err != nil {
		t.Fatal(err)
	}
	real := Measure{Server: "Apache Cassandra 4.1.5", RF: 3, Consistency: "QUORUM", SD: math.NaN(), Step: "x"}
	with := func(m Measure, f func(*Measure)) Measure { f(&m); return m }
	ms := []Measure{
		// cassandra 2 → 4: the paper's first doubling, 6 → 12.
		with(real, func(m *Measure) {
			m.Metric, m.Database, m.Unit, m.Value, m.Nodes, m.NodesAfter, m.RF, m.Consistency = "elasticity_score", "cassandra", "score", 5000, 2, 4, 2, "ONE"
		}),
		// hbase at the paper's node counts, in seconds, on 2 shared cores.
		with(real, func(m *Measure) {
			m.Server, m.Metric, m.Database, m.Unit, m.Value, m.Nodes, m.NodesAfter, m.Cores = "HBase 2.5", "stabilization_time", "hbase", "s", 240, 6, 12, 2
		}),
		// hbase scalability on a stand-in, exactly the paper's conditions otherwise.
		with(real, func(m *Measure) {
			m.Server, m.StandIn, m.Metric, m.Database, m.Unit, m.Value, m.Nodes, m.NodesAfter = "Other 1.0", true, "scalability_score", "hbase", "score", 0.25, 6, 12
		}),
		// cassandra request-set time at 6 nodes: comparable.
		with(real, func(m *Measure) {
			m.Metric, m.Database, m.Unit, m.Value, m.Nodes = "request_set_time", "cassandra", "s", 12, 6
		}),
		// hbase elasticity failed.
		with(real, func(m *Measure) {
			m.Server, m.Metric, m.Database, m.Unit, m.Value, m.Nodes, m.NodesAfter, m.Failed = "HBase 2.5", "elasticity_score", "hbase", "score", math.NaN(), 6, 12, "no stable window"
		}),
	}
	rows := Match(s, ms, map[string]bool{"cassandra": true, "hbase": true}, nil)
	byID := map[string]Row{}
	for _, r := range rows {
		byID[r.Value.ID] = r
	}
	if len(rows) != len(s.Values) {
		t.Fatalf("%d rows for %d values", len(rows), len(s.Values))
	}
	for _, tc := range []struct {
		id         string
		measured   float64 // NaN: not measured
		ratio      float64
		comparable bool
		reasons    []string // each a substring of a reason (or of NotMeasured)
	}{
		{"wiki.a", 5000, 5, false, []string{"2 node(s) here, 6 in the paper", "2 → 4 nodes here, 6 → 12", "replication factor 2 here, 3", "consistency ONE here, QUORUM"}},
		{"wiki.b", math.NaN(), math.NaN(), false, []string{"measured only under other conditions: 2 node(s)"}},
		{"wiki.c", 4, 2, false, []string{"share this machine's 2 cores"}},
		{"wiki.d", math.NaN(), math.NaN(), false, []string{"no step of this study runs mongodb"}},
		{"wiki.e", 0.25, 0.5, false, []string{"stand-in server: Other 1.0, not hbase"}},
		{"wiki.f", 12, 1.2, true, nil},
		{"wiki.g", math.NaN(), math.NaN(), false, []string{"measured but failed: x: no stable window"}},
	} {
		r := byID[tc.id]
		if !same(r.Measured, tc.measured) || !same(r.Ratio, tc.ratio) || r.Comparable != tc.comparable {
			t.Errorf("%s: measured %v ratio %v comparable %v, want %v %v %v", tc.id, r.Measured, r.Ratio, r.Comparable, tc.measured, tc.ratio, tc.comparable)
		}
		all := strings.Join(r.Reasons, "; ") + " " + r.NotMeasured
		for _, want := range tc.reasons {
			if !strings.Contains(all, want) {
				t.Errorf("%s: %q lacks %q", tc.id, all, want)
			}
		}
		if tc.comparable && len(r.Reasons) > 0 {
			t.Errorf("%s: comparable with reasons %v", tc.id, r.Reasons)
		}
	}
}

// TestThroughputRatio: a database over the best other NoSQL one at the
// loads both measured; the largest ratio for an "up to" value.
func TestThroughputRatio(t *testing.T) {
	upTo := 5.0
	v := Value{ID: "ingest.r", Metric: "throughput_ratio", Operation: "batch", Database: "sqlserver", Unit: "ratio", Value: 5, Max: &upTo}
	thr := func(db string, load int64, y float64) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Database: db, Load: load, Value: y, N: 10, SD: math.NaN(), Server: db}
	}
	for _, tc := range []struct {
		name string
		ms   []Measure
		want float64
		why  string
	}{
		{"largest over common loads", []Measure{thr("sqlserver", 1, 100), thr("sqlserver", 2, 90), thr("cassandra", 1, 50), thr("mongodb", 1, 80), thr("cassandra", 2, 30)}, 3, ""},
		{"no common load", []Measure{thr("sqlserver", 1, 100), thr("cassandra", 2, 50)}, math.NaN(), "share no load"},
		{"no other database", []Measure{thr("sqlserver", 1, 100)}, math.NaN(), "no other NoSQL database"},
		{"own loads failed", []Measure{func() Measure { m := thr("sqlserver", 1, 0); m.Failed = "timeout"; return m }(), thr("cassandra", 1, 10)}, math.NaN(), "every load of sqlserver failed"},
		{"failed loads left out", []Measure{thr("sqlserver", 1, 100), func() Measure { m := thr("cassandra", 1, 0); m.Failed = "timeout"; return m }()}, math.NaN(), "every load of cassandra failed"},
	} {
		r := Row{Value: v, Measured: math.NaN()}
		ratioRow(&r, tc.ms, nil)
		if !same(r.Measured, tc.want) || !strings.Contains(r.NotMeasured, tc.why) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, r.Measured, r.NotMeasured, tc.want, tc.why)
		}
	}
}

func TestConvertAndNearest(t *testing.T) {
	for _, tc := range []struct {
		v        float64
		from, to string
		want     float64
		ok       bool
	}{
		{120, "s", "min", 2, true},
		{1.5, "s", "ms", 1500, true},
		{7, "ops/s", "records/s", 7, true},
		{7, "score", "score", 7, true},
		{7, "s", "%", 0, false},
	} {
		got, ok := convert(tc.v, tc.from, tc.to)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("convert(%v %s → %s) = %v %v, want %v %v", tc.v, tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		paper, measured []int
		n, want         int
	}{
		{[]int{6, 12, 24}, []int{2, 4}, 2, 6},        // the 2 → 4 doubling for 6 → 12
		{[]int{6, 12, 24}, []int{2, 4}, 4, 12},       //
		{[]int{6, 12, 24}, []int{1, 2, 4}, 2, 12},    // 1 → 2 → 4 for 6 → 12 → 24
		{[]int{1, 2, 3, 4}, []int{1, 2, 3, 4}, 3, 3}, // the paper's own counts
		{[]int{6}, []int{1, 2, 4}, 4, 6},             // beyond the paper's: its largest
		{[]int{1, 4}, []int{2}, 2, 1},                // scaled: rank 0
		{nil, []int{3}, 3, 0},
	} {
		if got := standsFor(tc.paper, tc.measured, tc.n); got != tc.want {
			t.Errorf("standsFor(%v, %v, %d) = %d, want %d", tc.paper, tc.measured, tc.n, got, tc.want)
		}
	}
}

func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}

// TestMatchVersus: a ratio against a named database (versus) is divided
// by that database's figure only: with Couchbase unmeasured, Cassandra's
// ratio to it is not divided by MongoDB's (not comparable, and why);
// SQL Server's ratio to Cassandra is divided by Cassandra's even where
// MongoDB is faster.
func TestMatchVersus(t *testing.T) {
	s, err := Load("ingest")
	if err != nil {
		t.Fatal(err)
	}
	thr := func(db string, load int64, y float64) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Database: db, Load: load, Value: y, N: 10, SD: math.NaN(), Server: db, Step: "sweep-" + db}
	}
	ms := []Measure{thr("sqlserver", 10000, 1000), thr("cassandra", 10000, 100), thr("mongodb", 10000, 400)}
	ran := map[string]bool{"sqlserver": true, "cassandra": true, "mongodb": true}
	byID := map[string]Row{}
	for _, r := range Match(s, ms, ran, nil) {
		byID[r.Value.ID] = r
	}
	c := byID["ingest.text.cassandra-vs-other-nosql"]
	if !math.IsNaN(c.Measured) || !strings.Contains(c.NotMeasured, "against couchbase, which no step of this study runs") {
		t.Errorf("cassandra vs couchbase: measured %v, %q", c.Measured, c.NotMeasured)
	}
	q := byID["ingest.text.sqlserver-vs-best-nosql"]
	if q.Measured != 10 || !strings.Contains(q.How, "against cassandra") {
		t.Errorf("sqlserver vs cassandra: measured %v (want 1000/100 = 10), %q", q.Measured, q.How)
	}
}
