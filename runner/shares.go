package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// Shares has worker i do exactly counts[i] operations back to back (closed
// loop), all workers at once, recording into handles[i], and returns the
// wall time of the whole phase and whether ctx stopped it early. It is Batch
// for work that does not split evenly: a fixed amount of work (every record
// of a dataset, every query of a list) dealt to the workers, whose shares
// may differ. In-flight operations finish after an interrupt, so what was
// started is measured honestly.
func Shares(ctx context.Context, workers []Worker, handles []*recorder.Handle, counts []int64) (elapsed time.Duration, interrupted bool) {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	opCtx := context.WithoutCancel(ctx)
	t0 := time.Now()
	for i, w := range workers {
		h, n := handles[i], counts[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int64(0); k < n; k++ {
				if ctx.Err() != nil {
					stopped.Store(true)
					return
				}
				op := w.Next()
				do(opCtx, w, h, op, time.Now())
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), stopped.Load()
}
