// Package stats holds the small statistics the studies report over repeated
// runs: mean, sample standard deviation and Student-t confidence intervals.
// It is written out here rather than imported because the t quantile is the
// only non-trivial piece and a dependency for one function is not worth it.
package stats

import (
	"errors"
	"fmt"
	"math"
)

// Mean is the arithmetic mean of xs (NaN when xs is empty).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// SD is the sample standard deviation of xs (divisor n-1), the estimate of
// the spread of repeated runs; NaN when there are fewer than two values.
func SD(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// Interval is a sample's mean with its confidence interval.
type Interval struct {
	N      int
	Mean   float64
	SD     float64 // sample standard deviation (n-1)
	Lo, Hi float64 // Mean ∓ t(level, n-1) · SD / √n
	T      float64 // the t quantile used
	Level  float64 // e.g. 0.95
}

// ErrTooFew is returned when a confidence interval needs more samples.
var ErrTooFew = errors.New("a confidence interval needs at least 2 samples")

// MeanCI returns the mean of xs with its two-sided Student-t confidence
// interval at level (0.95 for the usual 95 %), n-1 degrees of freedom. The
// t distribution rather than the normal is what makes 10 runs honest: with
// n = 10 the half-width is 2.262 standard errors, not 1.960.
func MeanCI(xs []float64, level float64) (Interval, error) {
	if !(level > 0 && level < 1) {
		return Interval{}, fmt.Errorf("confidence level %g must be in (0, 1)", level)
	}
	n := len(xs)
	if n < 2 {
		return Interval{N: n, Mean: Mean(xs), SD: math.NaN(), Level: level}, ErrTooFew
	}
	m, sd := Mean(xs), SD(xs)
	t := TQuantile(0.5+level/2, float64(n-1))
	half := t * sd / math.Sqrt(float64(n))
	return Interval{N: n, Mean: m, SD: sd, Lo: m - half, Hi: m + half, T: t, Level: level}, nil
}

// TCDF is the cumulative distribution function of Student's t with df
// degrees of freedom: P(T <= t) = 1 - I_x(df/2, 1/2)/2 for t > 0, with
// x = df/(df+t²) and I the regularized incomplete beta function.
func TCDF(t, df float64) float64 {
	if df <= 0 || math.IsNaN(t) || math.IsNaN(df) {
		return math.NaN()
	}
	if math.IsInf(t, 1) {
		return 1
	}
	if math.IsInf(t, -1) {
		return 0
	}
	tail := 0.5 * regIncBeta(df/2, 0.5, df/(df+t*t))
	if t > 0 {
		return 1 - tail
	}
	return tail
}

// TQuantile is the inverse of TCDF: the t with P(T <= t) = p. It brackets
// and bisects TCDF, which is monotone, to full float64 precision; 200 steps
// are far more than needed and cost microseconds, called once per point.
func TQuantile(p, df float64) float64 {
	switch {
	case df <= 0 || math.IsNaN(p) || math.IsNaN(df) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case p < 0.5:
		return -TQuantile(1-p, df)
	}
	lo, hi := 0.0, 1.0
	for TCDF(hi, df) < p {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 1) {
			return hi
		}
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if TCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by the
// continued fraction of Numerical Recipes (betacf, modified Lentz), using
// the symmetry I_x(a,b) = 1 - I_(1-x)(b,a) where the fraction converges
// slowly.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const (
		maxIter = 300
		eps     = 1e-16
		tiny    = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
