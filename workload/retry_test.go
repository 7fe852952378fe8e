package workload_test

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// TestRetryPolicy pins the retry policy's waits and bounds.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r     workload.Retry
		valid bool
	}{
		{workload.Retry{}, true},
		{workload.Retry{Max: 3, Backoff: 100 * time.Millisecond}, true},
		{workload.Retry{Max: 3}, false},
		{workload.Retry{Max: -1, Backoff: time.Second}, false},
		{workload.Retry{Max: workload.MaxRetries + 1, Backoff: time.Second}, false},
	}
	for _, tc := range tests {
		if err := tc.r.Validate(); (err == nil) != tc.valid {
			t.Errorf("%+v: Validate = %v, want valid %v", tc.r, err, tc.valid)
		}
	}
	r := workload.Retry{Max: 10, Backoff: 300 * time.Millisecond}
	for k, want := range []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		if got := r.Wait(k + 1); got != want {
			t.Errorf("Wait(%d) = %s, want %s", k+1, got, want)
		}
	}
}
