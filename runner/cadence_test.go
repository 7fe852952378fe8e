package runner_test

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/runner"
)

// TestCadenceFixedPeriod: ticks that drift (each a little over a second, as
// a loaded machine delivers them) still give a line at every multiple of
// 10 s: 60 lines plus the first over a 10-minute run, not 56.
func TestCadenceFixedPeriod(t *testing.T) {
	t.Parallel()
	c := runner.Cadence{Every: 10 * time.Second}
	var shown []time.Duration
	end := time.Duration(0)
	for i := 1; end < 10*time.Minute; i++ {
		end = time.Duration(i)*time.Second + time.Duration(i%7)*3*time.Millisecond
		if c.Due(end) {
			shown = append(shown, end.Truncate(time.Second))
		}
	}
	if len(shown) != 61 {
		t.Fatalf("%d lines over 10 minutes, want 61: %v", len(shown), shown)
	}
	for i, s := range shown[1:] {
		if want := time.Duration(i+1) * 10 * time.Second; s != want {
			t.Fatalf("line %d at %s, want %s", i+1, s, want)
		}
	}
	// A long stall skips the missed lines rather than printing a burst.
	c = runner.Cadence{Every: 10 * time.Second}
	for _, tc := range []struct {
		end  time.Duration
		want bool
	}{{time.Second, true}, {2 * time.Second, false}, {35 * time.Second, true}, {39 * time.Second, false}, {40 * time.Second, true}} {
		if got := c.Due(tc.end); got != tc.want {
			t.Errorf("Due(%s) = %v, want %v", tc.end, got, tc.want)
		}
	}
}
