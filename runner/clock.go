package runner

import (
	"context"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// Clock ticks a recorder once per interval and hands each snapshot to
// onTick, independently of how the work is driven. Run uses one; workloads
// that drive work in counted steps (request sets, load phases) start one
// around their own loop and use Batch.
type Clock struct {
	rec     *recorder.Recorder
	onTick  func(recorder.Snapshot, bool) error
	warmEnd time.Duration // intervals starting before it are warm-up
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	err     error
}

// StartClock starts ticking every tick (default 1 s). Intervals that start
// before warmup (measured from the recorder's start) are flagged warm-up.
func StartClock(rec *recorder.Recorder, tick, warmup time.Duration, onTick func(recorder.Snapshot, bool) error) *Clock {
	if tick <= 0 {
		tick = time.Second
	}
	c := &Clock{rec: rec, onTick: onTick, warmEnd: warmup, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				if err := c.emit(now); err != nil {
					return
				}
			case <-c.stop:
				return
			}
		}
	}()
	return c
}

func (c *Clock) emit(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	snap := c.rec.Tick(now)
	c.err = c.onTick(snap, snap.Start < c.warmEnd)
	return c.err
}

// Err is the first error onTick returned (the clock stops ticking then).
func (c *Clock) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stop stops ticking and delivers the final partial interval, ending now.
func (c *Clock) Stop() error {
	close(c.stop)
	<-c.done
	return c.emit(time.Now())
}

// Batch has each worker do exactly perWorker operations back to back
// (closed loop), recording into its handle, and returns when all are done
// or ctx is cancelled (then it reports interrupted). This is the studies'
// "T threads, each doing its share of R requests sequentially". handles[i]
// belongs to workers[i] and is reused across batches.
func Batch(ctx context.Context, workers []Worker, handles []*recorder.Handle, perWorker int64) (interrupted bool) {
	counts := make([]int64, len(workers))
	for i := range counts {
		counts[i] = perWorker
	}
	_, interrupted = Shares(ctx, workers, handles, counts, 0)
	return interrupted
}

// Cadence says which intervals to show when only some are: those ending at
// or past each multiple of Every since the run's start (and the first), so
// lines come at a fixed period on the run's own clock — every 10.0 s, not
// every 10 s plus the drift of the ticks that happened to cross it.
type Cadence struct {
	Every time.Duration
	next  time.Duration
	began bool
}

// Due reports whether the interval ending at end (since the run's start)
// is to be shown.
func (c *Cadence) Due(end time.Duration) bool {
	if c.Every <= 0 {
		return true
	}
	if !c.began {
		c.began = true
		c.next = (end/c.Every + 1) * c.Every
		return true
	}
	if end < c.next {
		return false
	}
	c.next = (end/c.Every + 1) * c.Every
	return true
}
