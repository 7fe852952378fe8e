package score

import (
	"errors"
	"fmt"
	"math"

	"github.com/fieldbench/fieldbench/stats"
)

// ErrNeverStable is returned (wrapped) when no window of request sets after
// the join has every delta time below the baseline.
var ErrNeverStable = errors.New("the cluster never became stable again")

// Phases of a request set in an elasticity experiment.
const (
	PhaseBefore   = "before"   // ended at or before the join
	PhaseTransfer = "transfer" // ended after the join, before the database reported no data moving
	PhaseSettling = "settling" // ended after data settled (or after the join if that is unknown), before the stable window
	PhaseStable   = "stable"   // in the stable window or after it
)

// minMeanDeltas is the fewest baseline delta times for which the
// mean-delta bound is not flagged as loose in the notes.
const minMeanDeltas = 9

// Integration settings for A and B: the tolerance is relative to the size of
// the areas involved, the depth bound keeps a pathological curve cheap.
const (
	relTolerance = 1e-10
	maxDepth     = 50
)

// Set is one request set: X = the moment it ended (s since the run
// started), Y = its mean time (s), SD = the standard deviation of its
// executions' times (s).
type Set struct {
	X, Y, SD float64
}

// ElasticityInput is one join experiment.
type ElasticityInput struct {
	// Sets are the experiment's request sets in time order, warm-up and
	// failed sets left out: those of the stable phase before the join and
	// all those after it, until the experiment ended.
	Sets []Set
	// Join is the bootstrap moment: when the new nodes were added (s).
	Join float64
	// Settled is when the database reported no data moving any more (s);
	// NaN when unknown (the engine cannot tell), then stability rests on the
	// delta times alone.
	Settled float64
	// Rt1, Rt2: the mean time of one request (s) before the join and once
	// stable; NaN leaves the score NaN.
	Rt1, Rt2 float64
	// Rt2At, when set, gives Rt2 for a stable window that starts at the
	// given moment (each detector's window may start elsewhere, and Rt2
	// covers the same span as Av2); Rt2 is then not used.
	Rt2At func(windowStart float64) float64
	// Window is the number of request sets of the stability window; 0
	// means DefaultWindow.
	Window int
	// Detector names the detector whose verdict fills Elasticity's own
	// fields (the score shown first); "" means DefaultDetector. Every
	// detector's verdict is in Elasticity.Verdicts whichever it is.
	Detector string
}

// SetPoint is a request set with what the computation made of it.
type SetPoint struct {
	Set
	// Delta is |Y − Y of the previous set| (NaN for the first set).
	Delta float64
	// Below says Delta < Baseline.
	Below bool
	Phase string
}

// Point2 is a point of the chart.
type Point2 struct{ X, Y float64 }

// Elasticity is the result with every intermediate value, so a report can
// show how the score came about and a chart can shade A and B.
type Elasticity struct {
	// Detector is the detector whose verdict the fields below report
	// (Stable, StableAt, Av2, A, B, Score, …); Verdicts holds every one.
	Detector     string
	Join         float64
	Settled      float64 // NaN when unknown
	SettledKnown bool
	Window       int

	// Baseline is the median delta time of the sets before the join (s):
	// the study's threshold.
	Baseline float64
	// MeanDelta is the mean-delta detector's yardstick from the same sets.
	MeanDelta  MeanDelta
	BeforeSets int // sets before the join (Av1 and the baseline)

	// Stable says a stable window was found.
	Stable bool
	// StableIndex is the index in Sets of the window's last set (−1 if none).
	StableIndex int
	// StableAt is the stable moment: the end of the window's last set (s).
	StableAt float64
	// WindowStart is the end of the set just before the window (s): the
	// moment the window's first set started when sets run back to back.
	WindowStart float64

	Av1, Av2  float64 // mean request-set time before / from the stable window on (s)
	AfterSets int     // sets behind Av2
	Rt1, Rt2  float64 // mean time of one request before / once stable (s)

	// From and To bound the integration: [Join, StableAt].
	From, To float64
	// RampFrom = (Join, Av1), RampTo = (StableAt, Av2): the straight ramp
	// a perfectly elastic cluster would follow.
	RampFrom, RampTo Point2
	// A = ∫ |curve − ramp| dt over [From, To] (s²), split into the parts
	// where the curve is above and below the ramp.
	A, AAbove, ABelow float64
	// B = ∫ max(0, SD spline) dt over [From, To] (s²): the area between the
	// curve and the upper edge of its deviation band, the study's reading
	// (docs/elasticity.md says why). BBand = 2B is the other reading, the
	// area of the whole ±SD band.
	B, BBand float64
	// Score = (A + B) / ((Rt1 + Rt2)(Av1 + Av2)), dimensionless, lower is
	// better; ScoreBand the same with BBand.
	Score, ScoreBand float64

	// DataTransfer = Settled − Join, Additional = max(0, StableAt − Settled),
	// Total = StableAt − Join (s): the study's Table 1. NaN when unknown.
	DataTransfer, Additional, Total float64

	Sets []SetPoint
	// Verdicts are every detector's findings, in the order of Detectors.
	Verdicts []Verdict
	Notes    []string
}

// Verdict is what one detector found, with the score its stable moment
// gives.
type Verdict struct {
	Detector string
	// Threshold is what the window was compared with (s): the median
	// baseline delta (study) or the bound on the window's mean delta
	// (mean-delta).
	Threshold         float64
	Stable            bool
	StableIndex       int     // −1 when not stable
	StableAt          float64 // NaN when not stable
	WindowStart       float64
	Av2               float64
	AfterSets         int
	Rt2               float64
	A, AAbove, ABelow float64
	B, BBand          float64
	Score, ScoreBand  float64
	Total, Additional float64
}

// ComputeElasticity computes the elasticity of one join experiment (see
// docs/elasticity.md) with every detector: each one's verdict and score go
// into Verdicts, and in.Detector's fill the result's own fields. It
// returns the result filled as far as it goes together with an error
// wrapping ErrNeverStable when in.Detector found no stable window (the
// other verdicts are still there), or another error when the input cannot
// be scored at all.
func ComputeElasticity(in ElasticityInput) (Elasticity, error) {
	nan := math.NaN()
	e := Elasticity{
		Join: in.Join, Settled: in.Settled, SettledKnown: finite(in.Settled), Window: in.Window,
		Baseline: nan, StableIndex: -1, StableAt: nan, WindowStart: nan,
		Av1: nan, Av2: nan, Rt1: in.Rt1, Rt2: in.Rt2, From: in.Join, To: nan,
		A: nan, AAbove: nan, ABelow: nan, B: nan, Score: nan,
		BBand: nan, ScoreBand: nan,
		DataTransfer: nan, Additional: nan, Total: nan,
		MeanDelta: MeanDelta{Median: nan, BaseCap: nan, Cap: nan, Mean: nan, SD: nan, Bound: nan},
	}
	if e.Window == 0 {
		e.Window = DefaultWindow
	}
	if e.Window < 1 {
		return e, fmt.Errorf("elasticity: window %d must be at least 1", e.Window)
	}
	if !finite(in.Join) {
		return e, errors.New("elasticity: the join moment is not a number")
	}
	if e.SettledKnown && in.Settled < in.Join {
		return e, fmt.Errorf("elasticity: data settled at %gs, before the join at %gs", in.Settled, in.Join)
	}
	if !e.SettledKnown {
		e.Settled = nan
		e.notef("the database did not report when data stopped moving: stability rests on the delta times alone; data-transfer and additional times are unknown")
	} else {
		e.DataTransfer = in.Settled - in.Join
	}

	n := len(in.Sets)
	xs, ys, sds := make([]float64, n), make([]float64, n), make([]float64, n)
	before := 0 // sets 0..before-1 ended at or before the join
	for i, s := range in.Sets {
		if !finite(s.X) || !finite(s.Y) || !finite(s.SD) || s.SD < 0 {
			return e, fmt.Errorf("elasticity: request set %d (%g, %g ± %g) is not a measurement", i, s.X, s.Y, s.SD)
		}
		if i > 0 && !(s.X > in.Sets[i-1].X) {
			return e, fmt.Errorf("elasticity: request sets must be in time order (set %d ends at %gs, after %gs)", i, s.X, in.Sets[i-1].X)
		}
		xs[i], ys[i], sds[i] = s.X, s.Y, s.SD
		if s.X <= in.Join {
			before = i + 1
		}
	}
	e.BeforeSets = before
	e.Sets = make([]SetPoint, n)
	for i, s := range in.Sets {
		e.Sets[i] = SetPoint{Set: s, Delta: nan, Phase: PhaseBefore}
		if i > 0 {
			e.Sets[i].Delta = math.Abs(ys[i] - ys[i-1])
		}
	}
	if before < 2 {
		return e, fmt.Errorf("elasticity: %d request set(s) before the join at %gs; the baseline needs at least 2", before, in.Join)
	}
	if before == n {
		return e, fmt.Errorf("elasticity: no request set ended after the join at %gs", in.Join)
	}
	e.Baseline = Baseline(ys[:before])
	e.Av1 = mean(ys[:before])
	for i := range e.Sets {
		e.Sets[i].Below = e.Sets[i].Delta < e.Baseline
		switch {
		case i < before:
			e.Sets[i].Phase = PhaseBefore
		case e.SettledKnown && xs[i] < in.Settled:
			e.Sets[i].Phase = PhaseTransfer
		default:
			e.Sets[i].Phase = PhaseSettling
		}
	}
	if e.Baseline == 0 {
		e.notef("the baseline is 0 (every set before the join took the same time): no delta time can be below it")
	}

	// The window holds sets after the join only (reference: the last set
	// before it) and must end at or after data settled.
	from := before - 1
	if e.SettledKnown {
		first := n // first set ending at or after Settled
		for i := before; i < n; i++ {
			if xs[i] >= in.Settled {
				first = i
				break
			}
		}
		from = max(from, first-e.Window)
	}
	e.MeanDelta = NewMeanDelta(ys[:before], e.Window)
	if e.MeanDelta.N < 2 {
		e.notef("the mean-delta bound is n/a: %d set(s) before the join give %d delta time(s), and its mean and SD need at least 2", before, e.MeanDelta.N)
	} else if e.MeanDelta.N < minMeanDeltas {
		e.notef("the mean-delta bound rests on %d delta times before the join: it is loose (t with %d degrees of freedom); a baseline of 20 sets or more makes it tight", e.MeanDelta.N, e.MeanDelta.N-1)
	}
	primary := in.Detector
	if primary == "" {
		primary = DefaultDetector
	}
	if !KnownDetector(primary) {
		return e, fmt.Errorf("elasticity: unknown detector %q (one of %v)", primary, Detectors)
	}
	e.Detector = primary
	curve, err := NewSpline(xs, ys)
	if err != nil {
		return e, fmt.Errorf("elasticity: %w", err)
	}
	band, err := NewSpline(xs, sds)
	if err != nil {
		return e, fmt.Errorf("elasticity: %w", err)
	}
	var chosen Verdict
	for _, det := range Detectors {
		idx, threshold, err := Detect(det, ys, before, from, e.Window)
		if err != nil {
			return e, fmt.Errorf("elasticity: %w", err)
		}
		v := e.verdict(in, det, idx, threshold, xs, ys, curve, band)
		e.Verdicts = append(e.Verdicts, v)
		if det == primary {
			chosen = v
		}
	}
	for _, v := range e.Verdicts {
		if v.Detector == primary {
			continue
		}
		if v.Stable {
			e.notef("the %s detector found the cluster stable again at %.1fs (score %.4g)", v.Detector, v.StableAt, v.Score)
		} else {
			e.notef("the %s detector found no stable window", v.Detector)
		}
	}
	if !chosen.Stable {
		if chosen.Detector == DetectorStudy {
			return e, fmt.Errorf("elasticity: %w: no %d consecutive request sets after the join at %gs%s with delta times below the baseline %gs",
				ErrNeverStable, e.Window, in.Join, settledClause(e), e.Baseline)
		}
		if math.IsNaN(chosen.Threshold) {
			return e, fmt.Errorf("elasticity: %w: the %s bound is n/a: one baseline delta time (%d sets before the join at %gs); it needs at least 3 sets before the join",
				ErrNeverStable, chosen.Detector, before, in.Join)
		}
		return e, fmt.Errorf("elasticity: %w: no %d consecutive request sets after the join at %gs%s with a mean delta time within %gs (%s)",
			ErrNeverStable, e.Window, in.Join, settledClause(e), chosen.Threshold, chosen.Detector)
	}
	e.Stable = true
	e.StableIndex = chosen.StableIndex
	e.StableAt = chosen.StableAt
	e.WindowStart = chosen.WindowStart
	for i := chosen.StableIndex - e.Window + 1; i < n; i++ {
		e.Sets[i].Phase = PhaseStable
	}
	e.Av2, e.AfterSets, e.Rt2 = chosen.Av2, chosen.AfterSets, chosen.Rt2
	e.Total, e.Additional = chosen.Total, chosen.Additional
	e.To = e.StableAt
	e.RampFrom = Point2{in.Join, e.Av1}
	e.RampTo = Point2{e.StableAt, e.Av2}
	e.A, e.AAbove, e.ABelow = chosen.A, chosen.AAbove, chosen.ABelow
	e.B, e.BBand = chosen.B, chosen.BBand
	e.Score, e.ScoreBand = chosen.Score, chosen.ScoreBand
	if !finite(e.Rt1) || !finite(e.Rt2) {
		e.notef("the time of one request before (Rt1) or after (Rt2) is unknown: no score")
	}
	return e, nil
}

// verdict fills one detector's findings: its stable window ends at index
// idx (−1: none), and the areas run over [Join, its stable moment] on the
// splines through every set.
func (e *Elasticity) verdict(in ElasticityInput, det string, idx int, threshold float64, xs, ys []float64, curve, band *Spline) Verdict {
	nan := math.NaN()
	v := Verdict{Detector: det, Threshold: threshold, StableIndex: -1, StableAt: nan, WindowStart: nan, Av2: nan, Rt2: nan,
		A: nan, AAbove: nan, ABelow: nan, B: nan, BBand: nan, Score: nan, ScoreBand: nan, Total: nan, Additional: nan}
	if idx < 0 {
		return v
	}
	n := len(xs)
	v.Stable, v.StableIndex, v.StableAt = true, idx, xs[idx]
	ws := idx - e.Window + 1 // first set of the window
	v.WindowStart = xs[ws-1]
	v.Av2 = mean(ys[ws:])
	v.AfterSets = n - ws
	v.Rt2 = in.Rt2
	if in.Rt2At != nil {
		v.Rt2 = in.Rt2At(v.WindowStart)
	}
	v.Total = v.StableAt - in.Join
	if e.SettledKnown {
		v.Additional = math.Max(0, v.StableAt-in.Settled)
	}
	from, to := in.Join, v.StableAt
	span := to - from
	ramp := func(t float64) float64 { return e.Av1 + (v.Av2-e.Av1)*(t-from)/span }
	scale := math.Max(math.Max(math.Abs(e.Av1), math.Abs(v.Av2)), 1e-300) * span
	eps := relTolerance * scale
	v.AAbove = integrateKnots(func(t float64) float64 { return math.Max(0, curve.At(t)-ramp(t)) }, xs, from, to, eps, maxDepth)
	v.ABelow = integrateKnots(func(t float64) float64 { return math.Max(0, ramp(t)-curve.At(t)) }, xs, from, to, eps, maxDepth)
	v.A = v.AAbove + v.ABelow
	v.B = integrateKnots(func(t float64) float64 { return math.Max(0, band.At(t)) }, xs, from, to, eps, maxDepth)
	v.BBand = 2 * v.B
	v.Score = elasticityScore(v.A, v.B, e.Rt1, v.Rt2, e.Av1, v.Av2)
	v.ScoreBand = elasticityScore(v.A, v.BBand, e.Rt1, v.Rt2, e.Av1, v.Av2)
	return v
}

// elasticityScore is (A + B) / ((Rt1 + Rt2)(Av1 + Av2)).
func elasticityScore(a, b, rt1, rt2, av1, av2 float64) float64 {
	d := (rt1 + rt2) * (av1 + av2)
	if !finite(d) || d <= 0 {
		return math.NaN()
	}
	return (a + b) / d
}

func settledClause(e Elasticity) string {
	if !e.SettledKnown {
		return ""
	}
	return fmt.Sprintf(", the last of them ending at or after data settled at %gs,", e.Settled)
}

func (e *Elasticity) notef(format string, args ...any) {
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
}

// mean is stats.Mean (NaN when xs is empty).
func mean(xs []float64) float64 { return stats.Mean(xs) }
