package score

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Spline is a natural cubic spline: a piecewise cubic through every point,
// with continuous first and second derivatives and a zero second derivative
// at both ends. The study approximated its curves by "cubic splines
// interpolating the given points"; the natural end condition is the one that
// needs no slope the data does not give.
type Spline struct {
	xs, ys []float64
	m      []float64 // second derivatives at the knots
}

// NewSpline builds the natural cubic spline through (xs[i], ys[i]). The xs
// must be strictly increasing and every value finite; at least two points
// are needed (two points give the straight line through them).
func NewSpline(xs, ys []float64) (*Spline, error) {
	n := len(xs)
	if n != len(ys) {
		return nil, fmt.Errorf("spline: %d x values but %d y values", n, len(ys))
	}
	if n < 2 {
		return nil, errors.New("spline: at least two points are needed")
	}
	for i := range n {
		if !finite(xs[i]) || !finite(ys[i]) {
			return nil, fmt.Errorf("spline: point %d (%g, %g) is not finite", i, xs[i], ys[i])
		}
		if i > 0 && !(xs[i] > xs[i-1]) {
			return nil, fmt.Errorf("spline: x values must be strictly increasing (x[%d] = %g after %g)", i, xs[i], xs[i-1])
		}
	}
	s := &Spline{xs: append([]float64(nil), xs...), ys: append([]float64(nil), ys...), m: make([]float64, n)}
	if n == 2 {
		return s, nil
	}
	// Interior second derivatives M[1..n-2] solve the tridiagonal system
	//   h[i-1] M[i-1] + 2 (h[i-1] + h[i]) M[i] + h[i] M[i+1]
	//     = 6 ((y[i+1]-y[i])/h[i] - (y[i]-y[i-1])/h[i-1]),  M[0] = M[n-1] = 0,
	// solved by the Thomas algorithm (the matrix is diagonally dominant, so
	// no pivoting is needed).
	k := n - 2
	diag := make([]float64, k)
	rhs := make([]float64, k)
	sub := make([]float64, k) // sub[j] multiplies M[j] in row j+1 (and super in row j)
	for j := range k {
		i := j + 1
		h0, h1 := xs[i]-xs[i-1], xs[i+1]-xs[i]
		diag[j] = 2 * (h0 + h1)
		rhs[j] = 6 * ((ys[i+1]-ys[i])/h1 - (ys[i]-ys[i-1])/h0)
		sub[j] = h1
	}
	for j := 1; j < k; j++ {
		w := sub[j-1] / diag[j-1]
		diag[j] -= w * sub[j-1]
		rhs[j] -= w * rhs[j-1]
	}
	s.m[k] = rhs[k-1] / diag[k-1]
	for j := k - 2; j >= 0; j-- {
		s.m[j+1] = (rhs[j] - sub[j]*s.m[j+2]) / diag[j]
	}
	return s, nil
}

// Knots returns the spline's x values (a copy).
func (s *Spline) Knots() []float64 { return append([]float64(nil), s.xs...) }

// At evaluates the spline at x. Outside the knots it continues as the
// straight line with the end slope, which is what the natural end condition
// (zero curvature) implies; the scores only evaluate it between knots.
func (s *Spline) At(x float64) float64 {
	n := len(s.xs)
	if x <= s.xs[0] {
		h := s.xs[1] - s.xs[0]
		slope := (s.ys[1]-s.ys[0])/h - h*(2*s.m[0]+s.m[1])/6
		return s.ys[0] + slope*(x-s.xs[0])
	}
	if x >= s.xs[n-1] {
		h := s.xs[n-1] - s.xs[n-2]
		slope := (s.ys[n-1]-s.ys[n-2])/h + h*(s.m[n-2]+2*s.m[n-1])/6
		return s.ys[n-1] + slope*(x-s.xs[n-1])
	}
	// i: the piece [xs[i], xs[i+1]] holding x.
	i := sort.SearchFloat64s(s.xs, x) - 1
	if i < 0 {
		i = 0
	}
	h := s.xs[i+1] - s.xs[i]
	a := (s.xs[i+1] - x) / h
	b := (x - s.xs[i]) / h
	return a*s.ys[i] + b*s.ys[i+1] + ((a*a*a-a)*s.m[i]+(b*b*b-b)*s.m[i+1])*h*h/6
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
