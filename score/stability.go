package score

import (
	"math"
	"slices"
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
