package distrib

import "math"

// PowerLawFit is the result of FitPowerLaw.
type PowerLawFit struct {
	// Alpha is the fitted exponent: frequency ~ degree^-Alpha.
	Alpha float64 `json:"alpha"`
	// R2 is the coefficient of determination of the log-log regression
	// (1 is a perfect power law; 0 when there is nothing to fit).
	R2 float64 `json:"r2"`
	// N is how many positive counts were fitted.
	N int `json:"n"`
	// Bins is how many non-empty logarithmic bins the regression used.
	Bins int `json:"bins"`
}

// FitPowerLaw fits p(k) ~ k^-alpha to the distribution of the positive
// values in counts (zeros and negatives are ignored: log 0 is undefined).
//
// Method: the values are put in logarithmic bins [2^j, 2^(j+1)); each
// non-empty bin gives a point (x, y) with x = ln of the geometric mean of
// the smallest and largest integer the bin can hold (sqrt(2^j *
// (2^(j+1)-1))) and y = ln of the bin's density, i.e. (values in the bin)
// / (N * 2^j integers in the bin). An ordinary least-squares line y = a + b*x
// is fitted through these points, unweighted; Alpha = -b and R2 = 1 -
// SS_res/SS_tot of that regression. With fewer than 3 non-empty bins, or
// when every point has the same y, Alpha and R2 are 0.
func FitPowerLaw(counts []int) PowerLawFit {
	var bins []int
	n := 0
	for _, c := range counts {
		if c <= 0 {
			continue
		}
		n++
		j := 0
		for v := c; v > 1; v >>= 1 {
			j++
		}
		for len(bins) <= j {
			bins = append(bins, 0)
		}
		bins[j]++
	}
	fit := PowerLawFit{N: n}
	var xs, ys []float64
	for j, m := range bins {
		if m == 0 {
			continue
		}
		lo := math.Ldexp(1, j)
		width := lo
		hi := lo + width - 1
		xs = append(xs, 0.5*(math.Log(lo)+math.Log(hi)))
		ys = append(ys, math.Log(float64(m)/(float64(n)*width)))
	}
	fit.Bins = len(xs)
	if len(xs) < 3 {
		return fit
	}
	slope, r2, ok := linearFit(xs, ys)
	if !ok {
		return fit
	}
	fit.Alpha, fit.R2 = -slope, r2
	return fit
}

// linearFit is ordinary least squares of y on x: the slope and R^2. ok is
// false when x or y has no variance.
func linearFit(xs, ys []float64) (slope, r2 float64, ok bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += float64(dx * dx)
		sxy += float64(dx * dy)
		syy += float64(dy * dy)
	}
	if sxx == 0 || syy == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	intercept := my - float64(slope*mx)
	var ssRes float64
	for i := range xs {
		e := ys[i] - (intercept + float64(slope*xs[i]))
		ssRes += float64(e * e)
	}
	return slope, 1 - ssRes/syy, true
}
