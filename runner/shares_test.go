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
		rate   float64
	}{
		{"one worker", []int64{5}, time.Millisecond, 0},
		{"uneven shares", []int64{7, 6, 6, 6}, time.Millisecond, 0},
		{"a worker with nothing to do", []int64{3, 0, 4}, 0, 0},
		{"no work at all", []int64{0, 0}, 0, 0},
		{"open loop, uneven shares", []int64{7, 6, 6, 6}, time.Millisecond, 2000},
		{"open loop, a worker with nothing to do", []int64{3, 0, 4}, 0, 500},
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
			elapsed, interrupted := runner.Shares(context.Background(), workers, handles, tc.counts, tc.rate)
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
	if _, interrupted := runner.Shares(ctx, []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{10}, 0); !interrupted || w.n.Load() != 0 {
		t.Fatalf("interrupted %v after %d operations, want true after 0", interrupted, w.n.Load())
	}

	// Cancelled during an operation: that operation finishes with its
	// context intact and is recorded; no further one starts.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w = &counter{d: 50 * time.Millisecond}
	time.AfterFunc(10*time.Millisecond, cancel)
	_, interrupted := runner.Shares(ctx, []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{1000}, 0)
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

// maxLatency is the largest latency rec holds (µs).
// TestSharesOpenLoopMeasuresFromIntendedStart checks the open-loop
// definition with bounds that hold on any machine, since sleeps never end
// early: one worker, 30 ms per operation, 100 operations/s wanted. The k-th
// operation is meant to start at 10k ms but cannot start before 30k ms, so
// its latency from the intended start is at least 30(k+1) - 10k ms: 210 ms
// for the 10th. Measured from the actual start (closed loop, or a timer
// started after the wait) it would stay near 30 ms.
func TestSharesOpenLoopMeasuresFromIntendedStart(t *testing.T) {
	t.Parallel()
	const d, n = 30 * time.Millisecond, 10
	for _, tc := range []struct {
		name       string
		rate       float64
		atLeastUS  int64 // the largest latency must be at least this
		elapsedMin time.Duration
	}{
		// The backlog grows by 20 ms per operation.
		{"slower than the rate", 100, 209_000, n * d},
		// 5 operations/s is slower than the store: no backlog, but the
		// schedule spreads the phase over (n-1)/rate.
		{"faster than the rate", 5, 30_000, (n - 1) * 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := recorder.New([]string{"op"}, time.Now())
			w := &counter{d: d}
			elapsed, interrupted := runner.Shares(context.Background(), []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{n}, tc.rate)
			if interrupted || w.n.Load() != n {
				t.Fatalf("did %d of %d operations, interrupted %v", w.n.Load(), n, interrupted)
			}
			s := rec.Tick(time.Now())
			if got := s.Hists[0].Max(); got < tc.atLeastUS {
				t.Fatalf("largest latency %dµs, want at least %dµs from the intended start", got, tc.atLeastUS)
			}
			if elapsed < tc.elapsedMin {
				t.Fatalf("phase took %s, want at least %s", elapsed, tc.elapsedMin)
			}
			// Every operation's lateness against its intended start is
			// recorded beside its latency.
			if s.Late.TotalCount() != n {
				t.Fatalf("%d latenesses recorded for %d operations", s.Late.TotalCount(), n)
			}
		})
	}
}

// TestSharesOpenLoopSharedSchedule checks that the rate is over all
// workers, not per worker: 4 instant workers with 5 operations each at 100/s
// take the 20 intended starts 10 ms apart, so the phase lasts at least the
// 19 gaps (190 ms), where 100/s per worker would take only 40 ms.
func TestSharesOpenLoopSharedSchedule(t *testing.T) {
	t.Parallel()
	rec := recorder.New([]string{"op"}, time.Now())
	workers := make([]runner.Worker, 4)
	handles := make([]*recorder.Handle, 4)
	for i := range workers {
		workers[i], handles[i] = &counter{}, rec.Handle()
	}
	elapsed, interrupted := runner.Shares(context.Background(), workers, handles, []int64{5, 5, 5, 5}, 100)
	if ok, _ := recorded(rec); interrupted || ok != 20 {
		t.Fatalf("recorded %d of 20, interrupted %v", ok, interrupted)
	}
	if elapsed < 190*time.Millisecond {
		t.Fatalf("phase took %s: the 20 starts at 100/s over all workers span at least 190ms", elapsed)
	}
}

// TestSharesOpenLoopInterruptedWhileWaiting: an interrupt ends the wait for
// an intended start at once, and no waiting operation starts.
func TestSharesOpenLoopInterruptedWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := recorder.New([]string{"op"}, time.Now())
	w := &counter{}
	time.AfterFunc(20*time.Millisecond, cancel)
	// 1 operation per 10 s: the first starts at once, the second would
	// start 10 s later. Returning within 5 s shows the wait was cut short.
	elapsed, interrupted := runner.Shares(ctx, []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{3}, 0.1)
	if !interrupted || w.n.Load() != 1 || elapsed > 5*time.Second {
		t.Fatalf("interrupted %v after %d operations in %s, want true after 1, well before the 10s wait", interrupted, w.n.Load(), elapsed)
	}
}

// scheduled remembers the intended starts Shares gave it.
type scheduled struct {
	counter
	starts []time.Time
}

func (s *scheduled) Intended(t time.Time) { s.starts = append(s.starts, t) }

// TestSharesTellsIntendedStarts: in an open loop a Scheduled worker hears
// each operation's intended start, on the schedule (1 ms apart at 1000/s);
// in a closed loop it hears none.
func TestSharesTellsIntendedStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rate float64
		want int
	}{
		{"closed loop", 0, 0},
		{"open loop", 1000, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := recorder.New([]string{"op"}, time.Now())
			w := &scheduled{}
			runner.Shares(context.Background(), []runner.Worker{w}, []*recorder.Handle{rec.Handle()}, []int64{5}, tc.rate)
			if len(w.starts) != tc.want || w.n.Load() != 5 {
				t.Fatalf("%d intended starts for %d operations, want %d", len(w.starts), w.n.Load(), tc.want)
			}
			for i := 1; i < len(w.starts); i++ {
				if gap := w.starts[i].Sub(w.starts[i-1]); gap != time.Millisecond {
					t.Fatalf("intended starts %d and %d are %s apart, want 1ms", i-1, i, gap)
				}
			}
		})
	}
}
