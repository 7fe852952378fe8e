package studyrun

import (
	"math"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/study"
)

// TestClaims: a ranking claim is compared on the claim's metric and
// operation, lower first where less is better; failures, errors and
// scaling are stated; a claim with no mapping says so.
func TestClaims(t *testing.T) {
	m := func(db, metric, op string, nodes int, v float64) Measure {
		return Measure{Database: db, Server: db + " 1", Metric: metric, Operation: op, Nodes: nodes, Value: v, SD: math.NaN(), Step: db}
	}
	ms := []Measure{
		m("cassandra", "throughput", "write", 1, 100), m("cassandra", "throughput", "write", 4, 500),
		m("postgres", "throughput", "write", 1, 200),
		m("cassandra", "throughput", "distance", 1, 5), m("postgres", "throughput", "distance", 1, 50),
		m("cassandra", "latency", "write", 1, 2), m("postgres", "latency", "write", 1, 1),
	}
	failed := m("mongodb", "throughput", "write", 1, math.NaN())
	failed.Failed = "timeout"
	ms = append(ms, failed)
	s := &study.Study{Name: "trajectory"}
	for _, tc := range []struct {
		claim study.Claim
		want  []string
	}{
		{study.Claim{ID: "t.claim.write-throughput", About: "throughput", Ranks: []string{"cassandra", "postgres"}},
			[]string{"of write", "cassandra 300", "> postgres 200", "the same order as the paper"}},
		{study.Claim{ID: "t.claim.read-throughput", About: "throughput", Ranks: []string{"cassandra", "postgres"}},
			[]string{"of distance", "postgres 50", "> cassandra 5", "a different order from the paper's (cassandra > postgres)"}},
		{study.Claim{ID: "t.claim.write-latency", About: "latency", Ranks: []string{"postgres", "cassandra"}},
			[]string{"postgres 1", "> cassandra 2", "the same order as the paper"}},
		{study.Claim{ID: "t.claim.fails", About: "failure"}, []string{"mongodb (mongodb 1) failed at 1 node(s): timeout"}},
		{study.Claim{ID: "t.claim.write-scaling", About: "scalability"}, []string{"cassandra write", "1 → 4 nodes ×5.00"}},
		{study.Claim{ID: "t.claim.setup", About: "setup"}, []string{"no mapping"}},
	} {
		got := found(s, tc.claim, ms)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.claim.ID, got, w)
			}
		}
	}
}
