package score

import (
	"fmt"
	"math"
	"slices"

	"github.com/fieldbench/fieldbench/stats"
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
	// capped at MeanDelta.Cap, above the bound) to lie within the prediction
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
// (the window's mean delta, one-sided; its slope, two-sided), and
// MeanDeltaCap the multiple of the median baseline delta at which the
// computation of the cap starts (MeanDelta.Cap). The nominal rate of each
// test is 0.05 %; delta times are neither normal nor independent, so the
// rates are measured instead (TestDetectorRates, docs/elasticity.md).
const (
	MeanDeltaLevel = 0.9995
	MeanDeltaCap   = 3.0
)

// meanDeltaRounds bounds the fixed-point computation of MeanDelta.Cap; the
// cap moves by well under 1 % after the third round on the synthetic
// baselines of the tests.
const meanDeltaRounds = 5

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
	N       int     // delta times of the stable phase (sets − 1)
	Median  float64 // their median: the study's baseline (s)
	BaseCap float64 // MeanDeltaCap × Median: the first cap of the computation of Cap (s)
	Mean    float64 // mean of the stable phase's deltas, each capped at Cap (s)
	SD      float64 // their sample standard deviation (s)
	Window  int
	// Bound is the largest mean capped delta a window may have:
	// Mean + t(MeanDeltaLevel, N−1) · SD · √(1/Window + 1/N), the one-sided
	// prediction bound for the mean of Window new deltas drawn like the
	// stable phase's. NaN with fewer than 2 delta times.
	Bound float64
	// Cap is where every delta time, the stable phase's and the
	// window's alike, is capped before averaging, so that one outlying
	// set (it makes two large deltas) decides neither the bound nor a
	// window. It is (Window·Bound − (Window−2)·Mean)/2: the largest value
	// at which one outlying set inside an otherwise ordinary window (two
	// deltas at the cap, the other Window−2 at Mean) still meets Bound,
	// while three deltas at the cap exceed it. Since Bound depends on the
	// cap, it is found by fixed-point iteration from BaseCap
	// (meanDeltaRounds rounds). It always lies above Bound (Bound > Mean),
	// so a window whose deltas are all large fails the mean test by
	// itself; fieldbench once capped at BaseCap (≈ 2.9 noise SDs), below
	// the bound (≈ 3 noise SDs with 10 baseline sets), and then no window
	// could fail it. +Inf (no cap) for windows of fewer than 3 sets, where
	// one outlying set cannot be told from an excess, and when the stable
	// phase's deltas were all equal (SD 0 up to rounding: the formula
	// gives Bound itself, and nothing there was an outlier).
	Cap float64
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
	m := MeanDelta{N: len(d), Median: Median(d), Window: window, Mean: nan, SD: nan, Bound: nan, Cap: nan, Sigma: nan, SlopeBound: nan}
	m.BaseCap = MeanDeltaCap * m.Median
	if m.N < 2 || window < 1 {
		return m
	}
	sq := 0.0
	for _, x := range d {
		sq += x * x
	}
	n := float64(m.N)
	capped := make([]float64, len(d))
	c := m.BaseCap
	tq := stats.TQuantile(MeanDeltaLevel, n-1) * math.Sqrt(1/float64(window)+1/n)
	for range meanDeltaRounds {
		for i, x := range d {
			capped[i] = math.Min(x, c)
		}
		m.Mean, m.SD = mean(capped), sampleSD(capped)
		m.Bound = m.Mean + tq*m.SD
		c = (float64(window)*m.Bound - float64(window-2)*m.Mean) / 2
		if window < 3 || !(c > m.Bound*(1+1e-9)) {
			break
		}
	}
	m.Cap = math.Inf(1)
	if window >= 3 && c > m.Bound*(1+1e-9) {
		m.Cap = c
	}
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

// WindowMean is the mean of the Window capped delta times ending at i,
// min(|ys[k] − ys[k−1]|, Cap) for k = i−Window+1 … i: the quantity the mean
// test compares with Bound.
func (m MeanDelta) WindowMean(ys []float64, i int) float64 {
	sum := 0.0
	for k := i - m.Window + 1; k <= i; k++ {
		sum += math.Min(math.Abs(ys[k]-ys[k-1]), m.Cap)
	}
	return sum / float64(m.Window)
}

// slack absorbs rounding in sums of decimal times: a window exactly at a
// bound meets it.
const slack = 1 + 1e-12

// Judge applies both tests to the window ending at i (i ≥ Window): meanOK
// when its mean capped delta is at most Bound, slopeOK when the slope
// through ys[i−Window] … ys[i] is within ±SlopeBound. Both false with a
// NaN bound (fewer than 2 baseline deltas).
func (m MeanDelta) Judge(ys []float64, i int) (meanOK, slopeOK bool) {
	if m.Window < 1 || i < m.Window || i >= len(ys) {
		return false, false
	}
	meanOK = m.WindowMean(ys, i) <= m.Bound*slack
	slopeOK = math.Abs(Slope(ys, i, m.Window)) <= m.SlopeBound*slack
	return meanOK, slopeOK
}

// StableIndex is score.StableIndex for the mean-delta detector: the first
// index i >= from+Window whose window passes both tests of Judge; −1 when
// there is none. The window and its reference set ys[from] are as in
// score.StableIndex. "At most" (not "below"): a bound of 0 (a stable phase
// whose times never changed) is met by a window whose times do not change
// either.
func (m MeanDelta) StableIndex(ys []float64, from int) int {
	if m.Window < 1 || from < 0 || math.IsNaN(m.Bound) || math.IsNaN(m.SlopeBound) {
		return -1
	}
	for i := from + m.Window; i < len(ys); i++ {
		if meanOK, slopeOK := m.Judge(ys, i); meanOK && slopeOK {
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
