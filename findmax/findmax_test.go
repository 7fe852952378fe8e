package findmax

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// capacity is a fake database that holds every rate up to limit.
func capacity(limit float64, calls *[]float64) Runner {
	return func(_ context.Context, n int, rate float64) Step {
		*calls = append(*calls, rate)
		return Step{N: n, Rate: rate, Verdict: Verdict{Pass: rate <= limit, Achieved: math.Min(rate, limit)}}
	}
}

func TestSearchBrackets(t *testing.T) {
	s := Search{From: 100, Max: 1e6, Precision: 0.05, MaxSteps: 20, MinShare: 0.95}
	var calls []float64
	out := s.Run(context.Background(), capacity(1000, &calls))
	if out.Max != 1000 || out.Lo != 1000 || out.Hi <= 1000 || out.Hi/out.Lo-1 > 0.05 {
		t.Fatalf("max %v bracket [%v, %v), want 1000 within 5 %% (rates %v)", out.Max, out.Lo, out.Hi, calls)
	}
	// The ramp doubles: 100 200 400 800 1600, then bisects.
	for i, want := range []float64{100, 200, 400, 800, 1600, 1200} {
		if calls[i] != want {
			t.Fatalf("rates %v, want the ramp then bisection", calls)
		}
	}
}

func TestSearchEnds(t *testing.T) {
	var calls []float64
	tests := []struct {
		name   string
		s      Search
		limit  float64
		max    float64
		reason string
	}{
		{"first step breaks", Search{From: 500, Max: 1e6, Precision: 0.05, MaxSteps: 20}, 100, 0, "first rate tried"},
		{"holds up to max", Search{From: 100, Max: 300, Precision: 0.05, MaxSteps: 20}, 1e9, 300, "held up to --max-rate"},
		{"step budget", Search{From: 1, Max: 1e9, Precision: 0.0001, MaxSteps: 6}, 1000, 32, "--max-steps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = nil
			out := tt.s.Run(context.Background(), capacity(tt.limit, &calls))
			if out.Max != tt.max || !strings.Contains(out.Reason, tt.reason) || len(calls) > tt.s.MaxSteps {
				t.Fatalf("max %v reason %q after %d steps; want %v, %q", out.Max, out.Reason, len(calls), tt.max, tt.reason)
			}
		})
	}
}

func TestSearchRepeatsCloseAndStopsOnInterrupt(t *testing.T) {
	s := Search{From: 100, Max: 1e6, Precision: 0.05, MaxSteps: 20, RepeatClose: true}
	// verdicts gives, per rate, the verdicts of its successive runs (all
	// close); a rate not listed holds up to 400 and breaks above, far.
	cases := []struct {
		name     string
		rate     float64 // the rate whose runs are close
		verdicts []bool  // its successive verdicts
		wantHold bool
		wantRuns int
	}{
		{"a close hold that breaks twice on its repeats does not hold", 200, []bool{true, false, false}, false, 3},
		{"a close hold confirmed by its repeat holds", 200, []bool{true, true}, true, 2},
		{"a close break that holds on two repeats holds", 400, []bool{false, true, true}, true, 3},
		{"a close break confirmed by its repeat breaks", 400, []bool{false, false}, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := map[float64]int{}
			out := s.Run(context.Background(), func(_ context.Context, k int, rate float64) Step {
				i := runs[rate]
				runs[rate]++
				pass := rate <= 400
				close := false
				if rate == c.rate && i < len(c.verdicts) {
					pass, close = c.verdicts[i], true
				}
				return Step{N: k, Rate: rate, Verdict: Verdict{Pass: pass, Close: close}}
			})
			if held := out.Max >= c.rate; held != c.wantHold {
				t.Errorf("rate %v held: %v, want %v (max %v, bracket [%v, %v))", c.rate, held, c.wantHold, out.Max, out.Lo, out.Hi)
			}
			if runs[c.rate] != c.wantRuns {
				t.Errorf("rate %v ran %d times, want %d", c.rate, runs[c.rate], c.wantRuns)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := s.Run(ctx, func(_ context.Context, k int, rate float64) Step {
		if k == 3 {
			cancel()
		}
		return Step{N: k, Rate: rate, Verdict: Verdict{Pass: true}}
	})
	if !out.Interrupted || len(out.Steps) != 3 {
		t.Errorf("interrupted at step 3: %+v", out)
	}
}

func TestJudge(t *testing.T) {
	sum := result.Summary{DurationSeconds: 10, Ops: map[string]result.OpSummary{
		"post":      {Count: 900, OpsPerSec: 90, P99US: 40_000, MeanUS: 5_000},
		"timeline":  {Count: 1000, OpsPerSec: 100, P99US: 60_000},
		"async-lag": {Count: 10, OpsPerSec: 1, P99US: 9_000_000},
	}}
	rules, err := ParseSLO("p99<50ms")
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(sum, 200, rules, 0.9)
	if v.Pass || v.Achieved != 190 || len(v.Reasons) != 1 || !strings.Contains(v.Reasons[0], "timeline p99") {
		t.Errorf("verdict %+v: want timeline p99 broken only (async-lag is not a client operation)", v)
	}
	rules, _ = ParseSLO("p99:post<50ms")
	if v := Judge(sum, 200, rules, 0.9); !v.Pass || v.Close {
		t.Errorf("post's p99 40 ms under 50, 95 %% achieved of 90 %%: %+v, want a clear hold", v)
	}
	rules, _ = ParseSLO("p99:post<42ms")
	if v := Judge(sum, 200, rules, 0.9); !v.Pass || !v.Close {
		t.Errorf("post's p99 40 ms under 42: %+v, want a close hold", v)
	}
	if v := Judge(sum, 400, rules, 0.9); v.Pass {
		t.Errorf("190 of 400 ops/s achieved held: %+v", v)
	}
}

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		spec, err string
		n         int
	}{
		{"p99<50ms", "", 1},
		{"p99<50ms, p99.9:post<200ms,mean<5ms", "", 3},
		{"", "required", 0},
		{"p99>50ms", "want FIGURE", 0},
		{"p42<50ms", "unknown figure", 0},
		{"p99<soon", "not a positive duration", 0},
		{"p99<-5ms", "not a positive duration", 0},
	} {
		rules, err := ParseSLO(tc.spec)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) || len(rules) != tc.n {
			t.Errorf("ParseSLO(%q) = %d rules, %v; want %d, %q", tc.spec, len(rules), err, tc.n, tc.err)
		}
	}
	if r, _ := ParseSLO("p99:post<50ms"); r[0].Op != "post" || r[0].Limit != 50*time.Millisecond {
		t.Errorf("parsed %+v", r)
	}
}

// TestStepSummaryLeavesOutWarmup: a step sized to the rate marks no warm-up
// itself; its verdict must still leave out the first seconds.
func TestStepSummaryLeavesOutWarmup(t *testing.T) {
	dir := t.TempDir()
	w, err := result.Create(dir, result.Header{Workload: "wiki", Operations: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, us := range []int64{900_000, 1_000, 1_000} {
		h := result.NewHist()
		for k := 0; k < 100; k++ {
			if err := h.RecordValue(us); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		// Intervals start 0.3 s in, after the run's setup.
		iv := result.Interval{Start: 0.3 + float64(i), End: 1.3 + float64(i), Ops: map[string]result.OpInterval{"read": {Count: 100, Hist: enc}}}
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		warmup       time.Duration
		p99Below, ps float64
	}{{0, 1e6, 100}, {time.Second, 2_000, 100}} {
		sum, err := stepSummary(dir, tc.warmup)
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Ops["read"]
		if float64(r.P99US) >= tc.p99Below || math.Abs(r.OpsPerSec-tc.ps) > 1 {
			t.Errorf("warm-up %s: p99 %d µs, %.1f ops/s; want p99 below %g µs at %g ops/s", tc.warmup, r.P99US, r.OpsPerSec, tc.p99Below, tc.ps)
		}
	}
}

// Confirm backs off one precision step at a time until a longer run holds,
// at most the given number of times, and stops on an interrupt.
func TestConfirmBacksOff(t *testing.T) {
	s := Search{Precision: 0.1}
	for _, tc := range []struct {
		name      string
		holdsUpTo float64 // a run at or below it holds
		backoffs  int
		cancelAt  int // cancel the context on this run (0: never)
		want      float64
		wantRates []float64
	}{
		{"holds at once", 27200, 3, 0, 27200, []float64{27200}},
		{"one back-off", 25000, 3, 0, 24727, []float64{27200, 24727}},
		{"two back-offs", 22500, 3, 0, 22479, []float64{27200, 24727, 22479}},
		{"none holds", 1000, 2, 0, 0, []float64{27200, 24727, 22479}},
		{"no back-off asked", 25000, 0, 0, 0, []float64{27200}},
		{"interrupted", 1000, 5, 2, 0, []float64{27200, 24727}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rates []float64
			got, steps := s.Confirm(ctx, 27200, tc.backoffs, func(ctx context.Context, n int, rate float64) Step {
				rates = append(rates, rate)
				if n != len(rates) {
					t.Errorf("run %d numbered %d", len(rates), n)
				}
				if n == tc.cancelAt {
					cancel()
					return Step{N: n, Rate: rate, Err: context.Canceled}
				}
				return Step{N: n, Rate: rate, Verdict: Verdict{Pass: rate <= tc.holdsUpTo}}
			})
			if got != tc.want || len(steps) != len(tc.wantRates) || fmt.Sprint(rates) != fmt.Sprint(tc.wantRates) {
				t.Errorf("Confirm = %g after %v (%d steps), want %g after %v", got, rates, len(steps), tc.want, tc.wantRates)
			}
		})
	}
	if got := roundRate(45.67); got != 45.7 {
		t.Errorf("roundRate(45.67) = %g", got)
	}
}

func TestCheckRules(t *testing.T) {
	ops := []string{"post", "userline", "timeline"}
	for _, tc := range []struct{ spec, err string }{
		{"p99<50ms", ""},
		{"p99:post<50ms,mean:timeline<5ms", ""},
		{"p99:bogus<1ms", `no operation "bogus" (they send: post, userline, timeline)`},
		{"p99<50ms,p99.9:async-lag<1s", `no operation "async-lag"`},
	} {
		rules, err := ParseSLO(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckRules(rules, ops)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("CheckRules(%q) = %v, want error containing %q", tc.spec, err, tc.err)
		}
	}
}
