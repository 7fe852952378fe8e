package workload_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
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

// TestRetryTimeout: with a Timeout every attempt gets a context of its own
// that ends after it; an attempt that waits on it fails with ErrOpTimeout
// and is retried under Max like any failure, while the caller's own
// cancellation is never called a timeout.
func TestRetryTimeout(t *testing.T) {
	t.Parallel()
	if err := (workload.Retry{Timeout: -time.Second}).Validate(); err == nil {
		t.Error("a negative --op-timeout was accepted")
	}
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name        string
		r           workload.Retry
		attempts    []func(context.Context) error // the last repeats
		cancelFirst bool
		wantTries   int
		wantRetries int
		wantTimeout bool
		wantErr     bool
	}{
		{"every attempt hangs", workload.Retry{Max: 2, Backoff: time.Millisecond, Timeout: 10 * time.Millisecond}, []func(context.Context) error{hang}, false, 3, 2, true, true},
		{"the second succeeds", workload.Retry{Max: 2, Backoff: time.Millisecond, Timeout: 10 * time.Millisecond}, []func(context.Context) error{hang, func(context.Context) error { return nil }}, false, 2, 1, false, false},
		{"no timeout: the attempt's context is the caller's", workload.Retry{}, []func(context.Context) error{func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); ok {
				return errors.New("a deadline without a timeout")
			}
			return nil
		}}, false, 1, 0, false, false},
		{"the caller cancels", workload.Retry{Max: 2, Backoff: time.Millisecond, Timeout: time.Hour}, []func(context.Context) error{hang}, true, 1, 0, false, true},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithCancel(context.Background())
		if tc.cancelFirst {
			cancel()
		}
		tries := 0
		retries, err := tc.r.Do(ctx, func(ctx context.Context) error {
			f := tc.attempts[min(tries, len(tc.attempts)-1)]
			tries++
			return f(ctx)
		})
		cancel()
		if tries != tc.wantTries || retries != tc.wantRetries || (err != nil) != tc.wantErr || errors.Is(err, workload.ErrOpTimeout) != tc.wantTimeout {
			t.Errorf("%s: %d attempts, %d retries, err %v; want %d, %d, error %v, timeout %v", tc.name, tries, retries, err, tc.wantTries, tc.wantRetries, tc.wantErr, tc.wantTimeout)
		}
	}
	// Counted as a timeout whatever the driver returned at the deadline.
	_, err := workload.Retry{Timeout: time.Millisecond}.Do(context.Background(), func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("conn closed")
	})
	if k := recorder.Kind(err); k != "timeout" {
		t.Errorf("kind of %v = %q, want timeout", err, k)
	}
}

// TestRetryTally: a tally counts the retries made, the operations that
// succeeded after a retry and those that failed on every attempt after
// one, from every client at once; an operation with no retry counts in
// none of them.
func TestRetryTally(t *testing.T) {
	t.Parallel()
	fail := errors.New("refused")
	r := workload.Retry{Max: 2, Backoff: time.Microsecond}
	var tally workload.RetryTally
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(3)
		go func() { // first attempt succeeds
			defer wg.Done()
			_ = tally.Do(context.Background(), r, func(context.Context) error { return nil })
		}()
		go func() { // the second attempt succeeds: 1 retry, recovered
			defer wg.Done()
			n := 0
			_ = tally.Do(context.Background(), r, func(context.Context) error {
				if n++; n == 1 {
					return fail
				}
				return nil
			})
		}()
		go func() { // every attempt fails: 2 retries, exhausted
			defer wg.Done()
			if err := tally.Do(context.Background(), r, func(context.Context) error { return fail }); !errors.Is(err, fail) {
				t.Errorf("exhausted: err %v, want the last attempt's", err)
			}
		}()
	}
	wg.Wait()
	if got, want := tally.Stats(), (workload.RetryStats{Retries: 30, Recovered: 10, Exhausted: 10}); got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
}

// TestRetryTallyNil: a nil tally still runs the policy, counting nothing.
func TestRetryTallyNil(t *testing.T) {
	t.Parallel()
	var tally *workload.RetryTally
	n := 0
	err := tally.Do(context.Background(), workload.Retry{Max: 2, Backoff: time.Microsecond}, func(context.Context) error {
		if n++; n < 3 {
			return errors.New("refused")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("%d attempts, err %v; want 3 and the last one's success", n, err)
	}
}
