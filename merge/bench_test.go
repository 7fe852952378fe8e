package merge_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/merge"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

// writeShards writes n synthetic shard result files of secs per-second
// intervals under dir: three operations (microblog's), each second 400
// latencies drawn lognormal around 2 ms (1 µs to 10 s), so every
// interval's histogram spans a realistic range of buckets. It returns the
// run directories.
func writeShards(tb testing.TB, dir string, n, secs int) []string {
	tb.Helper()
	t0 := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	ops := []string{"post", "timeline", "userline"}
	var dirs []string
	for i := range n {
		r := &result.Run{Header: result.Header{
			Workload: "microblog", Adapter: "redis", Operations: ops,
			Started: t0.Add(time.Duration(i) * 3 * time.Millisecond),
			Options: map[string]any{"clients": 200, "shard": fmt.Sprintf("%d/%d", i, n), "shard_clients": 200 / n},
		}}
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		for s := range secs {
			iv := result.Interval{Start: float64(s), End: float64(s + 1), Ops: map[string]result.OpInterval{}}
			for _, op := range ops {
				h := result.NewHist()
				for range 400 {
					us := math.Exp(math.Log(2000) + rng.NormFloat64())
					if err := h.RecordValue(int64(min(max(us, 1), 1e7))); err != nil {
						tb.Fatal(err)
					}
				}
				enc, err := result.EncodeHist(h)
				if err != nil {
					tb.Fatal(err)
				}
				iv.Ops[op] = result.OpInterval{Count: 400, Hist: enc}
			}
			r.Intervals = append(r.Intervals, iv)
		}
		sum, err := r.Summarize()
		if err != nil {
			tb.Fatal(err)
		}
		r.Summary = &sum
		d := filepath.Join(dir, fmt.Sprintf("shard%02d", i))
		if err := merge.Write(d, r); err != nil {
			tb.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// BenchmarkMerge16Shards600s is what 'fieldbench merge' does with 16 shards
// of a 600 s run (2.67 shard-hours of per-second intervals): read the 16
// result files, merge them exactly, write the merged result file; with
// report, also the HTML report. It reports the time per shard-hour.
//
//	go test -run XXX -bench Merge16 -benchtime 3x ./merge/
func BenchmarkMerge16Shards600s(b *testing.B) {
	const n, secs = 16, 600
	dirs := writeShards(b, b.TempDir(), n, secs)
	shardHours := float64(n*secs) / 3600
	for _, withReport := range []bool{false, true} {
		name := "result"
		if withReport {
			name = "result+report"
		}
		b.Run(name, func(b *testing.B) {
			out := b.TempDir()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for k := range b.N {
				runs := make([]*result.Run, n)
				for i, d := range dirs {
					r, err := result.Read(d)
					if err != nil {
						b.Fatal(err)
					}
					runs[i] = r
				}
				m, err := merge.Shards(runs)
				if err != nil {
					b.Fatal(err)
				}
				d := filepath.Join(out, fmt.Sprint(k))
				if err := merge.Write(d, m); err != nil {
					b.Fatal(err)
				}
				if withReport {
					if err := report.WriteFile(filepath.Join(d, "report.html"), []*result.Run{m}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/shardHours, "s/shard-hour")
			// CPU time says what a merge costs on a machine shared with
			// other work (wall time then counts the waits for a core).
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N)/shardHours, "cpu-s/shard-hour")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The synthetic shards merge exactly (the benchmark measures a merge that
// is right): the merged count is the sum of the shards'.
func TestSyntheticShardsMerge(t *testing.T) {
	dirs := writeShards(t, t.TempDir(), 3, 20)
	var runs []*result.Run
	for _, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	m, err := merge.Shards(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Summary.Ops["post"].Count; got != 3*20*400 || len(m.Intervals) != 20 {
		t.Fatalf("merged %d posts in %d intervals, want %d in 20", got, len(m.Intervals), 3*20*400)
	}
	// The summary, added up while merging, is the one the merged
	// intervals give (warm-up seconds left out).
	m.Intervals[0].Warmup, m.Intervals[1].Warmup = true, true
	runs[0].Intervals[0].Warmup = true
	runs[2].Intervals[1].Warmup = true
	m, err = merge.Shards(runs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want.Ops, m.Summary.Ops) || m.Summary.Ops["post"].Count != 3*18*400 {
		t.Fatalf("merged summary %+v, the merged intervals give %+v", m.Summary.Ops, want.Ops)
	}
}
