package score

import (
	"math"
	"slices"
	"testing"
)

func TestDeltasAndBaseline(t *testing.T) {
	t.Parallel()
	ys := []float64{10, 12, 11, 15, 15}
	if got, want := Deltas(ys), []float64{2, 1, 4, 0}; !slices.Equal(got, want) {
		t.Fatalf("Deltas = %v, want %v", got, want)
	}
	tests := []struct {
		name string
		ys   []float64
		want float64
	}{
		{"odd count of deltas", []float64{10, 12, 11, 15}, 2},        // deltas 2 1 4 → median 2
		{"even count of deltas", []float64{10, 12, 11, 15, 15}, 1.5}, // 0 1 2 4 → (1+2)/2
		{"one delta", []float64{3, 5}, 2},
		{"no delta", []float64{3}, math.NaN()},
	}
	for _, tc := range tests {
		if got := Baseline(tc.ys); !near(got, tc.want, 0) {
			t.Errorf("%s: Baseline = %g, want %g", tc.name, got, tc.want)
		}
	}
}

func TestStableIndex(t *testing.T) {
	t.Parallel()
	// A noisy plateau (indices 0–6), the join after index 6, a step up and
	// a settling:
	//   plateau 10.0 10.3 10.1 10.4 10.2 10.5 10.3
	//   deltas       .3   .2   .3   .2   .3   .2 → sorted .2 .2 .2 .3 .3 .3,
	//   baseline = (.2 + .3)/2 = .25
	//   after   14.0 13.0 12.0 11.0 10.6 10.5 10.4 10.5 10.4 10.5 10.6
	//   index      7    8    9   10   11   12   13   14   15   16   17
	//   delta    3.7   1    1    1   .4   .1   .1   .1   .1   .1   .1
	// The first 5 consecutive deltas below .25 are those of 12…16: i = 16.
	plateau := []float64{10.0, 10.3, 10.1, 10.4, 10.2, 10.5, 10.3}
	settling := append(slices.Clone(plateau), 14.0, 13.0, 12.0, 11.0, 10.6, 10.5, 10.4, 10.5, 10.4, 10.5, 10.6)
	if b := Baseline(plateau); !near(b, 0.25, 1e-12) {
		t.Fatalf("plateau baseline %g, want 0.25", b)
	}
	// Never settling: after the join the times keep swinging by 0.5.
	swinging := append(slices.Clone(plateau), 11, 10.5, 11, 10.5, 11, 10.5, 11, 10.5, 11)
	// One delta breaks the run: .1 .1 .1 .1 .3 .1 .1 .1 .1 .1 → i = from + 10.
	broken := []float64{0, 1, 1.1, 1.2, 1.3, 1.4, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2}
	// Deltas exactly equal to the baseline are not below it (strict).
	equal := []float64{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}

	tests := []struct {
		name     string
		ys       []float64
		from     int
		baseline float64
		window   int
		want     int
	}{
		{"noisy plateau, step up, settling", settling, 6, 0.25, 5, 16},
		{"window of 3 settles earlier", settling, 6, 0.25, 3, 14},
		{"never settling", swinging, 6, 0.25, 5, -1},
		{"a large delta restarts the window", broken, 1, 0.25, 5, 11},
		{"equal to the baseline is not below", equal, 0, 1, 5, -1},
		{"from late: window must fit after it", settling, 13, 0.25, 5, -1},
		{"from before the plateau's end: the plateau itself qualifies", []float64{1, 1.1, 1.2, 1.3, 1.4, 1.5}, 0, 0.25, 5, 5},
		{"baseline 0 is never beaten", []float64{1, 1, 1, 1, 1, 1, 1}, 0, 0, 5, -1},
		{"NaN baseline", settling, 6, math.NaN(), 5, -1},
		{"window 0 is invalid", settling, 6, 0.25, 0, -1},
	}
	for _, tc := range tests {
		if got := StableIndex(tc.ys, tc.from, tc.baseline, tc.window); got != tc.want {
			t.Errorf("%s: StableIndex = %d, want %d", tc.name, got, tc.want)
		}
	}
}
