package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// ar1 is an AR(1) series around mean: x_t = mean + rho (x_{t-1} - mean) + e.
func ar1(rng *rand.Rand, n int, mean, sd, rho float64) []float64 {
	out := make([]float64, n)
	x := mean
	for i := range out {
		x = mean + rho*(x-mean) + sd*rng.NormFloat64()
		out[i] = x
	}
	return out
}

// falsePositives counts how often two series of the same process are
// called different at 95 %.
func falsePositives(t *testing.T, rho float64, pairs, n int) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(rho*1000)))
	fp := 0
	for range pairs {
		w, err := Welch(ar1(rng, n, 100, 5, rho), ar1(rng, n, 100, 5, rho), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if w.Lo > 0 || w.Hi < 0 {
			fp++
		}
	}
	return float64(fp) / float64(pairs)
}

// Two runs of one unchanged system are called different about as often as
// the level says, also when consecutive seconds are correlated — which the
// uncorrected test gets badly wrong (checked below).
func TestWelchFalsePositiveRate(t *testing.T) {
	for _, tc := range []struct {
		rho, max float64
	}{{0, 0.08}, {0.5, 0.10}, {0.8, 0.12}} {
		rate := falsePositives(t, tc.rho, 1000, 120)
		t.Logf("rho %.1f: %.1f %% called different", tc.rho, 100*rate)
		if rate > tc.max {
			t.Errorf("rho %.1f: %.1f %% of identical pairs called different, want <= %.0f %%", tc.rho, 100*rate, 100*tc.max)
		}
	}
	// Without the correction the same rho 0.8 series are "different" far
	// more often: the correction is what the test above measures.
	rng := rand.New(rand.NewPCG(9, 9))
	naive := 0
	for range 1000 {
		a, b := ar1(rng, 120, 100, 5, 0.8), ar1(rng, 120, 100, 5, 0.8)
		ma, mb := mean(a), mean(b)
		se := math.Sqrt(variance(a)/120 + variance(b)/120)
		if math.Abs(mb-ma) > 1.98*se {
			naive++
		}
	}
	if naive < 150 {
		t.Errorf("uncorrected test: %d of 1000 identical pairs called different; the fixture is not autocorrelated enough to show the correction", naive)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func variance(xs []float64) float64 {
	m, s := mean(xs), 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// A real 10 % shift in noisy, correlated series is found nearly always.
func TestWelchFindsARealShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	found := 0
	for range 200 {
		w, err := Welch(ar1(rng, 120, 100, 5, 0.5), ar1(rng, 120, 110, 5, 0.5), 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if w.Lo > 0 {
			found++
		}
	}
	if found < 190 {
		t.Errorf("a 10 %% shift found in %d of 200 pairs, want >= 190", found)
	}
}

func TestLag1AndEffectiveN(t *testing.T) {
	if got := Lag1([]float64{1, 1, 1, 1}); got != 0 {
		t.Errorf("constant series: lag-1 %v, want 0", got)
	}
	// Alternating: strongly negative, so no inflation: n_eff = n.
	alt := []float64{1, -1, 1, -1, 1, -1}
	if r := Lag1(alt); r > -0.5 {
		t.Errorf("alternating series: lag-1 %v, want strongly negative", r)
	}
	if n := EffectiveN(alt); n != 6 {
		t.Errorf("alternating: n_eff %v, want 6", n)
	}
	// A slow ramp: rho near 1, n_eff floored at 2.
	ramp := make([]float64, 50)
	for i := range ramp {
		ramp[i] = float64(i)
	}
	if n := EffectiveN(ramp); n < 2 || n > 3 {
		t.Errorf("ramp: n_eff %v, want about 2", n)
	}
	if _, err := Welch([]float64{1, 2}, []float64{1, 2, 3}, 0.95); err != ErrTooShort {
		t.Errorf("2 seconds: %v, want ErrTooShort", err)
	}
}

// run builds a result with n one-second intervals of op whose latencies
// are drawn around lat µs, rate operations a second.
func run(t *testing.T, rng *rand.Rand, n int, lat float64, rate int) *result.Run {
	t.Helper()
	secs := make([]second, n)
	for i := range secs {
		secs[i] = second{count: rate, lat: lat}
	}
	return build(t, rng, "synthetic", secs)
}

func TestRunsAndGates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := run(t, rng, 30, 1000, 200)
	same := run(t, rng, 30, 1000, 200)
	slow := run(t, rng, 30, 1500, 200)
	gates, err := ParseGates("p99+10%, throughput-5%")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Runs(base, slow, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	byFig := map[string]Row{}
	for _, r := range rows {
		byFig[r.Figure] = r
	}
	if p := byFig["p99"]; !p.Significant || p.Change < 0.3 || p.Better() {
		t.Errorf("50 %% slower reads: p99 row %+v", p)
	}
	if v := Violations(rows, gates); len(v) != 1 || !strings.Contains(v[0], "p99") {
		t.Errorf("violations %v, want the p99 gate only", v)
	}
	rows, err = Runs(base, same, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if v := Violations(rows, gates); len(v) != 0 {
		t.Errorf("an unchanged run broke a gate: %v", v)
	}
}

func TestParseGates(t *testing.T) {
	for _, tc := range []struct{ spec, err string }{
		{"p99+10%", ""},
		{"mean:post+5%,throughput-2.5%", ""},
		{"p99-10%", "gets worse with +"},
		{"throughput+5%", "gets worse with -"},
		{"p98+10%", "unknown figure"},
		{"p99+ten%", "not a percentage"},
		{"p99", "want FIGURE"},
	} {
		_, err := ParseGates(tc.spec)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseGates(%q) = %v, want error containing %q", tc.spec, err, tc.err)
		}
	}
}
