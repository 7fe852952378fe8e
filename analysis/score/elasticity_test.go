package score

import (
	"errors"
	"math"
	"testing"

	"github.com/fieldbench/fieldbench/stats"
)

// linearSets returns request sets ending at xs with Y = 10 + 0.01·X: every
// point lies on one line, so the natural spline through them IS that line
// and the areas can be computed by hand exactly. Spacing the sets 10 s apart
// before the join and 5 s after makes the delta times 0.1 then 0.05, so the
// baseline is 0.1 and every delta after the join is below it.
func linearSets(sd func(x float64) float64, xs ...float64) []Set {
	out := make([]Set, len(xs))
	for i, x := range xs {
		out[i] = Set{X: x, Y: 10 + 0.01*x, SD: sd(x)}
	}
	return out
}

func seq(from, to, step float64) []float64 {
	var xs []float64
	for x := from; x <= to+1e-9; x += step {
		xs = append(xs, x)
	}
	return xs
}

func TestElasticityHandComputed(t *testing.T) {
	t.Parallel()
	constSD := func(float64) float64 { return 0.5 }
	linSD := func(x float64) float64 { return 0.01 * x }
	// Sets before the join end at 10, 20, …, 100 (indices 0–9): Av1 =
	// 10 + 0.01·mean(X) = 10 + 0.01·55 = 10.55; deltas all 0.1 → baseline
	// 0.1. After the join (at 102): sets at 105, 110, …, 160 (indices
	// 10–21), deltas 0.05 (the first one, 105 against 100, too).
	xs := append(seq(10, 100, 10), seq(105, 160, 5)...)
	type want struct {
		stableIdx                 int
		stableAt, windowStart     float64
		av2                       float64
		afterSets                 int
		aAbove, aBelow, b         float64
		transfer, additional, tot float64
		score                     float64
		phases                    map[string]int
	}
	tests := []struct {
		name string
		in   ElasticityInput
		want want
	}{
		{
			// Data settles at 128: the first set ending at or after it is
			// the one at 130 (index 15), and the window of 5 ending there
			// (110…130, reference 105) has every delta below 0.1, so the
			// window straddles the data-settled moment. Stable at 130;
			// window start = end of set 105; Av2 = mean Y of 110…160 =
			// 10 + 0.01·135 = 11.35.
			// Ramp (102, 10.55) → (130, 11.35); curve − ramp is linear:
			// 11.02 − 10.55 = 0.47 at 102, 11.30 − 11.35 = −0.05 at 130,
			// crossing after 28·0.47/0.52 s. Two triangles:
			//   above = ½·0.47·(28·0.47/0.52) = 14·0.47²/0.52 = 5.9473077
			//   below = ½·0.05·(28·0.05/0.52) = 14·0.05²/0.52 = 0.0673077
			// B = 0.5·28 = 14. Score = (A + B)/((0.010 + 0.012)(10.55 + 11.35)).
			name: "data settles late: window straddles it",
			in:   ElasticityInput{Sets: linearSets(constSD, xs...), Join: 102, Settled: 128, Rt1: 0.010, Rt2: 0.012},
			want: want{
				stableIdx: 15, stableAt: 130, windowStart: 105, av2: 11.35, afterSets: 11,
				aAbove: 14 * 0.47 * 0.47 / 0.52, aBelow: 14 * 0.05 * 0.05 / 0.52, b: 14,
				transfer: 26, additional: 2, tot: 28,
				score:  (14*(0.47*0.47+0.05*0.05)/0.52 + 14) / (0.022 * 21.9),
				phases: map[string]int{PhaseBefore: 10, PhaseTransfer: 1, PhaseStable: 11},
			},
		},
		{
			// Unknown data movement: the first window after the join ends
			// at 125 (index 14: sets 105…125, reference 100). Window start
			// 100; Av2 = mean Y of 105…160 = 10 + 0.01·132.5 = 11.325.
			// Ramp (102, 10.55) → (125, 11.325): curve − ramp = 0.47 at
			// 102, 11.25 − 11.325 = −0.075 at 125, over 23 s:
			//   above = 11.5·0.47²/0.545, below = 11.5·0.075²/0.545
			// SD = 0.01·X is a line too: B = ∫₁₀₂¹²⁵ 0.01t dt
			//   = 0.005·(125² − 102²) = 0.005·5221 = 26.105.
			name: "data movement unknown: delta times alone",
			in:   ElasticityInput{Sets: linearSets(linSD, xs...), Join: 102, Settled: math.NaN(), Rt1: 0.01, Rt2: 0.01},
			want: want{
				stableIdx: 14, stableAt: 125, windowStart: 100, av2: 11.325, afterSets: 12,
				aAbove: 11.5 * 0.47 * 0.47 / 0.545, aBelow: 11.5 * 0.075 * 0.075 / 0.545, b: 26.105,
				transfer: math.NaN(), additional: math.NaN(), tot: 23,
				score:  (11.5*(0.47*0.47+0.075*0.075)/0.545 + 26.105) / (0.02 * 21.875),
				phases: map[string]int{PhaseBefore: 10, PhaseStable: 12},
			},
		},
		{
			// Data settles at 103, before the first set after the join
			// ends: stability waits for 5 sets after the join all the same
			// (index 14, at 125), so the additional time is 125 − 103 = 22.
			// Everything else is the previous case with SD = 0.5: B = 11.5.
			name: "data settles early: 5 sets after the join still needed",
			in:   ElasticityInput{Sets: linearSets(constSD, xs...), Join: 102, Settled: 103, Rt1: 0.01, Rt2: 0.01, Window: 5},
			want: want{
				stableIdx: 14, stableAt: 125, windowStart: 100, av2: 11.325, afterSets: 12,
				aAbove: 11.5 * 0.47 * 0.47 / 0.545, aBelow: 11.5 * 0.075 * 0.075 / 0.545, b: 11.5,
				transfer: 1, additional: 22, tot: 23,
				score:  (11.5*(0.47*0.47+0.075*0.075)/0.545 + 11.5) / (0.02 * 21.875),
				phases: map[string]int{PhaseBefore: 10, PhaseStable: 12},
			},
		},
		{
			// Window 2, settled 150: first set at or after 150 is index 19;
			// the window 145, 150 (reference 140) → stable at 150. Window
			// start 140, Av2 = mean Y of 145…160 = 10 + 0.01·152.5 = 11.525.
			// Ramp (102, 10.55) → (150, 11.525), curve − ramp: 0.47 at 102,
			// 11.5 − 11.525 = −0.025 at 150, over 48 s:
			//   above = 24·0.47²/0.495, below = 24·0.025²/0.495; B = 0.5·48 = 24.
			name: "window of 2",
			in:   ElasticityInput{Sets: linearSets(constSD, xs...), Join: 102, Settled: 150, Rt1: 0.01, Rt2: 0.02, Window: 2},
			want: want{
				stableIdx: 19, stableAt: 150, windowStart: 140, av2: 11.525, afterSets: 4,
				aAbove: 24 * 0.47 * 0.47 / 0.495, aBelow: 24 * 0.025 * 0.025 / 0.495, b: 24,
				transfer: 48, additional: 0, tot: 48,
				score:  (24*(0.47*0.47+0.025*0.025)/0.495 + 24) / (0.03 * 22.075),
				phases: map[string]int{PhaseBefore: 10, PhaseTransfer: 8, PhaseStable: 4},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := ComputeElasticity(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			const tol = 1e-7
			checks := []struct {
				name      string
				got, want float64
			}{
				{"baseline", e.Baseline, 0.1}, {"Av1", e.Av1, 10.55}, {"Av2", e.Av2, w.av2},
				{"stable at", e.StableAt, w.stableAt}, {"window start", e.WindowStart, w.windowStart},
				{"A above", e.AAbove, w.aAbove}, {"A below", e.ABelow, w.aBelow}, {"A", e.A, w.aAbove + w.aBelow},
				{"B", e.B, w.b}, {"score", e.Score, w.score},
				{"data transfer", e.DataTransfer, w.transfer}, {"additional", e.Additional, w.additional}, {"total", e.Total, w.tot},
				{"from", e.From, 102}, {"to", e.To, w.stableAt},
				{"ramp from y", e.RampFrom.Y, 10.55}, {"ramp to", e.RampTo.X, w.stableAt}, {"ramp to y", e.RampTo.Y, w.av2},
			}
			for _, c := range checks {
				if !near(c.got, c.want, tol) {
					t.Errorf("%s = %.12g, want %.12g", c.name, c.got, c.want)
				}
			}
			if !e.Stable || e.StableIndex != w.stableIdx || e.BeforeSets != 10 || e.AfterSets != w.afterSets {
				t.Errorf("stable %v at index %d (want %d), %d sets before, %d after (want 10, %d)",
					e.Stable, e.StableIndex, w.stableIdx, e.BeforeSets, e.AfterSets, w.afterSets)
			}
			phases := map[string]int{}
			for _, s := range e.Sets {
				phases[s.Phase]++
			}
			for p, n := range w.phases {
				if phases[p] != n {
					t.Errorf("phases %v, want %v", phases, w.phases)
					break
				}
			}
		})
	}
}

// A curve that rises well above the ramp and dips below it: A must be the
// absolute area, which a brute-force midpoint sum of |spline − ramp| with
// 200,000 steps (an independent method) confirms.
func TestElasticityHumpAgainstBruteForce(t *testing.T) {
	t.Parallel()
	ys := []float64{10, 10.2, 10.1, 10.3, 10.1, 10.2 /* join at 62 */, 14, 18, 13, 9.6, 9.7, 9.65, 9.7, 9.65, 9.7, 9.68, 9.7}
	sets := make([]Set, len(ys))
	for i, y := range ys {
		sets[i] = Set{X: float64(10 * (i + 1)), Y: y, SD: 0.3 + 0.1*float64(i%3)}
	}
	e, err := ComputeElasticity(ElasticityInput{Sets: sets, Join: 62, Settled: 95, Rt1: 0.01, Rt2: 0.009, Detector: DetectorStudy})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float64, len(sets))
	sds := make([]float64, len(sets))
	for i, s := range sets {
		xs[i], sds[i] = s.X, s.SD
	}
	curve, _ := NewSpline(xs, ys)
	band, _ := NewSpline(xs, sds)
	const steps = 200000
	h := (e.To - e.From) / steps
	var a, b float64
	for k := range steps {
		x := e.From + (float64(k)+0.5)*h
		r := e.Av1 + (e.Av2-e.Av1)*(x-e.From)/(e.To-e.From)
		a += math.Abs(curve.At(x)-r) * h
		b += math.Max(0, band.At(x)) * h
	}
	if !near(e.A, a, 1e-6*a) || !near(e.B, b, 1e-6*b) {
		t.Errorf("A = %.9g, B = %.9g; brute force %.9g, %.9g", e.A, e.B, a, b)
	}
	if !(e.ABelow > 0 && e.AAbove > 10*e.ABelow) {
		t.Errorf("the hump must be mostly above the ramp and dip below it: above %g below %g", e.AAbove, e.ABelow)
	}
	if want := (e.A + e.B) / ((0.01 + 0.009) * (e.Av1 + e.Av2)); !near(e.Score, want, 1e-12*want) {
		t.Errorf("score %g, want %g", e.Score, want)
	}
	// Baseline: deltas .2 .1 .2 .2 .1 → median .2. After the join at 62
	// (reference: the set at 60), the first 5 deltas below .2 ending at or
	// after 95 are those of the sets at 110…150 (the delta of 100, 9.6
	// against 13, is 3.4): stable at 150.
	if !near(e.Baseline, 0.2, 1e-12) || e.StableAt != 150 {
		t.Errorf("baseline %g stable at %g, want 0.2 and 150", e.Baseline, e.StableAt)
	}
	// The mean-delta detector on the same sets: capped at 3 × 0.2 = 0.6,
	// the deltas .2 .1 .2 .2 .1 have mean 0.16 and SD √0.003, so the bound
	// is 0.16 + t(0.9995, 4)·√0.003·√(1/5 + 1/5) = 0.458 (loose: 5 deltas).
	// The window 80…120 (capped deltas .6 .6 .6 .1 .05, mean 0.39) is
	// within it, but its times still fall (slope through 70…120 about
	// −1.2 s per set against a bound of t(0.99975, 5)·σ/√17.5 with σ =
	// √(0.026/5)/√2 = 0.051); so are those ending at 130 and 140, which
	// start on the hump. The first flat window is again 110…150.
	if len(e.Verdicts) != 2 || e.Verdicts[0].Detector != DetectorMeanDelta || e.Verdicts[1].Detector != DetectorStudy {
		t.Fatalf("verdicts %+v", e.Verdicts)
	}
	md := e.Verdicts[0]
	wantBound := 0.16 + stats.TQuantile(MeanDeltaLevel, 4)*math.Sqrt(0.003)*math.Sqrt(0.4)
	if !near(md.Threshold, wantBound, 1e-9) || md.StableAt != 150 || !md.Stable {
		t.Errorf("mean-delta: bound %g stable at %g, want %g and 150", md.Threshold, md.StableAt, wantBound)
	}
	if s := Slope(ys, 11, 5); !(s < -1) {
		t.Errorf("slope of the window ending at 120: %g, want below −1", s)
	}
	st := e.Verdicts[1]
	if st.StableAt != e.StableAt || st.Score != e.Score || st.B != e.B || e.BBand != 2*e.B || e.ScoreBand <= e.Score {
		t.Errorf("study verdict %+v does not match the fields (stable %g score %g B %g, band %g, score with the band %g)", st, e.StableAt, e.Score, e.B, e.BBand, e.ScoreBand)
	}
	if want := (e.A + 2*e.B) / ((0.01 + 0.009) * (e.Av1 + e.Av2)); !near(e.ScoreBand, want, 1e-12*want) {
		t.Errorf("score with the ±SD band %g, want %g", e.ScoreBand, want)
	}
}

func TestElasticityNeverStable(t *testing.T) {
	t.Parallel()
	// After the join the sets are 20 s apart: deltas 0.2 > baseline 0.1.
	sets := linearSets(func(float64) float64 { return 0.5 }, append(seq(10, 100, 10), seq(120, 300, 20)...)...)
	e, err := ComputeElasticity(ElasticityInput{Sets: sets, Join: 102, Settled: 130, Rt1: 0.01, Rt2: 0.01})
	if !errors.Is(err, ErrNeverStable) {
		t.Fatalf("err = %v, want ErrNeverStable", err)
	}
	if e.Stable || e.StableIndex != -1 || !math.IsNaN(e.Score) || !math.IsNaN(e.A) || !near(e.Av1, 10.55, 1e-12) || !near(e.Baseline, 0.1, 1e-12) || e.DataTransfer != 28 {
		t.Errorf("partial result: %+v", e)
	}
}

func TestElasticityRejects(t *testing.T) {
	t.Parallel()
	sd := func(float64) float64 { return 0.5 }
	good := linearSets(sd, append(seq(10, 100, 10), seq(105, 160, 5)...)...)
	tests := []struct {
		name string
		in   ElasticityInput
	}{
		{"one set before the join", ElasticityInput{Sets: good[9:], Join: 102, Settled: 110}},
		{"no set after the join", ElasticityInput{Sets: good[:10], Join: 102, Settled: 110}},
		{"sets out of order", ElasticityInput{Sets: []Set{good[1], good[0], good[2], good[12]}, Join: 102, Settled: 110}},
		{"settled before the join", ElasticityInput{Sets: good, Join: 102, Settled: 90}},
		{"negative SD", ElasticityInput{Sets: append([]Set{{X: 1, Y: 1, SD: -1}}, good...), Join: 102, Settled: 110}},
		{"join not a number", ElasticityInput{Sets: good, Join: math.NaN(), Settled: 110}},
		{"negative window", ElasticityInput{Sets: good, Join: 102, Settled: 110, Window: -1}},
	}
	for _, tc := range tests {
		if _, err := ComputeElasticity(tc.in); err == nil || errors.Is(err, ErrNeverStable) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

func TestElasticityWithoutRt(t *testing.T) {
	t.Parallel()
	sets := linearSets(func(float64) float64 { return 0.5 }, append(seq(10, 100, 10), seq(105, 160, 5)...)...)
	e, err := ComputeElasticity(ElasticityInput{Sets: sets, Join: 102, Settled: 128, Rt1: math.NaN(), Rt2: 0.01})
	if err != nil || !e.Stable || !math.IsNaN(e.Score) || !near(e.B, 14, 1e-9) || len(e.Notes) == 0 {
		t.Errorf("err %v stable %v score %g B %g notes %q", err, e.Stable, e.Score, e.B, e.Notes)
	}
}
