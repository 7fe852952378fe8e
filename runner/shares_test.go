package runner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
)

// counter counts its own operations, sleeps d in each, and fails every
// failEvery-th. It sees whether its context was cancelled mid-operation.
type counter struct {
	d         time.Duration
	failEvery int64
	n         atomic.Int64
	cancelled atomic.Bool
}

func (c *counter) Next() int { return 0 }
func (c *counter) Do(ctx context.Context, _ int) (int, error) {
	time.Sleep(c.d)
	if ctx.Err() != nil {
		c.cancelled.Store(true)
	}
	if n := c.n.Add(1); c.failEvery > 0 && n%c.failEvery == 0 {
		return -1, errors.New("boom")
	}
	return -1, nil
}

// recorded is every operation rec holds, ok and failed.
func recorded(rec *recorder.Recorder) (ok, failed int64) {
	s := rec.Tick(time.Now())
	for _, n := range s.Errors[0] {
		failed += n
	}
	return s.Hists[0].TotalCount(), failed
}

func TestSharesDoesEachWorkersOwnCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		counts []int64
		d      time.Duration
	}{
		{"one worker", []int64{5}, time.Millisecond},
		{"uneven shares", []int64{7, 6, 6, 6}, time.Millisecond},
		{"a worker with nothing to do", []int64{3, 0, 4}, 0},
		{"no work at all", []int64{0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := recorder.New([]string{"op"}, time.Now())
			ws := make([]*counter, len(tc.counts))
			workers := make([]runner.Worker, len(tc.counts))
			handles := make([]*recorder.Handle, len(tc.counts))
			var want, longest int64
			for i := range ws {
				ws[i] = &counter{d: tc.d, failEvery: 3}
				workers[i], handles[i] = ws[i], rec.Handle()
				want += tc.counts[i]
				longest = max(longest, tc.counts[i])
			}
			elapsed, interrupted := runner.Shares(context.Background(), workers, handles, tc.counts)
			if interrupted {
				t.Fatal("not interrupted, Shares says so")
			}
			var wantFailed int64
			for i, w := range ws {
				if got := w.n.Load(); got != tc.counts[i] {
					t.Fatalf("worker %d did %d operations, its share is %d", i, got, tc.counts[i])
				}
				wantFailed += tc.counts[i] / 3
			}
			ok, failed := recorded(rec)
			if ok+failed != want || failed != wantFailed {
				t.Fatalf("recorded %d ok + %d failed, want %d of which %d failed", ok, failed, want, wantFailed)
			}
			// The phase lasts at least as long as its longest share (a lower
			// bound: sleeps never end early).
			if floor := time.Duration(longest) * tc.d; elapsed < floor {
				t.Fatalf("elapsed %s, shorter than the longest share's %s", elapsed, floor)
			}
		})
	}
}

func TestSharesInterrupted(t *testing.T) {
	t.Parallel()
	// Cancelled before it starts: nothing is done, and it says interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := recorder.New([]string{"op"}, time.Now())
	w := &counter{}
	if _, interrupted := runner.Shares(ctx, []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{10}); !interrupted || w.n.Load() != 0 {
		t.Fatalf("interrupted %v after %d operations, want true after 0", interrupted, w.n.Load())
	}

	// Cancelled during an operation: that operation finishes with its
	// context intact and is recorded; no further one starts.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w = &counter{d: 50 * time.Millisecond}
	time.AfterFunc(10*time.Millisecond, cancel)
	_, interrupted := runner.Shares(ctx, []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{1000})
	ok, _ := recorded(rec)
	switch {
	case !interrupted:
		t.Fatal("cancelled Shares must report interrupted")
	case w.cancelled.Load():
		t.Fatal("an in-flight operation saw its context cancelled")
	case w.n.Load() == 1000 || ok != w.n.Load():
		t.Fatalf("did %d of 1000 operations, recorded %d", w.n.Load(), ok)
	}
}
