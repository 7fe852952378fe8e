package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// BenchmarkScale is the history at the scale: 10,000 runs of 5
// operations in one series, added (in batches of 100, as `history add`
// does), listed, trended (5 figures of 5 operations) and searched for
// change points, with the database file's growth per run. It prints the
// figures; nothing in it is a verdict on the machine's speed.
//
//	go test ./history -run '^$' -bench Scale -benchtime 1x
//
// FB_HISTORY_SCALE_RUNS changes the count, FB_HISTORY_SCALE_DB keeps the
// database at that path (for timing the commands on it). The runs are 20
// result files of 30 seconds × 5 operations converted by FromRun (timed:
// what `history add` pays per run before the database), then recorded
// 500 times each under new identities and start times, with shifts of
// +30 % and -20 % in their latencies planted at the runs 4,000 and 7,000.
func BenchmarkScale(b *testing.B) {
	n := 10000
	if v := os.Getenv("FB_HISTORY_SCALE_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("FB_HISTORY_SCALE_RUNS=%q", v)
		}
	}
	ops := []string{"post", "timeline", "userline", "follow", "search"}
	for range b.N {
		ctx := context.Background()
		dir := b.TempDir()
		path := os.Getenv("FB_HISTORY_SCALE_DB")
		if path == "" {
			path = filepath.Join(dir, "history.db")
		}
		var files []string
		for i := range 20 {
			f := fakeRun{started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ops: ops, seconds: 30, rate: 50, latencyUS: 1000, seed: uint64(i)}
			files = append(files, filepath.Join(dir, "runs", strconv.Itoa(i)))
			f.write(b, files[i])
		}
		var pool []Run
		t0 := time.Now()
		for _, f := range files {
			r, err := result.Read(f)
			if err != nil {
				b.Fatal(err)
			}
			rec, err := FromRun(r, "")
			if err != nil {
				b.Fatal(err)
			}
			pool = append(pool, rec)
		}
		fromRun := time.Since(t0) / time.Duration(len(files))
		runs := make([]Run, n)
		for i := range runs {
			r := pool[i%len(pool)]
			r.Started = r.Started.Add(time.Duration(i) * time.Hour)
			sum := sha256.Sum256([]byte(fmt.Sprint("scale", i)))
			r.ID = hex.EncodeToString(sum[:16])
			scale := 1.0
			switch {
			case i >= 7000*n/10000:
				scale = 1.3 * 0.8
			case i >= 4000*n/10000:
				scale = 1.3
			}
			r.Ops = append([]Op(nil), r.Ops...)
			for k := range r.Ops {
				o := &r.Ops[k]
				o.Mean *= scale
				o.P50 = int64(float64(o.P50) * scale)
				o.P99 = int64(float64(o.P99) * scale)
				o.P999 = int64(float64(o.P999) * scale)
			}
			runs[i] = r
		}
		s, err := Open(ctx, path, true)
		if err != nil {
			b.Fatal(err)
		}
		empty := fileSize(path)
		t1 := time.Now()
		for i := 0; i < len(runs); i += 100 {
			if _, err := s.Add(ctx, runs[i:min(i+100, len(runs))]); err != nil {
				b.Fatal(err)
			}
		}
		add := time.Since(t1)
		if err := s.Close(); err != nil { // checkpoints the WAL into the file
			b.Fatal(err)
		}
		size := fileSize(path)
		if s, err = Open(ctx, path, false); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		series, err := s.SeriesList(ctx)
		if err != nil || len(series) != 1 || series[0].Runs != n {
			b.Fatalf("series %+v (%v)", series, err)
		}
		back, err := s.Runs(ctx, series[0].ID)
		if err != nil || len(back) != n {
			b.Fatalf("%d runs (%v)", len(back), err)
		}
		list := time.Since(t2)
		t3 := time.Now()
		var trends [][]Point
		for _, op := range ops {
			for _, fig := range TrendFigures {
				trends = append(trends, Trend(back, op, fig))
			}
		}
		trend := time.Since(t3)
		t4 := time.Now()
		found := 0
		for _, pts := range trends {
			cps, err := Detect(Values(pts), Options{})
			if err != nil {
				b.Fatal(err)
			}
			found += len(cps)
		}
		changes := time.Since(t4)
		p99, err := Detect(Values(Trend(back, "post", "p99")), Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.ReportMetric(add.Seconds(), "add-s")
		b.ReportMetric(list.Seconds(), "list-s")
		b.ReportMetric(trend.Seconds(), "trend-s")
		b.ReportMetric(changes.Seconds(), "changes-s")
		b.ReportMetric(float64(size-empty)/float64(n), "bytes/run")
		b.ReportMetric(float64(fromRun.Microseconds())/1000, "fromrun-ms/run")
		b.Logf("%d runs × %d operations: added in %.2f s (%.0f runs/s), listed in %.2f s, %d trends in %.3f s, change points of %d series in %.2f s (%d found; post p99: %v)",
			n, len(ops), add.Seconds(), float64(n)/add.Seconds(), list.Seconds(), len(trends), trend.Seconds(), len(trends), changes.Seconds(), found, indexes(p99))
		b.Logf("database %s: %d bytes for %d runs, %.0f bytes per run (%.0f per operation); reading one result file of 30 s × 5 operations into a record: %.1f ms",
			path, size, n, float64(size-empty)/float64(n), float64(size-empty)/float64(n*len(ops)), float64(fromRun.Microseconds())/1000)
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
