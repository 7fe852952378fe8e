package ingest

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestSummarizeKnownInputs: 3 warm-up runs (absurd throughputs, so keeping
// any of them would show), 10 measured runs of 1000..10000 records/s and
// one failed measured run. By hand: mean 5500, sd = 1000·√(82.5/9) =
// 3027.6503541, half-width = t(0.975, 9) · sd / √10 = 2.2621571628 ·
// 957.4271078 = 2165.8505897 (bc).
func TestSummarizeKnownInputs(t *testing.T) {
	t.Parallel()
	var runs []RunResult
	for k := 1; k <= 3; k++ {
		runs = append(runs, RunResult{Run: k, Warmup: true, Throughput: 1e9})
	}
	for k := 1; k <= 10; k++ {
		runs = append(runs, RunResult{Run: 3 + k, Throughput: float64(k) * 1000})
	}
	runs = append(runs, RunResult{Run: 14, Err: errors.New("out of memory")})
	runs = append(runs, RunResult{Run: 15, Warmup: true, Err: errors.New("warm-up failure")})
	runs = append(runs, RunResult{Run: 16, Interrupted: true, Err: context.Canceled})
	p := Summarize(5000, runs)
	if p.Records != 5000 || p.Runs != 16 || p.N != 10 || p.Failed != 1 || p.WarmupFailed != 1 || p.Cause != "out of memory" {
		t.Fatalf("counts: %+v", p)
	}
	if !near(p.Mean, 5500, 1e-9) || !near(p.SD, 3027.650354097491, 1e-6) ||
		!near(p.Lo, 5500-2165.850589669887, 1e-4) || !near(p.Hi, 5500+2165.850589669887, 1e-4) || !p.CIDefined {
		t.Fatalf("statistics: mean %.6f sd %.6f CI [%.6f, %.6f]", p.Mean, p.SD, p.Lo, p.Hi)
	}
}

func TestSummarizeSmallSamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		runs []RunResult
		want PointStats
	}{
		{"none", nil, PointStats{Records: 1}},
		{"only warm-up", []RunResult{{Warmup: true, Throughput: 5}}, PointStats{Records: 1, Runs: 1}},
		{"one measured", []RunResult{{Throughput: 7}}, PointStats{Records: 1, Runs: 1, N: 1, Mean: 7, Lo: 7, Hi: 7}},
		{"all failed", []RunResult{{Err: errors.New("a")}, {Err: errors.New("b")}}, PointStats{Records: 1, Runs: 2, Failed: 2, Cause: "a"}},
		{"two measured", []RunResult{{Throughput: 1}, {Throughput: 3}},
			// t(0.975, 1) = 12.7062047362, sd = √2, half = 12.7062047362
			PointStats{Records: 1, Runs: 2, N: 2, Mean: 2, SD: math.Sqrt2, Lo: 2 - 12.706204736174698, Hi: 2 + 12.706204736174698, CIDefined: true}},
	}
	for _, tc := range tests {
		got := Summarize(1, tc.runs)
		if !near(got.Lo, tc.want.Lo, 1e-8) || !near(got.Hi, tc.want.Hi, 1e-8) || !near(got.SD, tc.want.SD, 1e-12) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		got.Lo, got.Hi, got.SD = tc.want.Lo, tc.want.Hi, tc.want.SD
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestSweepConfigValidate(t *testing.T) {
	t.Parallel()
	good := SweepConfig{Run: RunConfig{Sources: 2, Batch: 10}, From: 100, To: 300, Step: 100, Runs: 3, WarmupRuns: 1, OnError: OnErrorContinue}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := good.Loads(); !reflect.DeepEqual(got, []int64{100, 200, 300}) {
		t.Fatalf("loads %v", got)
	}
	study := SweepConfig{From: DefaultFrom, To: DefaultTo, Step: DefaultStep}
	if n := len(study.Loads()); n != 33 {
		t.Fatalf("the study's sweep has 33 loads, got %d", n)
	}
	if got := (SweepConfig{From: 5, To: 12, Step: 5}).Loads(); !reflect.DeepEqual(got, []int64{5, 10}) {
		t.Fatalf("loads past --to: %v", got)
	}
	for _, tc := range []struct {
		name string
		mod  func(*SweepConfig)
		want string
	}{
		{"from > to", func(c *SweepConfig) { c.From = 400 }, "--from (400) must not be greater than --to (300)"},
		{"step 0", func(c *SweepConfig) { c.Step = 0 }, "--step must be at least 1"},
		{"from 0", func(c *SweepConfig) { c.From = 0 }, "--from must be at least 1"},
		{"runs = warm-up", func(c *SweepConfig) { c.Runs = 1 }, "--runs (1) must be greater than --warmup-runs (1)"},
		{"negative warm-up", func(c *SweepConfig) { c.WarmupRuns = -1 }, "--warmup-runs must not be negative"},
		{"on-error", func(c *SweepConfig) { c.OnError = "maybe" }, `--on-error must be continue or stop (got "maybe")`},
		{"sources", func(c *SweepConfig) { c.Run.Sources = 0 }, "--sources must be at least 1"},
		{"batch", func(c *SweepConfig) { c.Run.Batch = 0 }, "--batch must be at least 1"},
	} {
		c := good
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// sweepRecord collects what the hooks saw.
type sweepRecord struct {
	runs   []RunResult
	points []PointStats
}

func (s *sweepRecord) hooks() SweepHooks {
	return SweepHooks{
		Run:   func(r RunResult) error { s.runs = append(s.runs, r); return nil },
		Point: func(p PointStats) error { s.points = append(s.points, p); return nil },
	}
}

// failingAt fails every batch of run `run` at load `load` (runs counted by
// resets), so the failure is deterministic.
func failingAt(st *memStore, load int64, run int64) func(int64, int64) error {
	return func(records, _ int64) error {
		if records == load && st.resets.Load()%4 == run%4 {
			return errors.New("server overloaded")
		}
		return nil
	}
}

func TestSweepRecordsFailuresAndContinues(t *testing.T) {
	t.Parallel()
	for _, mode := range []OnError{OnErrorContinue, OnErrorStop} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			st := newMemStore(3)
			// 4 runs per load: reset numbers 1-4 are load 100, 5-8 load 200;
			// the third run of load 200 is reset 7 (7 % 4 == 3).
			st.fail = failingAt(st, 200, 3)
			cfg := SweepConfig{Run: RunConfig{Sources: 2, Batch: 16, Seed: 3, Verify: true}, From: 100, To: 300, Step: 100, Runs: 4, WarmupRuns: 1, OnError: mode}
			var seen sweepRecord
			h := seen.hooks()
			h.BeforeRun = func(records int64, run int) { st.load.Store(records) }
			recs, _ := recorders(2)
			out, err := Sweep(t.Context(), st, cfg, recs, h)
			if err != nil {
				t.Fatal(err)
			}
			wantRuns := 12
			if mode == OnErrorStop {
				wantRuns = 7
			}
			if out.Runs != wantRuns || len(seen.runs) != wantRuns || out.Failed != 1 || st.resets.Load() != int64(wantRuns) {
				t.Fatalf("%d runs (%d seen, %d failed, %d resets), want %d runs with 1 failure, each after a reset", out.Runs, len(seen.runs), out.Failed, st.resets.Load(), wantRuns)
			}
			failed := seen.runs[6]
			if failed.Records != 200 || failed.Run != 3 || !strings.Contains(failed.Cause(), "server overloaded") {
				t.Fatalf("7th run: %+v", failed)
			}
			for i, r := range seen.runs {
				if r.Warmup != (r.Run == 1) || r.Run != i%4+1 {
					t.Fatalf("run %d: number %d warm-up %v", i, r.Run, r.Warmup)
				}
			}
			p := seen.points[1]
			wantN := 2 // runs 2 and 4; run 1 is warm-up, run 3 failed
			if mode == OnErrorStop {
				wantN = 1
			}
			if p.Records != 200 || p.N != wantN || p.Failed != 1 || !strings.Contains(p.Cause, "server overloaded") {
				t.Fatalf("point of load 200: %+v", p)
			}
			if mode == OnErrorContinue {
				if len(seen.points) != 3 || seen.points[0].N != 3 || seen.points[2].N != 3 || out.StoppedBy != nil {
					t.Fatalf("points %+v, stopped by %v", seen.points, out.StoppedBy)
				}
			} else {
				if len(seen.points) != 2 || !p.Partial || out.StoppedBy == nil || out.StoppedBy.Run != 3 {
					t.Fatalf("stop: points %+v, stopped by %+v", seen.points, out.StoppedBy)
				}
			}
		})
	}
}

func TestSweepInterrupt(t *testing.T) {
	t.Parallel()
	st := newMemStore(1)
	ctx, cancel := context.WithCancel(t.Context())
	var seen sweepRecord
	h := seen.hooks()
	h.BeforeRun = func(records int64, run int) {
		if records == 20 && run == 3 {
			st.block = true
			time.AfterFunc(10*time.Millisecond, cancel)
		}
	}
	cfg := SweepConfig{Run: RunConfig{Sources: 2, Batch: 4, Verify: true}, From: 10, To: 30, Step: 10, Runs: 3, WarmupRuns: 1, OnError: OnErrorContinue}
	recs, _ := recorders(2)
	out, err := Sweep(ctx, st, cfg, recs, h)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || out.Runs != 5 || out.Failed != 0 {
		t.Fatalf("outcome %+v", out)
	}
	// load 10 complete; load 20 partial with its one measured run
	if len(seen.points) != 2 || seen.points[0].Partial || !seen.points[1].Partial || seen.points[1].N != 1 {
		t.Fatalf("points %+v", seen.points)
	}
}

func TestSweepHookErrorEnds(t *testing.T) {
	t.Parallel()
	st := newMemStore(1)
	disk := errors.New("no space left on device")
	cfg := SweepConfig{Run: RunConfig{Sources: 1, Batch: 4}, From: 10, To: 30, Step: 10, Runs: 2, WarmupRuns: 0, OnError: OnErrorContinue}
	recs, _ := recorders(1)
	_, err := Sweep(t.Context(), st, cfg, recs, SweepHooks{Run: func(RunResult) error { return disk }})
	if !errors.Is(err, disk) || st.resets.Load() != 1 {
		t.Fatalf("err %v after %d runs: a result that cannot be saved must end the sweep at once", err, st.resets.Load())
	}
}
