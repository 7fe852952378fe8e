// Package compare tells whether one run differs from another beyond noise:
// per operation and figure (throughput, mean, p50, p99, p99.9) the change,
// its confidence interval and whether it is significant. The uncertainty
// comes from each run's per-second series with its autocorrelation taken
// into account — consecutive seconds of a benchmark are not independent
// (a compaction, a GC pause or a cold cache spans several), so treating
// them as independent samples would call noise a regression. As latte
// does, the variance of a series' mean is inflated by the lag-1
// autocorrelation (an AR(1) effective sample size), and the two runs are
// compared with Welch's t-test on the log scale — the ratio of the
// per-second means for throughput, of the per-second geometric means for
// latency figures — so one stalled second cannot make a percentile
// significant and no interval reaches below -100 %.
// docs/compare.md gives the method.
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
	// Change is (New - Base) / Base of the whole-run figures: what the
	// runs' summaries say, shown beside them but not what is tested.
	Change float64
	// Shift is the change of the per-second series: of its mean for
	// throughput, of its geometric mean for a latency figure (for a
	// percentile, of each second's percentile). It is the quantity the
	// interval and the test are about. Lo and Hi bound it at the level asked, computed
	// on the log scale (never below -1). NaN where a run is too short.
	Shift, Lo, Hi float64
	// P is the two-sided p-value of the shift (Welch's t on the log scale,
	// autocorrelation-corrected).
	P float64
	// Significant: the interval excludes no change.
	Significant bool
	// Seconds of each series and their effective sample sizes after the
	// autocorrelation correction.
	NBase, NNew     int
	EffBase, EffNew float64
	Note            string
}

// Better reports whether the shift is an improvement (meaningful only when
// Significant).
func (r Row) Better() bool {
	if HigherIsBetter(r.Figure) {
		return r.Shift > 0
	}
	return r.Shift < 0
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
				r.Change, r.Shift, r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			case !nok || no.Count == 0:
				r.Note = "not in the new run"
				r.Change, r.Shift, r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
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

// MinSeconds is the fewest measured seconds a run's series needs for a
// verdict. The test rests on the lag-1 autocorrelation ρ of each series:
// its estimate has a standard error of about 1/√n, which is 0.32 at 10
// seconds — already enough to mistake ρ = 0.5 (where the AR(1) correction
// divides the sample size by 3) for no correlation at all, and the error
// grows fast below that. Under 10 seconds the interval would be a guess, so
// a row gets only its change and a note saying why.
const MinSeconds = 10

// ErrTooShort is a series shorter than MinSeconds.
var ErrTooShort = fmt.Errorf("fewer than %d measured seconds", MinSeconds)

// test fills the row's shift, interval and p-value from the two per-second
// series, on the log scale: a figure's ratio new/base is what a reader
// means by "+20 %" or "-50 %", its logarithm is symmetric (a halving and a
// doubling are equally far from no change), and exp of an interval of a
// logarithm can never go below -100 %.
//
// Throughput is tested as the ratio of the per-second means (LogRatio):
// total operations over time is what a user means by it, and a second with
// no completed operation (a stall) is a 0 that a logarithm of each second
// could not take.
//
// A latency figure is tested on the logarithm of each second's figure
// (GeoRatio): the shift is the change of the geometric mean of the
// per-second values, and for a percentile the series is that percentile of
// each second — not the whole-run percentile. A whole-run p99.9 is set by
// the worst seconds: one stalled second (a GC pause, a checkpoint) whose
// latencies are 100 times larger moves it by orders of magnitude, and
// centring an interval whose width comes from the per-second series on
// that whole-run change called such a run "WORSE". As one value in a
// series of n, a single outlying second gives Welch's t of at most about 1
// however large it is (its own spread is what the standard error sees),
// so it can never be significant at 95 %; spread stalls need about 4 of
// the seconds (t ≈ √k for k of them), a regression that lasts is found.
// Logarithms keep the interval above -100 %; the ratio of arithmetic means
// of the latencies would not do here, as one huge second dominates such a
// mean and its delta-method interval. We chose this over a block bootstrap
// over seconds (resampling blocks of seconds and merging their
// histograms): it needs no random resampling and no histogram merges per
// replicate, and uses the very autocorrelation correction the throughput
// uses, so every figure of a row is judged the same way.
func test(r *Row, b, n []float64, level float64) {
	r.NBase, r.NNew = len(b), len(n)
	r.Shift, r.Lo, r.Hi, r.P = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	if len(b) < MinSeconds || len(n) < MinSeconds {
		r.Note = fmt.Sprintf("too short for a verdict: %d and %d measured seconds, the test needs %d in each", len(b), len(n), MinSeconds)
		return
	}
	ratio := GeoRatio
	if r.Figure == "throughput" {
		ratio = LogRatio
	}
	w, err := ratio(b, n, level)
	if err != nil {
		r.Note = err.Error()
		return
	}
	r.EffBase, r.EffNew, r.P = w.EffA, w.EffB, w.P
	r.Shift, r.Lo, r.Hi = w.Diff, w.Lo, w.Hi
	r.Significant = r.Lo > 0 || r.Hi < 0
}

// GeoRatio compares two series of positive values as the ratio of their
// geometric means: Welch's test (autocorrelation-corrected) of the means
// of their logarithms, with Diff, Lo and Hi brought back as ratios minus 1
// (so Lo > -1). Values under 1 (a latency of 0 µs, below the histograms'
// 1 µs resolution) count as 1.
func GeoRatio(a, b []float64, level float64) (WelchResult, error) {
	logs := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = math.Log(math.Max(x, 1))
		}
		return out
	}
	w, err := Welch(logs(a), logs(b), level)
	if err != nil {
		return w, err
	}
	w.Diff, w.Lo, w.Hi = math.Expm1(w.Diff), math.Expm1(w.Lo), math.Expm1(w.Hi)
	return w, nil
}

// ErrZeroMean is a per-second series whose mean is 0 or less: it has no
// ratio to another.
var ErrZeroMean = errors.New("a per-second mean is 0: no ratio")

// LogRatio compares the means of two autocorrelated series as a ratio:
// Diff is mean(b)/mean(a) - 1, and Lo, Hi its interval, computed on the log
// scale with the delta method (var log m ≈ var m / m²) and each mean's
// variance inflated for lag-1 autocorrelation as in Welch. T, DF and P are
// Welch's test of the log ratio, so P < 1 - level exactly when the interval
// excludes 0. Lo is never below -1 (-100 %).
func LogRatio(a, b []float64, level float64) (WelchResult, error) {
	var w WelchResult
	if len(a) < MinSeconds || len(b) < MinSeconds {
		return w, ErrTooShort
	}
	ma, mb := stats.Mean(a), stats.Mean(b)
	if !(ma > 0 && mb > 0) {
		return w, ErrZeroMean
	}
	sa, sb := stats.SD(a), stats.SD(b)
	w.EffA, w.EffB = EffectiveN(a), EffectiveN(b)
	va, vb := sa*sa/w.EffA/(ma*ma), sb*sb/w.EffB/(mb*mb)
	d := math.Log(mb / ma)
	w.Diff = math.Expm1(d)
	se := math.Sqrt(va + vb)
	if se == 0 {
		w.Lo, w.Hi, w.T, w.DF = w.Diff, w.Diff, math.Inf(1), math.Inf(1)
		w.P = 1
		if d != 0 {
			w.P = 0
		}
		return w, nil
	}
	w.DF = (va + vb) * (va + vb) / (va*va/(w.EffA-1) + vb*vb/(w.EffB-1))
	w.T = d / se
	w.P = TwoSidedP(w.T, w.DF)
	half := stats.TQuantile(0.5+level/2, w.DF) * se
	w.Lo, w.Hi = math.Expm1(d-half), math.Expm1(d+half)
	return w, nil
}

// TwoSidedP is the two-sided p-value of Student's t with df degrees of
// freedom: 2 P(T > |t|), from the lower tail at -|t| (the survival function
// by symmetry) rather than 1 - CDF(|t|), which cancels to 0 or to rounding
// noise once the p-value falls below about 1e-12.
func TwoSidedP(t, df float64) float64 {
	return 2 * stats.TCDF(-math.Abs(t), df)
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
	if len(a) < MinSeconds || len(b) < MinSeconds {
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
	w.P = TwoSidedP(w.T, w.DF)
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

// Differences names what sets two runs apart beyond the build being
// compared: the workload, the adapter, and the options that change what is
// measured (the data model and the operation mix). Runs that differ in any
// of these measure different things, and a verdict between them answers
// no question a user asked.
func Differences(base, new *result.Run) []string {
	var out []string
	q := func(v string) string {
		if v == "" {
			return "(not recorded)"
		}
		return fmt.Sprintf("%q", v)
	}
	diff := func(what, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s against %s", what, q(a), q(b)))
		}
	}
	diff("workload", base.Header.Workload, new.Header.Workload)
	diff("adapter", base.Header.Adapter, new.Header.Adapter)
	for _, k := range []string{"model", "mix"} {
		diff(k, option(base, k), option(new, k))
	}
	return out
}

// LoadOptions are the header options that set how much load a run
// offered (closed-loop clients, threads and sources, the open-loop rate,
// the batch and the dataset's size): runs that differ in one measured
// another load, which compare says but does not refuse — a change of
// clients or rate between two builds' runs is sometimes the question.
var LoadOptions = []string{"clients", "threads", "sources", "rate", "loop", "batch", "users", "articles", "records", "scale", "requests", "reads", "shards"}

// LoadDifferences names the LoadOptions two runs recorded differently
// ("clients 8 against 16"), in LoadOptions' order.
func LoadDifferences(base, new *result.Run) []string {
	var out []string
	for _, k := range LoadOptions {
		_, inB := base.Header.Options[k]
		_, inN := new.Header.Options[k]
		if !inB && !inN {
			continue
		}
		a, b := option(base, k), option(new, k)
		if a == b {
			continue
		}
		if !inB {
			a = "(not recorded)"
		}
		if !inN {
			b = "(not recorded)"
		}
		out = append(out, fmt.Sprintf("%s %s against %s", k, a, b))
	}
	return out
}

// option is a header option as text ("" when the run has none).
func option(r *result.Run, k string) string {
	v, ok := r.Header.Options[k]
	if !ok || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
