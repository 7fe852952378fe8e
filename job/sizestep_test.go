package job

import (
	"testing"
	"time"
)

// TestSizeStep: a job whose run is a fixed amount of work sizes it so an
// open-loop run at the rate lasts the step; a timed job does not need to.
func TestSizeStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  map[string]string
		rate float64
		d    time.Duration
		want map[string]string
	}{
		{"wiki", map[string]string{"threads": "4"}, 250, 10 * time.Second, map[string]string{"sets": "1", "repeat": "1", "requests": "2500"}},
		{"wiki", map[string]string{"threads": "4"}, 0.1, time.Second, map[string]string{"sets": "1", "repeat": "1", "requests": "4"}},
		// 100 batches/s for 10 s over 4 sources: 250 batches of 20 each.
		{"ingest", map[string]string{"sources": "4", "batch": "20"}, 100, 10 * time.Second, map[string]string{"records": "5000"}},
		// 6,483 records in 7 writes; 2,000 requests in 20 s, less the
		// writes, over 4 query types x 10 queries: repeat 50.
		{"trajectory", map[string]string{"scale": "0.001", "batch": "1000", "queries": "10", "mode": "random"}, 100, 20 * time.Second, map[string]string{"reset": "true", "repeat": "50"}},
		{"trajectory", map[string]string{"scale": "0.001", "batch": "1000", "queries": "10", "mode": "both"}, 1, time.Second, map[string]string{"reset": "true", "repeat": "1"}},
	} {
		j, err := New(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.set {
			if err := j.Opts().Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		got := TraitsOf(j).SizeStep(tc.rate, tc.d)
		if len(got) != len(tc.want) {
			t.Errorf("%s at %g for %s: %v, want %v", tc.name, tc.rate, tc.d, got, tc.want)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s at %g for %s: %v, want %v", tc.name, tc.rate, tc.d, got, tc.want)
			}
		}
	}
	if j, _ := New("microblog"); TraitsOf(j).SizeStep != nil {
		t.Error("microblog's run has a --duration: no work to size")
	}
	for name, phased := range map[string]bool{"trajectory": true, "wiki": false, "ingest": false} {
		if j, _ := New(name); TraitsOf(j).Phased != phased {
			t.Errorf("%s: phased %v, want %v (a phased run's first seconds are its write phase)", name, !phased, phased)
		}
	}
}
