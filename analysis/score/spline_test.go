package score

import (
	"math"
	"testing"
)

func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol
}

func TestSplineValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		xs, ys []float64
		at     []float64
		want   []float64
	}{
		{
			// Two points: the straight line y = 1 + 2x, extended beyond.
			name: "two points are a line",
			xs:   []float64{0, 2}, ys: []float64{1, 5},
			at:   []float64{0, 0.5, 1, 2, -1, 3},
			want: []float64{1, 2, 3, 5, -1, 7},
		},
		{
			// Collinear points: the natural spline has M = 0 everywhere.
			name: "collinear points are a line",
			xs:   []float64{0, 1, 3, 4, 7}, ys: []float64{2, 1.5, 0.5, 0, -1.5},
			at:   []float64{0.5, 2, 5.5},
			want: []float64{1.75, 1, -0.75},
		},
		{
			// (0,0) (1,1) (2,0), h = 1, M0 = M2 = 0:
			//   4·M1 = 6·((0−1)/1 − (1−0)/1) = −12  →  M1 = −3.
			// On [0,1]: S(x) = M1·x³/6 + (y1 − M1/6)·x = −x³/2 + 1.5x,
			// S(0.5) = 0.75 − 0.0625 = 0.6875; by symmetry S(1.5) = 0.6875.
			// End slope at 0: S'(0) = 1.5, so S(−1) = −1.5 (linear beyond).
			name: "three points hand computed",
			xs:   []float64{0, 1, 2}, ys: []float64{0, 1, 0},
			at:   []float64{0.5, 1.5, 1, -1},
			want: []float64{0.6875, 0.6875, 1, -1.5},
		},
		{
			// y = x³ at x = 0,1,2,3, h = 1, M0 = M3 = 0:
			//   4·M1 +   M2 = 6·(8 − 2·1 + 0)  = 36
			//     M1 + 4·M2 = 6·(27 − 2·8 + 1) = 72
			// → M1 = 4.8, M2 = 16.8. At x = 1.5 (a = b = 0.5 on [1,2]):
			//   S = a·y1 + b·y2 + ((a³−a)·M1 + (b³−b)·M2)·h²/6
			//     = 0.5 + 4 + (−0.375·4.8 − 0.375·16.8)/6 = 4.5 − 1.35 = 3.15
			// (the cubic itself gives 3.375: a natural spline does not
			// reproduce x³, whose second derivative is not 0 at the ends).
			// At x = 0.5 on [0,1]: 0.5·1 + (−0.375·4.8)/6 = 0.5 − 0.3 = 0.2.
			// At x = 2.5 on [2,3]: 0.5·8 + 0.5·27 + (−0.375·16.8)/6 = 17.5 − 1.05 = 16.45.
			name: "cubic's natural spline hand computed",
			xs:   []float64{0, 1, 2, 3}, ys: []float64{0, 1, 8, 27},
			at:   []float64{1.5, 0.5, 2.5},
			want: []float64{3.15, 0.2, 16.45},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSpline(tc.xs, tc.ys)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range tc.xs { // interpolates exactly at the knots
				if got := s.At(x); !near(got, tc.ys[i], 1e-12) {
					t.Errorf("At(knot %g) = %g, want %g", x, got, tc.ys[i])
				}
			}
			for i, x := range tc.at {
				if got := s.At(x); !near(got, tc.want[i], 1e-12) {
					t.Errorf("At(%g) = %.15g, want %g", x, got, tc.want[i])
				}
			}
		})
	}
}

// Between knots the spline is smooth: its first derivative, estimated on
// both sides of an interior knot, must agree (C¹), for uneven spacing too.
func TestSplineSmoothAtKnots(t *testing.T) {
	t.Parallel()
	xs := []float64{0, 0.5, 2, 2.2, 5, 9}
	ys := []float64{3, -1, 4, 4.5, 0, 2}
	s, err := NewSpline(xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for _, x := range xs[1 : len(xs)-1] {
		left := (s.At(x) - s.At(x-h)) / h
		right := (s.At(x+h) - s.At(x)) / h
		if math.Abs(left-right) > 1e-3 {
			t.Errorf("slope at knot %g: %g from the left, %g from the right", x, left, right)
		}
	}
}

func TestSplineRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		xs, ys []float64
	}{
		{"one point", []float64{1}, []float64{1}},
		{"length mismatch", []float64{1, 2}, []float64{1}},
		{"equal x", []float64{1, 1, 2}, []float64{1, 2, 3}},
		{"decreasing x", []float64{1, 3, 2}, []float64{1, 2, 3}},
		{"NaN", []float64{1, 2}, []float64{math.NaN(), 2}},
		{"Inf", []float64{1, math.Inf(1)}, []float64{1, 2}},
	}
	for _, tc := range tests {
		if _, err := NewSpline(tc.xs, tc.ys); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
