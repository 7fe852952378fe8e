// Package distrib holds the seeded random distributions the workload
// generators draw from and the power-law fit their statistics report.
//
// Every sampler takes a *rand.Rand (math/rand/v2) so a generator seeded
// with a fixed PCG state produces the same values on every run. Samplers
// avoid map iteration and keep floating-point work to single operations
// with explicit conversions (which forbid fused multiply-add), so results
// do not depend on the machine in practice.
package distrib

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// PowerLaw is a discrete bounded power law: P(k) = k^-Alpha / Z for the
// integers Min <= k <= Max, Z the normalising sum. Build it with
// NewPowerLaw; sampling is exact (inverse CDF over a precomputed table,
// O(log(Max-Min)) per sample, 8 bytes of table per value in the range).
type PowerLaw struct {
	Alpha    float64
	Min, Max int
	cdf      []float64 // cdf[i] = P(K <= Min+i), cdf[last] == 1
	// guide[b] is the first i with cdf[i] >= b/len(guide-1): quantile
	// searches only between guide[b] and guide[b+1] (same answer as a
	// search of the whole table, in a few steps instead of log2(len(cdf))).
	guide []int32
}

// NewPowerLaw builds the discrete power law on [min, max] with exponent
// alpha. It needs 1 <= min <= max, alpha > 0 and finite, and a range of at
// most 1<<26 values.
func NewPowerLaw(alpha float64, min, max int) (*PowerLaw, error) {
	switch {
	case math.IsNaN(alpha) || math.IsInf(alpha, 0) || alpha <= 0:
		return nil, fmt.Errorf("distrib: power-law exponent must be positive and finite, got %v", alpha)
	case min < 1:
		return nil, fmt.Errorf("distrib: power-law minimum must be at least 1, got %d", min)
	case max < min:
		return nil, fmt.Errorf("distrib: power-law maximum %d is below minimum %d", max, min)
	case max-min >= 1<<26:
		return nil, fmt.Errorf("distrib: power-law range [%d, %d] is too wide", min, max)
	}
	n := max - min + 1
	cdf := make([]float64, n)
	sum := 0.0
	for i := 0; i < n; i++ {
		sum += math.Pow(float64(min+i), -alpha)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	cdf[n-1] = 1
	g := 1
	for g < n && g < 1<<16 {
		g *= 2
	}
	guide := make([]int32, g+1)
	for b := range guide {
		guide[b] = int32(sort.SearchFloat64s(cdf, float64(b)/float64(g)))
	}
	guide[g] = int32(n - 1)
	return &PowerLaw{Alpha: alpha, Min: min, Max: max, cdf: cdf, guide: guide}, nil
}

// Sample draws one value in [p.Min, p.Max].
func (p *PowerLaw) Sample(r *rand.Rand) int {
	return p.quantile(r.Float64())
}

// Mean is the exact expectation of the distribution.
func (p *PowerLaw) Mean() float64 {
	m, prev := 0.0, 0.0
	for i, c := range p.cdf {
		m += float64(p.Min+i) * (c - prev)
		prev = c
	}
	return m
}

// BoundedPareto draws from the continuous distribution with density
// proportional to x^-alpha on [lo, hi] (0 < lo < hi, alpha > 0; alpha == 1
// is the log-uniform case), by inverting its CDF.
func BoundedPareto(r *rand.Rand, alpha, lo, hi float64) float64 {
	u := r.Float64()
	if alpha == 1 {
		return lo * math.Exp(u*math.Log(hi/lo))
	}
	a := 1 - alpha
	la, ha := math.Pow(lo, a), math.Pow(hi, a)
	x := math.Pow(la+float64(u*(ha-la)), 1/a)
	return math.Min(hi, math.Max(lo, x))
}

// Normal draws from the normal distribution N(mu, sigma).
func Normal(r *rand.Rand, mu, sigma float64) float64 {
	return float64(sigma*r.NormFloat64()) + mu
}

// Weighted samples indices 0..len(w)-1 with probability proportional to
// their weight, in O(1) per sample (Vose's alias method).
type Weighted struct {
	prob  []float64
	alias []int32
}

// NewWeighted builds a sampler over non-negative, finite weights with a
// positive sum.
func NewWeighted(w []float64) (*Weighted, error) {
	n := len(w)
	if n == 0 {
		return nil, errors.New("distrib: no weights")
	}
	if n > math.MaxInt32 {
		return nil, errors.New("distrib: too many weights")
	}
	sum := 0.0
	for i, x := range w {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("distrib: weight %d is %v", i, x)
		}
		sum += x
	}
	if sum <= 0 {
		return nil, errors.New("distrib: weights sum to zero")
	}
	prob := make([]float64, n)
	alias := make([]int32, n)
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		prob[s], alias[s] = scaled[s], l
		scaled[l] = (scaled[l] + scaled[s]) - 1
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large {
		prob[i], alias[i] = 1, i
	}
	for _, i := range small { // only left by rounding error
		prob[i], alias[i] = 1, i
	}
	return &Weighted{prob: prob, alias: alias}, nil
}

// Len is the number of indices.
func (s *Weighted) Len() int { return len(s.prob) }

// Sample draws one index.
func (s *Weighted) Sample(r *rand.Rand) int {
	i := r.IntN(len(s.prob))
	if r.Float64() < s.prob[i] {
		return i
	}
	return int(s.alias[i])
}

// Fenwick is a binary indexed tree of non-negative integer weights at
// indices 0..n-1: point updates, prefix sums and sampling proportional to
// weight in O(log n), all in exact integer arithmetic.
type Fenwick struct {
	tree  []int64 // 1-based
	vals  []int64
	total int64
	step  int // highest power of two <= n
}

// NewFenwick returns a tree of n zero weights.
func NewFenwick(n int) *Fenwick {
	step := 1
	for step*2 <= n {
		step *= 2
	}
	return &Fenwick{tree: make([]int64, n+1), vals: make([]int64, n), step: step}
}

// Len is the number of indices.
func (f *Fenwick) Len() int { return len(f.vals) }

// Add adds delta to the weight at i; the weight must stay non-negative.
func (f *Fenwick) Add(i int, delta int64) {
	if f.vals[i]+delta < 0 {
		panic("distrib: negative Fenwick weight")
	}
	f.vals[i] += delta
	f.total += delta
	for j := i + 1; j < len(f.tree); j += j & -j {
		f.tree[j] += delta
	}
}

// Get is the weight at i.
func (f *Fenwick) Get(i int) int64 { return f.vals[i] }

// Total is the sum of all weights.
func (f *Fenwick) Total() int64 { return f.total }

// Find returns the index i such that the sum of weights before i is <= x
// and the sum through i is > x, for 0 <= x < Total(). Drawing x uniformly
// from [0, Total()) samples i with probability weight(i)/Total().
func (f *Fenwick) Find(x int64) int {
	pos := 0
	for step := f.step; step > 0; step >>= 1 {
		if next := pos + step; next < len(f.tree) && f.tree[next] <= x {
			pos = next
			x -= f.tree[next]
		}
	}
	return pos // 0-based index of the (pos+1)th element
}

// SampleStratified draws n values, one from each of the n equal-probability
// strata of the distribution (u_i uniform in [i/n, (i+1)/n)), returned in
// random order. Each value on its own has exactly the distribution of
// Sample, but the n values together follow the distribution far more
// closely than n independent draws: their sum varies much less, which keeps
// a generated dataset's size close to its expectation for every seed.
func (p *PowerLaw) SampleStratified(r *rand.Rand, n int) []int {
	out := make([]int, n)
	for i := range out {
		u := (float64(i) + r.Float64()) / float64(n)
		out[i] = p.quantile(u)
	}
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Quantile is the smallest value k with P(K <= k) > u, for u in [0, 1):
// the value a uniform draw u maps to (Sample is Quantile of a uniform
// draw), for generators that draw u themselves (stratified per item).
func (p *PowerLaw) Quantile(u float64) int { return p.quantile(u) }

// quantile is the smallest value k with P(K <= k) > u, for u in [0, 1).
func (p *PowerLaw) quantile(u float64) int {
	// SearchFloat64s returns the first i with cdf[i] >= u; u == cdf[i]
	// belongs to the next value because u is drawn from [0, 1).
	g := len(p.guide) - 1
	b := int(u * float64(g)) // exact: g is a power of two
	lo, hi := int(p.guide[b]), int(p.guide[min(b+1, g)])
	i := lo + sort.SearchFloat64s(p.cdf[lo:hi+1], u)
	for i < len(p.cdf)-1 && p.cdf[i] <= u {
		i++
	}
	return p.Min + i
}
