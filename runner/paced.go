package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// PacedBatch is Batch in open loop: the workers do perWorker operations
// each, as in Batch, but operation k of the batch is due at start + k/rate
// (k = 0, 1, 2…, dealt round-robin: worker i does k = i, i+n, i+2n… of n
// workers), and its latency is recorded from that intended start, never
// from when its worker got to it. A worker waits for an operation that is
// not due yet and starts a late one at once, so a store slower than the
// rate shows as latency that grows from the intended start instead of a
// quietly lower rate (at most len(workers) operations are in flight). Each
// worker still does exactly its own perWorker operations in order, so a
// run stays replayable from its seeds. rate is operations per second over
// all workers and must be positive.
func PacedBatch(ctx context.Context, workers []Worker, handles []*recorder.Handle, perWorker int64, rate float64) (interrupted bool) {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	opCtx := context.WithoutCancel(ctx) // in-flight operations finish honestly
	start := time.Now()
	n := int64(len(workers))
	for i, w := range workers {
		h := handles[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			defer timer.Stop()
			for j := int64(0); j < perWorker; j++ {
				k := int64(i) + j*n
				intended := start.Add(time.Duration(float64(k) * float64(time.Second) / rate))
				op := w.Next()
				if !waitUntil(ctx, timer, intended) {
					stopped.Store(true)
					return
				}
				do(opCtx, w, h, op, since(intended))
			}
		}()
	}
	wg.Wait()
	return stopped.Load()
}

// waitUntil sleeps on timer until t (at once when t has passed) and
// reports false when ctx ended first.
func waitUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-ctx.Done():
		timer.Stop()
		return false
	case <-timer.C:
		return true
	}
}
