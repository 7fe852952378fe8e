package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
)

// paced runs one PacedBatch of per operations on each worker and returns
// what was recorded and how long it took.
func paced(ctx context.Context, workers []runner.Worker, per int64, rate float64) (recorder.Snapshot, time.Duration, bool) {
	rec := recorder.New([]string{"op"}, time.Now())
	handles := make([]*recorder.Handle, len(workers))
	for i := range handles {
		handles[i] = rec.Handle()
	}
	t0 := time.Now()
	stopped := runner.PacedBatch(ctx, workers, handles, per, rate)
	return rec.Tick(time.Now()), time.Since(t0), stopped
}

// TestPacedBatchMeasuresFromIntendedStart is the open-loop definition: a
// store slower than the rate makes latency grow from each operation's
// intended start. Two workers, 5 ms per operation, 2,000/s wanted: worker
// i's j-th operation is due at j ms + i×0.5 ms but cannot end before
// 5(j+1) ms, so the last of 40 waited at least 4×39+4.5 = 160.5 ms — a
// lower bound that a slower machine only raises. Service time alone (5 ms)
// could never show it.
func TestPacedBatchMeasuresFromIntendedStart(t *testing.T) {
	t.Parallel()
	a, b := &sleeper{d: 5 * time.Millisecond}, &sleeper{d: 5 * time.Millisecond}
	snap, _, stopped := paced(context.Background(), []runner.Worker{a, b}, 40, 2000)
	if stopped {
		t.Fatal("not interrupted, PacedBatch says so")
	}
	h := snap.Hists[0]
	if h.TotalCount() != 80 || a.n.Load() != 40 || b.n.Load() != 40 {
		t.Fatalf("recorded %d, workers did %d and %d; want 80 = 40 + 40", h.TotalCount(), a.n.Load(), b.n.Load())
	}
	if h.Max() < 160_000 {
		t.Fatalf("max latency %dµs: the backlog (≥160 ms) behind a 5 ms store must show", h.Max())
	}
	if h.Min() < 5_000 {
		t.Fatalf("min latency %dµs is below the store's 5 ms", h.Min())
	}
}

// TestPacedBatchKeepsPace: no operation starts before it is due, so 50
// operations at 1,000/s take at least the 49 ms of the last one's intended
// start, and each worker does exactly its share (runs stay replayable).
func TestPacedBatchKeepsPace(t *testing.T) {
	t.Parallel()
	a, b := &sleeper{}, &sleeper{}
	snap, took, stopped := paced(context.Background(), []runner.Worker{a, b}, 25, 1000)
	if stopped || snap.Hists[0].TotalCount() != 50 || a.n.Load() != 25 || b.n.Load() != 25 {
		t.Fatalf("stopped %v, recorded %d, workers did %d and %d; want 50 = 25 + 25", stopped, snap.Hists[0].TotalCount(), a.n.Load(), b.n.Load())
	}
	if took < 49*time.Millisecond {
		t.Fatalf("50 operations at 1000/s took %s: operations started before they were due", took)
	}
}

// canceller ends the batch's context during its first operation.
type canceller struct {
	cancel context.CancelFunc
	n      int
}

func (c *canceller) Next() int { return 0 }
func (c *canceller) Do(context.Context, int) (int, error) {
	c.n++
	c.cancel()
	return -1, nil
}

func TestPacedBatchInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		preStop bool
		wantOps int
	}{
		{"cancelled before", true, 0},
		// The second operation is due 1 s later: the wait ends at the cancel.
		{"cancelled while waiting", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &canceller{cancel: cancel}
			if tc.preStop {
				cancel()
			}
			snap, _, stopped := paced(ctx, []runner.Worker{w}, 5, 1)
			if !stopped || w.n != tc.wantOps || snap.Hists[0].TotalCount() != int64(tc.wantOps) {
				t.Fatalf("stopped %v after %d operations (%d recorded); want stopped after %d", stopped, w.n, snap.Hists[0].TotalCount(), tc.wantOps)
			}
		})
	}
}
