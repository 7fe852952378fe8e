package study

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// steadyRun is a microblog steady run whose posts fall in two groups of
// author followers, "8-15" and "256-511": each second's posts of a group
// take the next of its latencies (ms), a second without one has none of
// that group.
func steadyRun(t *testing.T, db string, small, large []float64) *result.Run {
	t.Helper()
	r := &result.Run{
		Header:  result.Header{Workload: "microblog", Adapter: db, Groups: map[string]string{"post": "author followers"}},
		Summary: &result.Summary{Ops: map[string]result.OpSummary{"post": {Count: int64(len(small) + len(large)), MeanUS: 1000}}},
	}
	enc := func(ms float64) string {
		h := result.NewHist()
		for range 3 {
			if err := h.RecordValue(int64(ms * 1000)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for i := range max(len(small), len(large)) {
		iv := result.Interval{Start: float64(i), End: float64(i + 1), Groups: map[string]map[string]string{"post": {}}}
		if i < len(small) {
			iv.Groups["post"]["8-15"] = enc(small[i])
		}
		if i < len(large) {
			iv.Groups["post"]["256-511"] = enc(large[i])
		}
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}

// TestJudgeTrend: a claim that post latency rises with the author's
// follower count is judged run by run from the first and the last group
// with enough seconds, by their intervals: apart upwards is held, apart
// downwards or overlapping is not held, too few seconds or a database not
// run is not judged.
func TestJudgeTrend(t *testing.T) {
	flat := []float64{10, 11, 10, 11, 10, 11}
	high := []float64{30, 31, 30, 31, 30, 31}
	low := []float64{3, 4, 3, 4, 3, 4}
	c := Claim{ID: "microblog.claim.post-latency-grows-with-followers", About: "latency_by_group", Trend: "rises", Databases: []string{"cassandra", "couchbase"}}
	for _, tc := range []struct {
		name        string
		cass, couch [2][]float64 // nil: the database has no run
		want        Verdict
		wantIn      []string
	}{
		{"both rise", [2][]float64{flat, high}, [2][]float64{flat, high}, Held, []string{"cassandra at 1 node(s): post rises", "couchbase at 1 node(s): post rises", "8-15 10.5 ["}},
		{"one falls", [2][]float64{flat, high}, [2][]float64{flat, low}, NotHeld, []string{"couchbase at 1 node(s): post falls, against the paper", "as the paper says: cassandra at 1 node(s): post rises"}},
		{"a tie", [2][]float64{flat, flat}, [2][]float64{flat, high}, NotHeld, []string{"cassandra at 1 node(s): a tie", "could not confirm that it rises"}},
		{"too few seconds", [2][]float64{flat, high[:4]}, [2][]float64{flat, high}, NotJudged, []string{"fewer than two groups of author followers with operations in 5 or more seconds"}},
		{"a database not run", [2][]float64{flat, high}, [2][]float64{}, NotJudged, []string{"couchbase: no step of this study's plan runs it", "as the paper says: cassandra"}},
	} {
		ms := measures(steadyRun(t, "cassandra", tc.cass[0], tc.cass[1]), Step{Name: "steady-denormalized", For: "cassandra"})
		ran := map[string]bool{"cassandra": true}
		if tc.couch[0] != nil {
			ms = append(ms, measures(steadyRun(t, "couchbase", tc.couch[0], tc.couch[1]), Step{Name: "steady-couchbase", For: "couchbase"})...)
			ran["couchbase"] = true
		}
		v, why := judgeTrend(c, ms, "post", ran)
		if v != tc.want {
			t.Errorf("%s: verdict %q, want %q (%s)", tc.name, v, tc.want, why)
		}
		if all := why + " " + trendFound(c, ms, "post"); !containsAll(all, tc.wantIn) {
			t.Errorf("%s: reason and figures %q lack one of %q", tc.name, all, tc.wantIn)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestCheckClaimTrend: a trend belongs to latency_by_group alone, and is
// one of Trends.
func TestCheckClaimTrend(t *testing.T) {
	s := &Study{Name: "microblog"}
	for _, tc := range []struct {
		about, trend string
		ok           bool
	}{
		{"latency_by_group", "rises", true},
		{"latency_by_group", "", false},
		{"latency_by_group", "grows", false},
		{"latency", "rises", false},
		{"latency", "", true},
	} {
		err := s.CheckClaim(Claim{ID: "c", About: tc.about, Trend: tc.trend})
		if (err == nil) != tc.ok {
			t.Errorf("about %s, trend %q: error %v, want ok=%v", tc.about, tc.trend, err, tc.ok)
		}
	}
}
