package history

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// fakeRun is a finished run of seconds one-second intervals: each
// operation of ops completes rate operations a second with latencies
// around latencyUS (µs), uniform over ±50 %. Deterministic for seed.
type fakeRun struct {
	started   time.Time
	ops       []string
	seconds   int
	rate      int
	latencyUS float64
	seed      uint64
	options   map[string]any
	version   string // the server's
	host      string
	errors    int64 // failed operations of the first op, in every second
	warmup    int   // the first seconds are warm-up, 10 times slower
}

func (f fakeRun) run(t testing.TB) *result.Run {
	t.Helper()
	if f.options == nil {
		f.options = map[string]any{"clients": 10, "model": "denormalized", "mix": "post=1,timeline=1", "duration": "30s"}
	}
	if f.version == "" {
		f.version = "3.54.1"
	}
	if f.host == "" {
		f.host = "vm"
	}
	rng := rand.New(rand.NewPCG(f.seed, 2))
	h := result.Header{Version: "0.1.0-dev", Workload: "microblog", Adapter: "sqlite", DSN: "sqlite:///tmp/x.db",
		Options: f.options, Started: f.started, Operations: f.ops, Seed: 1,
		Machine: result.Machine{CPUModel: "AMD EPYC", Cores: 2, MemoryBytes: 24 << 30, Hostname: f.host, Kernel: "6.1"}}
	h.Database.Name, h.Database.Version = "sqlite", f.version
	r := &result.Run{Header: h}
	for s := range f.seconds {
		iv := result.Interval{Start: float64(s), End: float64(s + 1), Ops: map[string]result.OpInterval{}, Warmup: s < f.warmup}
		for k, op := range f.ops {
			hist := result.NewHist()
			for range f.rate {
				v := f.latencyUS * (0.5 + rng.Float64())
				if iv.Warmup {
					v *= 10
				}
				if err := hist.RecordValue(int64(v)); err != nil {
					t.Fatal(err)
				}
			}
			enc, err := result.EncodeHist(hist)
			if err != nil {
				t.Fatal(err)
			}
			oi := result.OpInterval{Count: int64(f.rate), Hist: enc}
			if k == 0 && f.errors > 0 {
				oi.Errors = map[string]int64{"timeout": f.errors}
			}
			iv.Ops[op] = oi
		}
		r.Intervals = append(r.Intervals, iv)
	}
	sum, err := r.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	r.Summary = &sum
	return r
}

// write writes the run's result file into dir (the run directory).
func (f fakeRun) write(t testing.TB, dir string) *result.Run {
	t.Helper()
	r := f.run(t)
	w, err := result.Create(dir, r.Header)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range r.Intervals {
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Summary(*r.Summary); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// record is the history's record of the run, read back from its file.
func (f fakeRun) record(t testing.TB, dir string) Run {
	t.Helper()
	rec, err := FromRun(f.write(t, dir), "")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// openTemp opens a new SQLite history in a temporary directory.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "history.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
