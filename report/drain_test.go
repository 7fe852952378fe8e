package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// The throughput chart draws measured seconds only: not the sliver after a
// run's --duration where the operations in flight finish (the quick
// start's report showed userline and timeline falling to 0 ops/s at the
// end while the slow posts drained), nor an interval marked Drain. Issue
// 31, finding 8.
func TestThroughputLeavesOutTheDrain(t *testing.T) {
	t.Parallel()
	ops := func(post, timeline int64) map[string]result.OpInterval {
		return map[string]result.OpInterval{"post": {Count: post}, "timeline": {Count: timeline}}
	}
	for _, tc := range []struct {
		name string
		last result.Interval
	}{
		{"unmarked tail after the duration", result.Interval{Start: 3.0048, End: 3.0170, Ops: ops(8, 0)}},
		{"marked drain", result.Interval{Start: 2.9, End: 3.3, Drain: true, Ops: ops(0, 0)}},
	} {
		r := &result.Run{Header: result.Header{Workload: "microblog", Adapter: "sqlite", Operations: []string{"post", "timeline"},
			Options: map[string]any{"duration": "3s"}}}
		r.Intervals = []result.Interval{
			{Start: 0, End: 1.0048, Ops: ops(700, 1000)},
			{Start: 1.0048, End: 2.0048, Ops: ops(700, 1000)},
			{Start: 2.0048, End: 3.0048, Ops: ops(700, 1000)},
			tc.last,
		}
		data, err := loadRuns([]*result.Run{r})
		if err != nil {
			t.Fatal(err)
		}
		svg := throughputOverTime(data, "timeline")
		pts := regexp.MustCompile(`<polyline points="([^"]*)"`).FindStringSubmatch(svg)
		if pts == nil {
			t.Fatalf("%s: no line in %s", tc.name, svg)
		}
		if n := len(strings.Fields(pts[1])); n != 3 {
			t.Errorf("%s: the throughput line has %d points, want the 3 measured seconds: %s", tc.name, n, pts[1])
		}
		// Its latencies still count: the latency chart keeps every interval.
		if len(data[0].samples["post"]) != 4 {
			t.Errorf("%s: %d post samples, want 4", tc.name, len(data[0].samples["post"]))
		}
	}
	// A last partial second inside the duration is measured.
	r := &result.Run{Header: result.Header{Workload: "microblog", Options: map[string]any{"duration": "2500ms"}},
		Intervals: []result.Interval{{Start: 0, End: 1}, {Start: 1, End: 2}, {Start: 2, End: 2.5}}}
	if drained(r, 2) {
		t.Error("the last half second of a 2.5 s run was taken for a drain")
	}
}
