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
	// capped at MeanDeltaCap × the median) to lie within the one-sided
	// MeanDeltaLevel prediction bound of the stable phase's (MeanDelta): the
	// same quantity as the study's, judged over the whole window rather
	// than set by set, with a false "unstable" rate that is small and
	// measured.
	DetectorMeanDelta = "mean-delta"
	// DefaultDetector is the one that concludes on a stationary cluster.
	DefaultDetector = DetectorMeanDelta
)

// Detectors lists every detector, the default first.
var Detectors = []string{DetectorMeanDelta, DetectorStudy}

// KnownDetector reports whether name is one of Detectors.
func KnownDetector(name string) bool { return slices.Contains(Detectors, name) }

// MeanDeltaLevel is the one-sided level of the mean-delta bound and
// MeanDeltaCap the multiple of the median baseline delta at which every
// delta time is capped before averaging, so that one outlying set (which
// makes two large deltas) cannot decide a window alone. Both were chosen
// from the rates measured on seeded synthetic series (TestDetectorRates,
// docs/elasticity.md): with them the false "unstable" rate of the first
// window after a join that changed nothing is at most 1 % for Gaussian,
// lognormal and heavy-tailed (Student t, 3 degrees of freedom) noise,
// where the uncapped mean at 99.5 % measured 3–8 %: delta times are
// neither normal nor independent, so the nominal 0.1 % is only a guide.
const (
	MeanDeltaLevel = 0.999
	MeanDeltaCap   = 3.0
)

// MeanDelta is the mean-delta detector's yardstick, from the stable
// phase's delta times.
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
}

// NewMeanDelta computes the yardstick from the stable phase ys.
func NewMeanDelta(ys []float64, window int) MeanDelta {
	d := Deltas(ys)
	nan := math.NaN()
	m := MeanDelta{N: len(d), Median: Median(d), Window: window, Mean: nan, SD: nan, Bound: nan}
	m.Cap = MeanDeltaCap * m.Median
	if m.N < 2 || window < 1 {
		return m
	}
	for i := range d {
		d[i] = math.Min(d[i], m.Cap)
	}
	m.Mean, m.SD = mean(d), sampleSD(d)
	t := stats.TQuantile(MeanDeltaLevel, float64(m.N-1))
	m.Bound = m.Mean + t*m.SD*math.Sqrt(1/float64(window)+1/float64(m.N))
	return m
}

// StableIndex is score.StableIndex for the mean-delta detector: the first
// index i >= from+Window such that the mean of the Window capped delta
// times ending at i, min(|ys[k] − ys[k−1]|, Cap) for k = i−Window+1 … i,
// is at most Bound; −1 when there is none. The window and its reference
// set ys[from] are as in score.StableIndex. "At most" (not "below"): a
// bound of 0 (a stable phase whose times never changed) is met by a window
// whose times do not change either.
func (m MeanDelta) StableIndex(ys []float64, from int) int {
	w := m.Window
	if w < 1 || from < 0 || math.IsNaN(m.Bound) {
		return -1
	}
	capped := func(k int) float64 { return math.Min(math.Abs(ys[k]-ys[k-1]), m.Cap) }
	sum := 0.0
	for i := from + 1; i < len(ys); i++ {
		sum += capped(i)
		if k := i - w; k > from {
			sum -= capped(k)
		}
		if i >= from+w && sum/float64(w) <= m.Bound*(1+1e-12) {
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
