package score

import (
	"fmt"
	"math"
	"slices"

	"github.com/fieldbench/fieldbench/analysis/stats"
)

// DefaultWindow is the study's X: "the last 5 request sets have delta times
// less than the one measured for the stable cluster".
const DefaultWindow = 5

// Deltas returns the delta times of consecutive request-set times: d[j] =
// |ys[j+1] − ys[j]|, the delta of set j+1 (set 0 has none), so len(ys)−1
// values. The study: "the absolute value of the difference in time needed to
// complete a request set and the time needed to complete the previous
// request set".
func Deltas(ys []float64) []float64 {
	if len(ys) < 2 {
		return nil
	}
	d := make([]float64, len(ys)-1)
	for i := 1; i < len(ys); i++ {
		d[i-1] = math.Abs(ys[i] - ys[i-1])
	}
	return d
}

// Median is the middle value of xs (the mean of the two middle values for
// an even count); NaN when xs is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Baseline is the variability of a stable cluster: the median of the delta
// times of its request sets ys (the study uses the median "to be less
// sensitive to the magnitude of the fluctuations"). NaN with fewer than two
// sets.
func Baseline(ys []float64) float64 { return Median(Deltas(ys)) }

// StableIndex returns the first index i >= from+window such that the window
// delta times ending at i, |ys[k] − ys[k−1]| for k = i−window+1 … i, are all
// strictly below baseline; −1 when there is none. ys[from] is the reference
// set: it is compared with the first set of the window but is not part of
// it, so with from = the last set before a join the window holds only sets
// that ended after the join, and its first delta is the jump across the
// join (exactly the disturbance stability must rule out). "Below" is strict,
// as the study says "smaller than" and "less than"; so a baseline of 0 (a
// stable phase whose times never changed) is never beaten.
func StableIndex(ys []float64, from int, baseline float64, window int) int {
	if window < 1 || from < 0 || math.IsNaN(baseline) {
		return -1
	}
	run := 0 // consecutive deltas below baseline ending at i
	for i := from + 1; i < len(ys); i++ {
		if math.Abs(ys[i]-ys[i-1]) < baseline {
			run++
		} else {
			run = 0
		}
		if run >= window {
			return i
		}
	}
	return -1
}

// Detector names: which rule decides that the cluster is stable again after
// a join. Every result reports both verdicts; the scenario (or the result
// header, see DetectorOf) names the one that drives the score shown first
// and the experiment's `stable` condition.
const (
	// DetectorStudy is the study's rule taken literally: the window's delta
	// times all strictly below the median delta time of the stable phase
	// (StableIndex). On a cluster whose times do not change at all each
	// delta is below the median with probability about ½, so it concludes
	// on a stationary series only by luck (docs/elasticity.md has the
	// measured rates).
	DetectorStudy = "study"
	// DetectorMeanDelta asks the window's mean delta time (each delta
	// capped at MeanDeltaCap × the median) to lie within the prediction
	// bound of the stable phase's, and the window's times not to drift
	// (MeanDelta): the study's quantity, judged over the whole window
	// rather than set by set, with a false "unstable" rate that is small
	// and measured.
	DetectorMeanDelta = "mean-delta"
	// DefaultDetector is the one that concludes on a stationary cluster.
	DefaultDetector = DetectorMeanDelta
)

// Detectors lists every detector, the default first.
var Detectors = []string{DetectorMeanDelta, DetectorStudy}

// KnownDetector reports whether name is one of Detectors.
func KnownDetector(name string) bool { return slices.Contains(Detectors, name) }

// MeanDeltaLevel is the level of both of the mean-delta detector's tests
// (the window's mean delta, one-sided; its slope, two-sided) and
// MeanDeltaCap the multiple of the median baseline delta at which every
// delta time is capped before averaging, so that one outlying set (which
// makes two large deltas) cannot decide a window alone. They were chosen
// from the rates measured on seeded synthetic series (TestDetectorRates,
// docs/elasticity.md): with them the false "unstable" rate of the first
// window after a join that changed nothing stays at or below 1 % for
// Gaussian, lognormal and heavy-tailed (Student t, 3 degrees of freedom)
// noise, where the uncapped mean alone at 99.5 % measured 3–8 %: delta
// times are neither normal nor independent, so the nominal 0.1 % is only
// a guide.
const (
	MeanDeltaLevel = 0.9995
	MeanDeltaCap   = 3.0
)

// MeanDelta is the mean-delta detector's yardstick, from the stable
// phase's delta times. A window of Window sets (with its reference set,
// the one before it) counts as stable when
//
//   - its mean capped delta is at most Bound: its sets vary no more than
//     the stable phase's did, judged over the whole window rather than set
//     by set as the study's rule does; and
//   - the least-squares slope through its reference set and its sets is
//     within ±SlopeBound: the times are not drifting. Small deltas that
//     all go one way (the tail of a smooth decay) pass the first test but
//     not this one.
type MeanDelta struct {
	N      int     // delta times of the stable phase (sets − 1)
	Median float64 // their median: the study's baseline (s)
	Cap    float64 // MeanDeltaCap × Median: every delta is capped here (s)
	Mean   float64 // mean of the capped deltas (s)
	SD     float64 // their sample standard deviation (s)
	Window int
	// Bound is the largest mean capped delta a window may have:
	// Mean + t(MeanDeltaLevel, N−1) · SD · √(1/Window + 1/N), the one-sided
	// prediction bound for the mean of Window new deltas drawn like the
	// stable phase's. NaN with fewer than 2 delta times.
	Bound float64
	// Sigma estimates the scatter of one set's time: the root mean square
	// of the (uncapped) deltas over √2, since a delta is the difference of
	// two independent times (s).
	Sigma float64
	// SlopeBound is the largest slope (s per set) of the least-squares
	// line through the window's Window+1 times: t((1+MeanDeltaLevel)/2, N)
	// · Sigma / √Sxx, Sxx = Σ (k − Window/2)² over k = 0 … Window, the
	// two-sided prediction bound for the slope of a stationary window.
	SlopeBound float64
}

// NewMeanDelta computes the yardstick from the stable phase ys.
func NewMeanDelta(ys []float64, window int) MeanDelta {
	d := Deltas(ys)
	nan := math.NaN()
	m := MeanDelta{N: len(d), Median: Median(d), Window: window, Mean: nan, SD: nan, Bound: nan, Sigma: nan, SlopeBound: nan}
	m.Cap = MeanDeltaCap * m.Median
	if m.N < 2 || window < 1 {
		return m
	}
	sq := 0.0
	for i := range d {
		sq += d[i] * d[i]
		d[i] = math.Min(d[i], m.Cap)
	}
	n := float64(m.N)
	m.Mean, m.SD = mean(d), sampleSD(d)
	m.Bound = m.Mean + stats.TQuantile(MeanDeltaLevel, n-1)*m.SD*math.Sqrt(1/float64(window)+1/n)
	m.Sigma = math.Sqrt(sq/n) / math.Sqrt2
	m.SlopeBound = stats.TQuantile((1+MeanDeltaLevel)/2, n) * m.Sigma / math.Sqrt(sxx(window))
	return m
}

// sxx is Σ (k − w/2)² for k = 0 … w: the spread of a window's positions.
func sxx(w int) float64 {
	c, s := float64(w)/2, 0.0
	for k := 0; k <= w; k++ {
		s += (float64(k) - c) * (float64(k) - c)
	}
	return s
}

// Slope is the least-squares slope (per set) through ys[i−w] … ys[i].
func Slope(ys []float64, i, w int) float64 {
	c, ybar := float64(w)/2, 0.0
	for k := 0; k <= w; k++ {
		ybar += ys[i-w+k]
	}
	ybar /= float64(w + 1)
	sxy := 0.0
	for k := 0; k <= w; k++ {
		sxy += (float64(k) - c) * (ys[i-w+k] - ybar)
	}
	return sxy / sxx(w)
}

// StableIndex is score.StableIndex for the mean-delta detector: the first
// index i >= from+Window such that the mean of the Window capped delta
// times ending at i, min(|ys[k] − ys[k−1]|, Cap) for k = i−Window+1 … i,
// is at most Bound and the slope through ys[i−Window] … ys[i] is within
// ±SlopeBound; −1 when there is none. The window and its reference set
// ys[from] are as in score.StableIndex. "At most" (not "below"): a bound
// of 0 (a stable phase whose times never changed) is met by a window whose
// times do not change either.
func (m MeanDelta) StableIndex(ys []float64, from int) int {
	w := m.Window
	if w < 1 || from < 0 || math.IsNaN(m.Bound) || math.IsNaN(m.SlopeBound) {
		return -1
	}
	const slack = 1 + 1e-12 // sums of decimal times
	capped := func(k int) float64 { return math.Min(math.Abs(ys[k]-ys[k-1]), m.Cap) }
	sum := 0.0
	for i := from + 1; i < len(ys); i++ {
		sum += capped(i)
		if k := i - w; k > from {
			sum -= capped(k)
		}
		if i >= from+w && sum/float64(w) <= m.Bound*slack && math.Abs(Slope(ys, i, w)) <= m.SlopeBound*slack {
			return i
		}
	}
	return -1
}

// Detect runs the named detector over ys, whose first `before` sets are the
// stable phase (the baseline), with the window's reference set ys[from]
// (from >= before−1). It returns the index of the window's last set (−1
// when the cluster never became stable) and the threshold compared with:
// the median baseline delta for the study's rule, the bound on the window's
// mean capped delta for mean-delta.
func Detect(name string, ys []float64, before, from, window int) (int, float64, error) {
	if before < 2 || before > len(ys) {
		return -1, math.NaN(), fmt.Errorf("stability: %d sets before the join of %d; the baseline needs at least 2", before, len(ys))
	}
	switch name {
	case DetectorStudy:
		b := Baseline(ys[:before])
		return StableIndex(ys, from, b, window), b, nil
	case DetectorMeanDelta:
		m := NewMeanDelta(ys[:before], window)
		return m.StableIndex(ys, from), m.Bound, nil
	}
	return -1, math.NaN(), fmt.Errorf("stability: unknown detector %q (one of %v)", name, Detectors)
}
