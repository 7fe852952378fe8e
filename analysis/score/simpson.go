package score

import "math"

// Simpson integrates f over [a, b] by recursive adaptive Simpson quadrature,
// the method the study used on its splines: an interval is halved until the
// two halves' Simpson estimates differ from the whole one by at most 15·eps
// (the error estimate of Simpson's rule), and the result carries the
// Richardson correction (left + right + (left + right − whole)/15). eps is
// an absolute tolerance, halved with each split; maxDepth bounds the
// recursion (0 is one Simpson step with its correction), so a function with
// a kink or a singularity costs at most about 2^(maxDepth+1) evaluations.
// b < a gives the negative of the integral over [b, a]. Simpson's rule is
// exact for polynomials up to degree three.
func Simpson(f func(float64) float64, a, b, eps float64, maxDepth int) float64 {
	if a == b {
		return 0
	}
	if maxDepth < 0 {
		maxDepth = 0
	}
	eps = math.Abs(eps)
	fa, fb := f(a), f(b)
	m := (a + b) / 2
	fm := f(m)
	whole := (b - a) / 6 * (fa + 4*fm + fb)
	return simpsonStep(f, a, b, fa, fm, fb, whole, eps, maxDepth)
}

func simpsonStep(f func(float64) float64, a, b, fa, fm, fb, whole, eps float64, depth int) float64 {
	m := (a + b) / 2
	lm, rm := (a+m)/2, (m+b)/2
	flm, frm := f(lm), f(rm)
	left := (m - a) / 6 * (fa + 4*flm + fm)
	right := (b - m) / 6 * (fm + 4*frm + fb)
	delta := left + right - whole
	if depth <= 0 || math.Abs(delta) <= 15*eps || math.IsNaN(delta) {
		return left + right + delta/15
	}
	return simpsonStep(f, a, m, fa, flm, fm, left, eps/2, depth-1) +
		simpsonStep(f, m, b, fm, frm, fb, right, eps/2, depth-1)
}

// integrateKnots integrates f over [a, b] piece by piece between the knots
// that fall inside it: a spline is a plain cubic on each piece, where
// Simpson's rule is exact, so adaptivity is only spent where f has a kink
// (|curve − ramp| where they cross, max(0, SD) where the SD spline dips
// below zero). eps is shared among the pieces in proportion to their length.
func integrateKnots(f func(float64) float64, knots []float64, a, b, eps float64, maxDepth int) float64 {
	if b <= a {
		return 0
	}
	cuts := []float64{a}
	for _, k := range knots {
		if k > a && k < b {
			cuts = append(cuts, k)
		}
	}
	cuts = append(cuts, b)
	var sum float64
	for i := 1; i < len(cuts); i++ {
		sum += Simpson(f, cuts[i-1], cuts[i], eps*(cuts[i]-cuts[i-1])/(b-a), maxDepth)
	}
	return sum
}
