package merge

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

func shardRun(t *testing.T, i, n int, start time.Time, secs int, lat int64, opts map[string]any) *result.Run {
	t.Helper()
	o := map[string]any{"clients": 8, "shard": strings.Join([]string{itoa(i), itoa(n)}, "/"), "shard_clients": 8 / n}
	for k, v := range opts {
		o[k] = v
	}
	r := &result.Run{Dir: "shard" + itoa(i), Header: result.Header{Workload: "microblog", Adapter: "redis", Started: start, Options: o, Operations: []string{"post"}}}
	for s := range secs {
		h := result.NewHist()
		for k := range 100 {
			if err := h.RecordValue(lat + int64(k*(i+1)+s)); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		late := result.NewHist()
		_ = late.RecordValue(int64(10 * (i + 1)))
		lateEnc, err := result.EncodeHist(late)
		if err != nil {
			t.Fatal(err)
		}
		r.Intervals = append(r.Intervals, result.Interval{Start: float64(s), End: float64(s + 1),
			Ops:      map[string]result.OpInterval{"post": {Count: 100, Hist: enc, Errors: map[string]int64{"timeout": int64(i)}}},
			Lateness: lateEnc})
	}
	r.Events = append(r.Events, result.Event{At: 1, Name: "mark"})
	sum, err := r.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	r.Summary = &sum
	return r
}

func itoa(i int) string { return string(rune('0' + i)) }

// The merged histogram is the HDR sum of the shards' histograms, bit for
// bit; counts and errors add up; events keep their shard.
func TestShardsMergeExactly(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	runs := []*result.Run{
		shardRun(t, 0, 3, t0.Add(20*time.Millisecond), 10, 1000, nil),
		shardRun(t, 2, 3, t0, 10, 3000, nil),
		shardRun(t, 1, 3, t0.Add(-10*time.Millisecond), 10, 2000, nil),
	}
	m, err := Shards(runs)
	if err != nil {
		t.Fatal(err)
	}
	want := result.NewHist()
	for _, r := range runs {
		h, err := r.Merged(false)
		if err != nil {
			t.Fatal(err)
		}
		want.Merge(h["post"])
	}
	got, err := m.Merged(false)
	if err != nil {
		t.Fatal(err)
	}
	we, _ := result.EncodeHist(want)
	ge, _ := result.EncodeHist(got["post"])
	if we != ge {
		t.Error("merged histogram differs from the HDR sum of the shards'")
	}
	if len(m.Intervals) != 10 {
		t.Errorf("%d merged seconds, want 10 (shards start within 30 ms)", len(m.Intervals))
	}
	// The schedule's lateness merges as exactly: each shard's second held
	// one lateness of 10(i+1) µs.
	if l := m.Summary.Schedule; l == nil || l.Count != 3*10 || l.P50US != 20 || l.MaxUS != 30 {
		t.Errorf("merged schedule lateness %+v, want 30 latenesses of 10, 20 and 30 µs", l)
	}
	if c := m.Summary.Ops["post"].Count; c != 3*10*100 {
		t.Errorf("merged count %d, want 3000", c)
	}
	if e := m.Summary.Ops["post"].Errors["timeout"]; e != (0+1+2)*10 {
		t.Errorf("merged errors %d, want 30", e)
	}
	if len(m.Events) != 3 || !strings.HasPrefix(m.Events[0].Detail, "shard ") {
		t.Errorf("events %+v", m.Events)
	}
	if skew := m.Summary.Extra["shard_start_skew_ms"]; skew != 30 {
		t.Errorf("start skew %v ms, want 30", skew)
	}
	if _, ok := m.Header.Options["shard"]; ok || m.Header.Options["shards"] != 3 {
		t.Errorf("merged options %v", m.Header.Options)
	}
}

func TestShardsRefused(t *testing.T) {
	t0 := time.Now()
	a, b, c := shardRun(t, 0, 3, t0, 3, 100, nil), shardRun(t, 1, 3, t0, 3, 100, nil), shardRun(t, 2, 3, t0, 3, 100, nil)
	other := shardRun(t, 2, 3, t0, 3, 100, map[string]any{"clients": 16})
	plain := shardRun(t, 0, 1, t0, 3, 100, nil)
	delete(plain.Header.Options, "shard")
	killed := shardRun(t, 1, 3, t0, 2, 100, nil)
	killed.Summary = nil // its process died before Finish
	for _, tc := range []struct {
		name string
		runs []*result.Run
		want string
	}{
		{"missing", []*result.Run{a, c}, "shards 1 of 3 missing"},
		{"twice", []*result.Run{a, b, b, c}, "given twice"},
		{"other run", []*result.Run{a, b, other}, "different runs"},
		{"not a shard", []*result.Run{plain}, "is not a shard"},
		{"killed", []*result.Run{a, killed, c}, "has no summary: it did not finish"},
		{"none", nil, "needs the shards"},
	} {
		if _, err := Shards(tc.runs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, s := range []string{"3/3", "-1/2", "a/b", "1"} {
		if _, _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
}

// Two 5 s shards of 100 operations a second started 576 ms apart did 200
// operations a second together: the merged rate is the sum of the shards'
// own rates, not the operations over a window stretched from the first
// start to the last end (1000 / 6 merged seconds = 167); the measured
// duration is a shard's, not the skew-stretched span.
func TestMergedRateIsTheShardsSum(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	runs := []*result.Run{
		shardRun(t, 0, 2, t0, 5, 1000, nil),
		shardRun(t, 1, 2, t0.Add(576*time.Millisecond), 5, 1000, nil),
	}
	m, err := Shards(runs)
	if err != nil {
		t.Fatal(err)
	}
	post := m.Summary.Ops["post"]
	if post.Count != 1000 || post.OpsPerSec != 200 {
		t.Errorf("merged %d operations at %.1f/s, want 1000 at 200/s", post.Count, post.OpsPerSec)
	}
	if d := m.Summary.DurationSeconds; d != 5 {
		t.Errorf("merged duration %.2f s, want each shard's 5 s", d)
	}
}
