package history

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/stats"
)

// Change points are found with e-divisive means (Matteson and James, "A
// Nonparametric Approach for Multiple Change Point Analysis of
// Multivariate Data", 2014) as Apache Otava computes them (Fleming et
// al., "Hunter: Using Change Point Detection to Hunt for Performance
// Regressions", 2023), read from Otava 0.8.0 and written here anew:
//
//  1. The candidate of a stretch of values [s, e) is the τ that maximizes
//     the divergence Q̂ between X = [s, τ) and Y = [τ, κ) over every
//     s < τ < κ ≤ e (κ may end before e: a later change does not blur an
//     earlier one):
//     Q̂ = 2/(n+m) Σ|X_i−Y_j| − 2m/((n+m)(n−1)) Σ_{i<k}|X_i−X_k| − 2n/((n+m)(m−1)) Σ_{j<k}|Y_j−Y_k|,
//     n = |X|, m = |Y| (a sum over fewer than two values is 0).
//  2. Divisive search: over the stretches between the change points found
//     so far, the candidate with the largest Q̂ is tested; a significant one
//     splits its stretch and the search goes on, the first that is not
//     ends it.
//  3. The test (Method "ttest", Otava's default): Student's two-sided
//     t-test, pooled variance, between the whole stretch left of τ and the
//     whole stretch right of it, each side's SD taken with divisor n (as
//     Otava passes numpy's np.std to scipy). Significant: p ≤ PValue.
//     The search runs in windows of Window values, each starting at the
//     last change found or half a window on, at a relaxed level (10 ×
//     PValue under 0.05); the union of what the windows find are the weak
//     change points. Then the merge: while the weakest (largest p) is not
//     below PValue — or, once all are, the smallest magnitude is not
//     above Magnitude — it is removed and its neighbours' tests redone on
//     their new stretches.
//  4. Method "permutation", Otava's --orig-edivisive and Matteson and
//     James's own test: no windows and no merge; a candidate is significant
//     when at most PValue × (Permutations+1) of Permutations shuffles of
//     the values inside each stretch give a candidate with a Q̂ as large.
//
// Which change points are kept is Otava's, including where its merge
// looks odd: after removing a weak change point it redoes the tests of
// the change points now at the removed one's index and the next (the one
// after it and the one after that), so the one before it keeps the
// p-value and magnitude of its old, shorter right-hand stretch for the
// rest of the merge. That is done here too, so that both find the same
// change points (docs/history.md). What is reported is not stale: once
// the change points are known, each one's sides, means, SDs and (for
// the t-test) p-value are those of the stretches between its final
// neighbours, which are what a reader sees on either side of it; Otava
// reports the figures its search last computed. A p-value that is NaN
// (two constant, equal stretches) counts as 1. The permutations are drawn
// from Go's PCG, not numpy's generator, so a permutation test's p-values
// differ from Otava's by chance (not its verdicts on clear changes).

// Methods of Detect.
const (
	MethodTTest       = "ttest"
	MethodPermutation = "permutation"
)

// Options are the settings of Detect; the zero value is Otava's defaults
// (t-test, p ≤ 0.001, windows of 50, no minimum magnitude).
type Options struct {
	Method string
	// PValue is the largest p-value of a change point (Otava's -P).
	PValue float64
	// Window is the t-test method's window (Otava's --window).
	Window int
	// Magnitude is the smallest relative change kept by the merge
	// (Otava's -M): max(|after/before−1|, |before/after−1|).
	Magnitude float64
	// Permutations and Seed drive the permutation test.
	Permutations int
	Seed         uint64
}

// MethodName is the method in words.
func (o Options) MethodName() string {
	if o.Method == MethodPermutation {
		return "permutation test"
	}
	return "Student's t-test"
}

// DefaultOptions are Otava's defaults.
var DefaultOptions = Options{Method: MethodTTest, PValue: 0.001, Window: 50, Permutations: 100}

// MaxPermutationValues bounds the series the permutation method takes
// (it searches the whole series at once, once per permutation).
const MaxPermutationValues = 5000

func (o Options) withDefaults() Options {
	d := DefaultOptions
	if o.Method != "" {
		d.Method = o.Method
	}
	if o.PValue != 0 {
		d.PValue = o.PValue
	}
	if o.Window != 0 {
		d.Window = o.Window
	}
	d.Magnitude = o.Magnitude
	if o.Permutations != 0 {
		d.Permutations = o.Permutations
	}
	d.Seed = o.Seed
	return d
}

// Check refuses settings that mean nothing.
func (o Options) Check() error {
	o = o.withDefaults()
	switch {
	case o.Method != MethodTTest && o.Method != MethodPermutation:
		return fmt.Errorf("method %q: want %s or %s", o.Method, MethodTTest, MethodPermutation)
	case !(o.PValue > 0 && o.PValue < 1):
		return fmt.Errorf("p-value %g: want one between 0 and 1 (0.001 as Otava)", o.PValue)
	case o.Window < 2:
		return fmt.Errorf("window %d: want 2 or more (50 as Otava)", o.Window)
	case o.Magnitude < 0 || math.IsNaN(o.Magnitude) || math.IsInf(o.Magnitude, 0):
		return fmt.Errorf("magnitude %g: want 0 or more (0.05 keeps changes of 5 %% and more)", o.Magnitude)
	case o.Permutations < 1:
		return fmt.Errorf("permutations %d: want 1 or more", o.Permutations)
	}
	return nil
}

// ChangePoint is where a series' values change.
type ChangePoint struct {
	// Index is the first value after the change.
	Index int
	// Before and After are the means of the stretches on each side (up
	// to the neighbouring change points), SDBefore and SDAfter their SDs
	// (divisor n), NBefore and NAfter their lengths.
	Before, After     float64
	SDBefore, SDAfter float64
	NBefore, NAfter   int
	// P is the test's p-value, Q the candidate's divergence.
	P, Q float64
}

// Change is the relative change from before to after (0 when before is
// 0, as Otava's forward change).
func (c ChangePoint) Change() float64 {
	if c.Before == 0 {
		return 0
	}
	return c.After/c.Before - 1
}

// Magnitude is Otava's: the larger of the forward and backward relative
// changes, in absolute value.
func (c ChangePoint) Magnitude() float64 {
	back := 0.0
	if c.After != 0 {
		back = c.Before/c.After - 1
	}
	return math.Max(math.Abs(c.Change()), math.Abs(back))
}

// Detect finds the change points of xs (in order of time).
func Detect(xs []float64, o Options) ([]ChangePoint, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("change points: a value is NaN or infinite")
		}
	}
	if o.Method == MethodPermutation {
		if len(xs) > MaxPermutationValues {
			return nil, fmt.Errorf("the permutation method searches the whole series at once: %d values, at most %d (use the t-test method)", len(xs), MaxPermutationValues)
		}
		rng := rand.New(rand.NewPCG(o.Seed, 0x6f74617661))
		cps := divisive(xs, func(c candidate, iv []stretch) ChangePoint { return permutationTest(xs, c, iv, o.Permutations, rng) }, o.PValue)
		return final(xs, cps, false), nil
	}
	return final(xs, merge(xs, split(xs, o.Window, firstPass(o.PValue)), o.PValue, o.Magnitude), true), nil
}

// final describes each change point by the stretches between its final
// neighbours; with retestP its p-value is that stretches' t-test too
// (the permutation test's p-value stays as it was found).
func final(xs []float64, cps []ChangePoint, retestP bool) []ChangePoint {
	iv := stretches(cps, len(xs))
	out := make([]ChangePoint, len(cps))
	for i, cp := range cps {
		c := candidate{cp.Index, cp.Q}
		if retestP {
			out[i] = tTest(xs, c, iv)
			continue
		}
		left, right := sides(xs, cp.Index, iv)
		out[i] = describe(cp.Index, cp.Q, left, right)
		out[i].P = cp.P
	}
	return out
}

// firstPass is the relaxed level of the windows (Otava's).
func firstPass(p float64) float64 {
	switch {
	case p < 0.05:
		return p * 10
	case p < 0.5:
		return p * 2
	}
	return p
}

// stretch is [s, e) of a series.
type stretch struct{ s, e int }

// stretches are the stretches between sorted change points over n values.
func stretches(cps []ChangePoint, n int) []stretch {
	out := make([]stretch, 0, len(cps)+1)
	s := 0
	for _, c := range cps {
		if c.Index != s {
			out = append(out, stretch{s, c.Index})
		}
		s = c.Index
	}
	if s != n {
		out = append(out, stretch{s, n})
	}
	return out
}

// candidate is a stretch's best split.
type candidate struct {
	index int
	q     float64
}

// bestSplit is the τ of [s, e) maximizing Q̂ over s < τ < κ ≤ e, the first
// in (τ, κ) order among equals (as numpy's argmax over Otava's matrix).
// O((e−s)²) time and O(e−s) memory: for each τ the sums are carried
// along κ. colX[c] is Σ_{i∈[s,τ)} |x_i − x_c|, vs[c] is Σ_{j∈[s,c)} |x_j − x_c|.
func bestSplit(xs []float64, s, e int) candidate {
	l := e - s
	vs := make([]float64, l)
	for c := s + 1; c < e; c++ {
		var sum float64
		for j := s; j < c; j++ {
			sum += math.Abs(xs[j] - xs[c])
		}
		vs[c-s] = sum
	}
	colX := make([]float64, l)
	best := candidate{index: -1, q: math.Inf(-1)}
	withinX := 0.0
	for tau := s + 1; tau < e; tau++ {
		r := xs[tau-1]
		for c := s; c < e; c++ {
			colX[c-s] += math.Abs(r - xs[c])
		}
		if tau-1 > s {
			withinX += vs[tau-1-s]
		}
		n := float64(tau - s)
		var between, withinY float64
		for kappa := tau + 1; kappa <= e; kappa++ {
			c := kappa - 1
			between += colX[c-s]
			if c > tau {
				withinY += vs[c-s] - colX[c-s]
			}
			m := float64(kappa - tau)
			q := 2 / (n + m) * between
			if n > 1 {
				q -= 2 * m / ((n + m) * (n - 1)) * withinX
			}
			if m > 1 {
				q -= 2 * n / ((n + m) * (m - 1)) * withinY
			}
			if q > best.q {
				best = candidate{index: tau, q: q}
			}
		}
	}
	return best
}

// next is the best candidate over the stretches of two or more values
// (the first among equals); ok is false when there is none.
func next(xs []float64, iv []stretch) (candidate, bool) {
	best, ok := candidate{q: math.Inf(-1)}, false
	for _, st := range iv {
		if st.e-st.s < 2 {
			continue
		}
		if c := bestSplit(xs, st.s, st.e); c.q > best.q || !ok {
			best, ok = c, true
		}
	}
	return best, ok
}

// sides are the two stretches a change point at index separates: a split
// of the stretch holding it, or the two stretches meeting at it.
func sides(xs []float64, index int, iv []stretch) (left, right []float64) {
	for i, st := range iv {
		if st.e == index && i+1 < len(iv) {
			return xs[st.s:st.e], xs[iv[i+1].s:iv[i+1].e]
		}
		if st.s < index && index < st.e {
			return xs[st.s:index], xs[index:st.e]
		}
	}
	return nil, nil
}

// describe fills a change point's sides.
func describe(index int, q float64, left, right []float64) ChangePoint {
	return ChangePoint{Index: index, Q: q, NBefore: len(left), NAfter: len(right),
		Before: stats.Mean(left), After: stats.Mean(right), SDBefore: popSD(left), SDAfter: popSD(right), P: 1}
}

// popSD is the SD with divisor n (numpy's np.std), 0 under two values.
func popSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := stats.Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)))
}

// tTest is the change point at index with Student's pooled t-test of its
// two sides, as Otava passes them to scipy (SDs with divisor n).
func tTest(xs []float64, c candidate, iv []stretch) ChangePoint {
	left, right := sides(xs, c.index, iv)
	cp := describe(c.index, c.q, left, right)
	n1, n2 := float64(len(left)), float64(len(right))
	if n1 == 0 || n2 == 0 || n1+n2 <= 2 {
		return cp
	}
	df := n1 + n2 - 2
	pooled := ((n1-1)*cp.SDBefore*cp.SDBefore + (n2-1)*cp.SDAfter*cp.SDAfter) / df
	se := math.Sqrt(pooled * (1/n1 + 1/n2))
	d := cp.Before - cp.After
	switch {
	case se > 0:
		cp.P = compare.TwoSidedP(d/se, df)
	case d != 0:
		cp.P = 0 // two constant stretches that differ
	default:
		cp.P = 1 // NaN for scipy: counted as no change
	}
	return cp
}

// permutationTest is the change point at index with Matteson and James's
// permutation test.
func permutationTest(xs []float64, c candidate, iv []stretch, perms int, rng *rand.Rand) ChangePoint {
	left, right := sides(xs, c.index, iv)
	cp := describe(c.index, c.q, left, right)
	shuffled := make([]float64, len(xs))
	extreme := 0
	for range perms {
		copy(shuffled, xs)
		for _, st := range iv {
			seg := shuffled[st.s:st.e]
			rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
		}
		if pc, ok := next(shuffled, iv); ok && pc.q >= c.q {
			extreme++
		}
	}
	cp.P = float64(extreme) / float64(perms+1)
	return cp
}

// tester is one significance test of a candidate among stretches.
type tester func(c candidate, iv []stretch) ChangePoint

// divisive is the divisive search of xs at level p: change points in
// index order.
func divisive(xs []float64, test tester, p float64) []ChangePoint {
	var cps []ChangePoint
	for {
		iv := stretches(cps, len(xs))
		c, ok := next(xs, iv)
		if !ok {
			return cps
		}
		cp := test(c, iv)
		if !(cp.P <= p) {
			return cps
		}
		cps = append(cps, cp)
		sort.Slice(cps, func(i, k int) bool { return cps[i].Index < cps[k].Index })
	}
}

// split is the windowed search at level p: the weak change points, each
// tested on the stretches between its neighbours over the whole series.
func split(xs []float64, window int, p float64) []ChangePoint {
	step := window / 2
	var weak []ChangePoint
	seen := map[int]bool{}
	for start := 0; start < len(xs); {
		end := min(start+window, len(xs))
		w := xs[start:end]
		found := divisive(w, func(c candidate, iv []stretch) ChangePoint { return tTest(w, c, iv) }, p)
		last := 0
		for _, cp := range found {
			cp.Index += start
			last = cp.Index
			if !seen[cp.Index] {
				seen[cp.Index] = true
				weak = append(weak, cp)
			}
		}
		start = max(last, start+step)
	}
	sort.Slice(weak, func(i, k int) bool { return weak[i].Index < weak[k].Index })
	return retest(xs, weak)
}

// retest redoes every change point's test on the stretches between its
// neighbours.
func retest(xs []float64, cps []ChangePoint) []ChangePoint {
	iv := stretches(cps, len(xs))
	out := make([]ChangePoint, len(cps))
	for i, cp := range cps {
		out[i] = tTest(xs, candidate{cp.Index, cp.Q}, iv)
	}
	return out
}

// merge drops weak change points, the weakest first, until every one
// left has p < level and a magnitude above minMag.
func merge(xs []float64, cps []ChangePoint, level, minMag float64) []ChangePoint {
	pOf := func(c ChangePoint) float64 {
		if math.IsNaN(c.P) {
			return 1
		}
		return c.P
	}
	for len(cps) > 0 {
		weakest := 0
		for i, c := range cps {
			if pOf(c) > pOf(cps[weakest]) {
				weakest = i
			}
		}
		if pOf(cps[weakest]) < level {
			weakest = 0
			for i, c := range cps {
				if c.Magnitude() < cps[weakest].Magnitude() {
					weakest = i
				}
			}
			if cps[weakest].Magnitude() > minMag {
				return cps
			}
		}
		cps = append(cps[:weakest:weakest], cps[weakest+1:]...)
		iv := stretches(cps, len(xs))
		// As Otava: the change points now at the removed one's index and
		// the next, not the one before it (see the package comment).
		for _, i := range []int{weakest, weakest + 1} {
			if i >= 0 && i < len(cps) {
				cps[i] = tTest(xs, candidate{cps[i].Index, cps[i].Q}, iv)
			}
		}
	}
	return cps
}
