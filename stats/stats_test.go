package stats

import (
	"errors"
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Reference quantiles from standard t tables (R: qt(p, df)).
func TestTQuantileKnownValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.706204736},
		{0.975, 2, 4.302652730},
		{0.975, 3, 3.182446305},
		{0.975, 4, 2.776445105},
		{0.975, 5, 2.570581836},
		{0.975, 9, 2.262157163}, // n = 10 runs, the study's case
		{0.975, 10, 2.228138852},
		{0.975, 20, 2.085963447},
		{0.975, 30, 2.042272456},
		{0.975, 100, 1.983971519},
		{0.975, 1000, 1.962339081},
		{0.95, 10, 1.812461123},
		{0.995, 5, 4.032142984},
		{0.9, 1, 3.077683537},
		{0.025, 9, -2.262157163},
		{0.5, 7, 0},
	}
	for _, tc := range tests {
		if got := TQuantile(tc.p, tc.df); !near(got, tc.want, 1e-8) {
			t.Errorf("TQuantile(%g, %g) = %.10f, want %.9f", tc.p, tc.df, got, tc.want)
		}
	}
}

func TestTQuantileEdges(t *testing.T) {
	t.Parallel()
	if !math.IsInf(TQuantile(1, 3), 1) || !math.IsInf(TQuantile(0, 3), -1) {
		t.Error("quantiles of 0 and 1 must be infinite")
	}
	for _, tc := range [][2]float64{{0.5, 0}, {0.5, -1}, {1.5, 3}, {-0.1, 3}, {math.NaN(), 3}} {
		if got := TQuantile(tc[0], tc[1]); !math.IsNaN(got) {
			t.Errorf("TQuantile(%g, %g) = %g, want NaN", tc[0], tc[1], got)
		}
	}
}

func TestTCDFKnownValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ x, df, want float64 }{
		{0, 5, 0.5},
		{1, 1, 0.75},                   // Cauchy
		{1, 2, 0.788675134594813},      // 1/2 + t/(2√(2+t²))
		{-1, 2, 1 - 0.788675134594813}, // symmetry
		{2.262157163, 9, 0.975},
		{math.Inf(1), 3, 1},
		{math.Inf(-1), 3, 0},
	}
	for _, tc := range tests {
		if got := TCDF(tc.x, tc.df); !near(got, tc.want, 1e-9) {
			t.Errorf("TCDF(%g, %g) = %.12f, want %.12f", tc.x, tc.df, got, tc.want)
		}
	}
}

func TestMeanSD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		xs       []float64
		mean, sd float64
	}{
		{"textbook", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		{"constant", []float64{3, 3, 3}, 3, 0},
		{"two", []float64{1, 3}, 2, math.Sqrt2},
	}
	for _, tc := range tests {
		if m, sd := Mean(tc.xs), SD(tc.xs); !near(m, tc.mean, 1e-12) || !near(sd, tc.sd, 1e-12) {
			t.Errorf("%s: mean %g sd %g, want %g %g", tc.name, m, sd, tc.mean, tc.sd)
		}
	}
	if !math.IsNaN(Mean(nil)) || !math.IsNaN(SD([]float64{1})) {
		t.Error("mean of nothing and sd of one value must be NaN")
	}
}

// TestMeanCIHandComputed: 1..10 has mean 5.5, sd √(82.5/9) = 3.0276503541;
// the half-width is 2.2621571628 · 3.0276503541 / √10 = 2.1658505897
// (computed with bc).
func TestMeanCIHandComputed(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	ci, err := MeanCI(xs, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if ci.N != 10 || !near(ci.Mean, 5.5, 1e-12) || !near(ci.SD, 3.027650354097491, 1e-12) ||
		!near(ci.T, 2.262157163, 1e-8) || !near(ci.Lo, 3.334149410330113, 1e-8) || !near(ci.Hi, 7.665850589669887, 1e-8) {
		t.Fatalf("MeanCI(1..10) = %+v", ci)
	}
	if _, err := MeanCI([]float64{4}, 0.95); !errors.Is(err, ErrTooFew) {
		t.Errorf("one sample: err %v, want ErrTooFew", err)
	}
	if _, err := MeanCI(xs, 1); err == nil {
		t.Error("level 1 must be refused")
	}
}
