package study

import (
	"math"
	"strings"
	"testing"
)

// TestSubjectBearing: a claim about a subject fieldbench measures the
// figures of (sequential against random access, the dataset's size, the
// spread of data) sets those figures beside it and is not judged with
// the reason; a subject it records but does not read says so; neither
// says "no mapping".
func TestSubjectBearing(t *testing.T) {
	traj := func(db, access, dataset string, load int64, v float64) Measure {
		return Measure{Metric: "throughput", Operation: "write", Database: db, Access: access, Dataset: dataset, Load: load, Nodes: 1, Value: v, Unit: "ops/s", SD: math.NaN()}
	}
	ms := []Measure{
		traj("cassandra", "sequential", "dataset0", 10000, 1000), traj("cassandra", "random", "dataset0", 10000, 800),
		traj("cassandra", "sequential", "dataset1", 20000, 900),
		{Metric: "ownership", Database: "cassandra", Nodes: 3, Value: 33.3, SD: 1.7, Unit: "%", Step: "steady"},
	}
	for _, tc := range []struct {
		about, want, verdict string
	}{
		{"access_order", "cassandra write throughput at 1 node(s), dataset0: sequential 1000 ops/s, random 800 ops/s (0.80×)", "one run per condition"},
		{"dataset_size", "cassandra write throughput at 1 node(s), sequential (ops/s): dataset0 1000 → dataset1 900", "one run per condition"},
		{"load_balance", "cassandra ownership at 3 node(s): 33.3 % ± 1.7 SD (5 % of the mean) (steady)", "states no figure or bound"},
		{"disk", "not read: fieldbench records each node's data directory size", "does not read it"},
	} {
		c := Claim{ID: "t." + tc.about, About: tc.about, Databases: []string{"cassandra"}}
		got, ok := bearing(c, ms)
		if !ok || !strings.Contains(got, tc.want) {
			t.Errorf("%s: bearing %q, %v; want %q", tc.about, got, ok, tc.want)
		}
		if v := subjectVerdict(c, ms); !strings.Contains(v, tc.verdict) {
			t.Errorf("%s: verdict reason %q, want %q", tc.about, v, tc.verdict)
		}
	}
	if got, ok := bearing(Claim{About: "setup", Databases: []string{"cassandra"}}, ms); ok {
		t.Errorf("setup: %q, want nothing bearing on it", got)
	}
}
