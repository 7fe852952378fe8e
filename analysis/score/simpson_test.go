package score

import (
	"math"
	"testing"
)

func TestSimpson(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		f     func(float64) float64
		a, b  float64
		eps   float64
		depth int
		want  float64
		tol   float64
	}{
		// ∫₀¹ x³ dx = 1/4; Simpson is exact for cubics even with no split.
		{"x³ on [0,1], depth 0", func(x float64) float64 { return x * x * x }, 0, 1, 1e-12, 0, 0.25, 1e-15},
		// ∫₋₁² (x³ − 2x + 1) dx = [x⁴/4 − x² + x]₋₁² = (4 − 4 + 2) − (1/4 − 1 − 1) = 3.75.
		{"cubic on [-1,2]", func(x float64) float64 { return x*x*x - 2*x + 1 }, -1, 2, 1e-12, 20, 3.75, 1e-13},
		// ∫₂¹ x² dx = −(8 − 1)/3 = −7/3: reversed bounds give the negative.
		{"reversed bounds", func(x float64) float64 { return x * x }, 2, 1, 1e-12, 20, -7.0 / 3, 1e-13},
		{"empty interval", func(x float64) float64 { return 1 / x }, 3, 3, 1e-12, 20, 0, 0},
		// ∫₀^π sin x dx = 2.
		{"sin on [0,π]", math.Sin, 0, math.Pi, 1e-10, 50, 2, 1e-9},
		// ∫₀¹ x⁴ dx = 1/5: not exact for Simpson, adaptivity must get there.
		{"x⁴ on [0,1]", func(x float64) float64 { return x * x * x * x }, 0, 1, 1e-12, 50, 0.2, 1e-11},
		// ∫₋₁² |x| dx = 1/2 + 2 = 2.5, with the kink at 0 off every
		// midpoint of the first splits (1/2, −1/4, 5/4, …).
		{"|x| kink on [-1,2]", math.Abs, -1, 2, 1e-10, 50, 2.5, 1e-9},
		// ∫₀¹ √x dx = 2/3: a singular derivative at 0.
		{"√x on [0,1]", math.Sqrt, 0, 1, 1e-10, 50, 2.0 / 3, 1e-8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Simpson(tc.f, tc.a, tc.b, tc.eps, tc.depth); !near(got, tc.want, tc.tol) {
				t.Errorf("got %.15g, want %.15g (±%g)", got, tc.want, tc.tol)
			}
		})
	}
}

// The depth bound caps the work: depth d evaluates f at most
// 3 + 2·(2^(d+1) − 1) times, whatever the tolerance asks.
func TestSimpsonDepthBound(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{0, 1, 3, 6} {
		calls := 0
		f := func(x float64) float64 { calls++; return math.Sqrt(x) }
		got := Simpson(f, 0, 1, 0, depth) // eps 0: never satisfied
		limit := 3 + 2*((1<<(depth+1))-1)
		if calls > limit {
			t.Errorf("depth %d: %d evaluations, limit %d", depth, calls, limit)
		}
		if !near(got, 2.0/3, 0.05) {
			t.Errorf("depth %d: %g is not even close to 2/3", depth, got)
		}
	}
}

// integrateKnots splits at knots: a natural spline's integral over its
// whole domain is then exact. For (0,0) (1,1) (2,0), S = 1.5x − x³/2 on
// [0,1]: ∫₀¹ = 0.75 − 0.125 = 0.625, twice by symmetry = 1.25.
func TestIntegrateSplineExact(t *testing.T) {
	t.Parallel()
	s, err := NewSpline([]float64{0, 1, 2}, []float64{0, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	got := integrateKnots(func(x float64) float64 { calls++; return s.At(x) }, s.Knots(), 0, 2, 1e-12, 50)
	if !near(got, 1.25, 1e-14) {
		t.Errorf("∫ spline = %.16g, want 1.25", got)
	}
	if calls != 2*5 { // one Simpson step per piece: exact at once
		t.Errorf("%d evaluations, want 10 (no split needed on a cubic piece)", calls)
	}
}
