package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// Shares has worker i do exactly counts[i] operations, all workers at once,
// recording into handles[i], and returns the wall time of the whole phase
// and whether ctx stopped it early. It is Batch for work that does not split
// evenly: a fixed amount of work (every record of a dataset, every query of
// a list) dealt to the workers, whose shares may differ. In-flight
// operations finish after an interrupt, so what was started is measured
// honestly.
//
// With rate 0 each worker issues its next operation when the previous one
// returns (closed loop), and latency runs from the actual start. With rate
// > 0 it is an open loop: the phase's operations are meant to start at rate
// per second over all workers (the k-th at rate's k-th tick after the
// phase began); a free worker takes the next intended start, waits for it
// if it is still ahead, and its latency is measured from that intended
// start. A database slower than the rate then shows as latency that grows
// with the backlog, never as fewer operations (the workers are the
// phase's concurrency: a backlog waits for a free worker).
func Shares(ctx context.Context, workers []Worker, handles []*recorder.Handle, counts []int64, rate float64) (elapsed time.Duration, interrupted bool) {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	var slots atomic.Int64 // open loop: the next intended start to take
	opCtx := context.WithoutCancel(ctx)
	t0 := time.Now()
	for i, w := range workers {
		h, n := handles[i], counts[i]
		sw, scheduled := w.(Scheduled)
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(time.Hour)
			timer.Stop()
			for k := int64(0); k < n; k++ {
				if ctx.Err() != nil {
					stopped.Store(true)
					return
				}
				if rate <= 0 {
					op := w.Next()
					do(opCtx, w, h, op, mono())
					continue
				}
				intended := intendedStart(t0, slots.Add(1)-1, rate)
				if !waitUntil(ctx, timer, intended) {
					stopped.Store(true)
					return
				}
				if scheduled {
					sw.Intended(intended)
				}
				op := w.Next()
				do(opCtx, w, h, op, since(intended))
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), stopped.Load()
}

// Scheduled is a worker that keeps latency figures of its own (a phase's
// mean and deviation, say): in an open loop Shares tells it each
// operation's intended start before Next, so that it measures from there
// too, as the recorder does.
type Scheduled interface {
	Intended(t time.Time)
}

// intendedStart is when operation slot of an open loop at rate per second
// begun at t0 should start. It is computed from the slot alone, so rounding
// never accumulates over a long phase.
func intendedStart(t0 time.Time, slot int64, rate float64) time.Time {
	return t0.Add(time.Duration(float64(slot) * float64(time.Second) / rate))
}
