package runner

import (
	"context"
	"math"
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
//
// The open loop's intended starts are claimed in turn on a schedule (see
// schedule): a free worker claims the next, sleeps until it on an alarm of
// its own and runs the operation itself, and each operation's lateness
// against its intended start is recorded beside its latency.
func Shares(ctx context.Context, workers []Worker, handles []*recorder.Handle, counts []int64, rate float64) (elapsed time.Duration, interrupted bool) {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	opCtx := context.WithoutCancel(ctx)
	t0 := time.Now()
	var sched *schedule
	if rate > 0 {
		sched = newSchedule(t0, rate, math.MaxInt64)
		defer sched.close()
		defer context.AfterFunc(ctx, sched.interrupt)()
	}
	for i, w := range workers {
		h, n := handles[i], counts[i]
		sw, scheduled := w.(Scheduled)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a *alarm
			for k := int64(0); k < n; k++ {
				if ctx.Err() != nil {
					stopped.Store(true)
					return
				}
				if sched == nil {
					op := w.Next()
					do(opCtx, w, h, op, mono())
					continue
				}
				if a == nil {
					a = sched.alarm()
				}
				free := mono()
				at, _ := sched.claim() // the schedule has no end
				if scheduled {
					sw.Intended(epoch.Add(at))
				}
				op := w.Next()
				if !a.sleepUntil(at) {
					stopped.Store(true)
					return
				}
				h.Late(lateness(at, free))
				do(opCtx, w, h, op, at)
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
