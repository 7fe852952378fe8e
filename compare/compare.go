// Package compare tells whether one run differs from another beyond noise:
// per operation and figure (throughput, mean, p50, p99, p99.9) the change,
// its confidence interval and whether it is significant. The uncertainty
// comes from each run's per-second series with its autocorrelation taken
// into account — consecutive seconds of a benchmark are not independent
// (a compaction, a GC pause or a cold cache spans several), so treating
// them as independent samples would call noise a regression. As latte
// does, the variance of a series' mean is inflated by the lag-1
// autocorrelation (an AR(1) effective sample size), and the two runs are
// compared with Welch's t-test. docs/compare.md gives the method.
package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/stats"
)

// Figures compared for every operation, in table order.
var Figures = []string{"throughput", "mean", "p50", "p99", "p99.9"}

// HigherIsBetter reports the direction of a figure: throughput up is good,
// latency up is bad.
func HigherIsBetter(figure string) bool { return figure == "throughput" }

// Row is one operation's figure in two runs.
type Row struct {
	Op, Figure string
	// Base and New are the whole-run figures (ops/s, or µs), as the runs'
	// summaries give them.
	Base, New float64
	// Change is (New - Base) / Base of the whole-run figures; Lo and Hi
	// bound it at the level asked, with the uncertainty of the per-second
	// series. NaN where a run has too few seconds.
	Change, Lo, Hi float64
	// P is the two-sided p-value of the change (Welch's t on the
	// per-second series' standard error).
	P float64
	// Significant: the interval excludes no change.
	Significant bool
	// Seconds of each series and their effective sample sizes after the
	// autocorrelation correction.
	NBase, NNew     int
	EffBase, EffNew float64
	Note            string
}

// Better reports whether the change is an improvement (meaningful only when
// Significant).
func (r Row) Better() bool {
	if HigherIsBetter(r.Figure) {
		return r.Change > 0
	}
	return r.Change < 0
}

// Runs compares new against base at the confidence level (0.95 for 95 %).
// Every operation of either run gets a row per figure.
func Runs(base, new *result.Run, level float64) ([]Row, error) {
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("confidence level %g must be in (0, 1)", level)
	}
	bs, err := seriesOf(base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", base.Dir, err)
	}
	ns, err := seriesOf(new)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", new.Dir, err)
	}
	bsum, nsum := summaryOf(base), summaryOf(new)
	ops := map[string]bool{}
	for op := range bsum.Ops {
		ops[op] = true
	}
	for op := range nsum.Ops {
		ops[op] = true
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	var rows []Row
	for _, op := range names {
		bo, bok := bsum.Ops[op]
		no, nok := nsum.Ops[op]
		for _, fig := range Figures {
			r := Row{Op: op, Figure: fig, Base: bo.Figure(fig), New: no.Figure(fig)}
			switch {
			case !bok || bo.Count == 0:
				r.Note = "not in the base run"
				r.Change, r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			case !nok || no.Count == 0:
				r.Note = "not in the new run"
				r.Change, r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			default:
				r.Change = (r.New - r.Base) / r.Base
				test(&r, bs[op][fig], ns[op][fig], level)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func summaryOf(r *result.Run) result.Summary {
	if r.Summary != nil {
		return *r.Summary
	}
	s, err := r.Summarize()
	if err != nil {
		return result.Summary{Ops: map[string]result.OpSummary{}}
	}
	return s
}

// seriesOf turns a run's measured seconds into per-second series: op ->
// figure -> one value a second. Warm-up, drain and short last intervals
// (under half a second) are left out; latency figures skip seconds without
// a completed operation.
func seriesOf(r *result.Run) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	ops := map[string]bool{}
	for _, iv := range r.Intervals {
		for op := range iv.Ops {
			ops[op] = true
		}
	}
	for op := range ops {
		out[op] = map[string][]float64{}
	}
	for _, iv := range r.Intervals {
		d := iv.End - iv.Start
		if iv.Warmup || iv.Drain || d < 0.5 {
			continue
		}
		for op := range ops {
			oi := iv.Ops[op]
			out[op]["throughput"] = append(out[op]["throughput"], float64(oi.Count)/d)
			if oi.Count == 0 {
				continue
			}
			h, err := result.DecodeHist(oi.Hist)
			if err != nil {
				return nil, fmt.Errorf("interval at %.0fs, %s: %w", iv.Start, op, err)
			}
			out[op]["mean"] = append(out[op]["mean"], h.Mean())
			out[op]["p50"] = append(out[op]["p50"], float64(h.ValueAtQuantile(50)))
			out[op]["p99"] = append(out[op]["p99"], float64(h.ValueAtQuantile(99)))
			out[op]["p99.9"] = append(out[op]["p99.9"], float64(h.ValueAtQuantile(99.9)))
		}
	}
	return out, nil
}

// ErrTooShort is a series with fewer than 3 seconds: no variance to tell
// noise from change.
var ErrTooShort = errors.New("fewer than 3 measured seconds")

// test fills the row's interval and p-value from the two series.
func test(r *Row, b, n []float64, level float64) {
	r.NBase, r.NNew = len(b), len(n)
	r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN()
	w, err := Welch(b, n, level)
	if err != nil {
		r.Note = err.Error()
		return
	}
	r.EffBase, r.EffNew, r.P = w.EffA, w.EffB, w.P
	mb := stats.Mean(b)
	if mb == 0 {
		r.Note = "base per-second mean is 0"
		return
	}
	// The whole-run change carries the uncertainty the per-second series
	// show: the standard error of the difference of their means, relative
	// to the base's per-second mean, with Welch's degrees of freedom. So
	// the interval always holds the change it qualifies.
	if math.IsInf(w.DF, 1) {
		r.Lo, r.Hi = r.Change, r.Change
		r.Significant = r.Change != 0
		r.P = 1
		if r.Significant {
			r.P = 0
		}
		return
	}
	se := (w.Hi - w.Diff) / stats.TQuantile(0.5+level/2, w.DF) / math.Abs(mb)
	half := (w.Hi - w.Diff) / math.Abs(mb)
	r.Lo, r.Hi = r.Change-half, r.Change+half
	r.P = 2 * (1 - stats.TCDF(math.Abs(r.Change)/se, w.DF))
	r.Significant = r.Lo > 0 || r.Hi < 0
}

// WelchResult is Welch's t-test of two autocorrelated series' means.
type WelchResult struct {
	Diff, Lo, Hi float64 // mean(b) - mean(a) and its confidence interval
	T, DF, P     float64
	EffA, EffB   float64 // effective sample sizes
}

// Welch compares the means of series a and b with Welch's t-test, each
// mean's variance inflated for lag-1 autocorrelation: var(mean) = s²/n_eff
// with n_eff = n(1-ρ)/(1+ρ) for ρ > 0 (an AR(1) process), never more than
// n and never under 2.
func Welch(a, b []float64, level float64) (WelchResult, error) {
	var w WelchResult
	if len(a) < 3 || len(b) < 3 {
		return w, ErrTooShort
	}
	ma, mb := stats.Mean(a), stats.Mean(b)
	sa, sb := stats.SD(a), stats.SD(b)
	w.EffA, w.EffB = EffectiveN(a), EffectiveN(b)
	va, vb := sa*sa/w.EffA, sb*sb/w.EffB
	w.Diff = mb - ma
	se := math.Sqrt(va + vb)
	if se == 0 {
		// Two constant series: any difference is exact.
		w.Lo, w.Hi, w.T, w.DF = w.Diff, w.Diff, math.Inf(1), math.Inf(1)
		w.P = 1
		if w.Diff != 0 {
			w.P = 0
		}
		return w, nil
	}
	// Welch–Satterthwaite degrees of freedom on the effective sizes.
	w.DF = (va + vb) * (va + vb) / (va*va/(w.EffA-1) + vb*vb/(w.EffB-1))
	w.T = w.Diff / se
	w.P = 2 * (1 - stats.TCDF(math.Abs(w.T), w.DF))
	half := stats.TQuantile(0.5+level/2, w.DF) * se
	w.Lo, w.Hi = w.Diff-half, w.Diff+half
	return w, nil
}

// EffectiveN is the number of independent samples a series is worth given
// its lag-1 autocorrelation.
func EffectiveN(xs []float64) float64 {
	n := float64(len(xs))
	rho := Lag1(xs)
	eff := n
	if rho > 0 {
		eff = n * (1 - rho) / (1 + rho)
	}
	return math.Min(n, math.Max(2, eff))
}

// Lag1 is the lag-1 autocorrelation of xs (0 for a constant series).
func Lag1(xs []float64) float64 {
	if len(xs) < 3 {
		return 0
	}
	m := stats.Mean(xs)
	var num, den float64
	for i, x := range xs {
		d := x - m
		den += d * d
		if i > 0 {
			num += d * (xs[i-1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}
