// Package runner drives workers against a store: closed loop (each worker
// issues its next operation when the previous one returns, like the studies'
// simulated users) or open loop (a target rate; latency is measured from each
// operation's intended start, so a stalled database cannot hide its queue).
package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// Worker is one client. Next picks the operation (not timed); Do runs it
// (timed). Do returns the group of a grouped operation (e.g. the author's
// follower count of a post) or -1.
type Worker interface {
	Next() int
	Do(ctx context.Context, op int) (group int, err error)
}

// Config says how to drive the workers.
type Config struct {
	Workers  int
	Duration time.Duration // total, warm-up included
	Warmup   time.Duration
	Rate     float64 // operations per second over all workers; 0 = closed loop
	// Grace is how long in-flight operations may finish after the end (or an
	// interrupt) before their context is cancelled.
	Grace time.Duration
	// Tick is the interval length (default 1 s).
	Tick time.Duration
	// Stop, when it closes, ends the run before Duration as its end would
	// (not an interrupt): an experiment's stop action. nil: never.
	Stop <-chan struct{}
}

// Validate reports the first bad setting in words a user understands.
func (c Config) Validate() error {
	switch {
	case c.Workers <= 0:
		return fmt.Errorf("clients must be at least 1 (got %d)", c.Workers)
	case c.Duration <= 0:
		return fmt.Errorf("duration must be positive (got %s)", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("warmup must not be negative (got %s)", c.Warmup)
	case c.Warmup >= c.Duration:
		return fmt.Errorf("warmup (%s) must be shorter than the duration (%s)", c.Warmup, c.Duration)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("rate must be a finite number, 0 or more (got %g)", c.Rate)
	}
	return Fits(c.Workers, availableBytes())
}

// ClientBudget is the most memory one client may cost: a goroutine with its
// own small state, its share of the recorder and of the adapter's pool
// (measured at 3-12 KiB by scripts/scale-clients.sh; 32 KiB is the target
// the harness is held to).
const ClientBudget = 32 << 10

// Fits refuses a client count whose budget exceeds the memory available
// (0: unknown, then only the budget of a million clients is refused):
// better a clear message now than the runtime's fatal error after the load.
func Fits(workers int, available uint64) error {
	need := uint64(workers) * ClientBudget
	switch {
	case available > 0 && need > available:
		return fmt.Errorf("%d clients need up to %.1f GB (%d KiB each) and this machine has %.1f GB available: use fewer clients, or run shards on several machines",
			workers, float64(need)/1e9, ClientBudget>>10, float64(available)/1e9)
	case available == 0 && workers > 1_000_000:
		return fmt.Errorf("%d clients: at most 1,000,000 when the available memory cannot be read (%d KiB each)", workers, ClientBudget>>10)
	}
	return nil
}

// availableBytes is MemAvailable from /proc/meminfo (0 when unknown).
func availableBytes() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// Outcome tells how a run ended.
type Outcome struct {
	Elapsed     time.Duration
	Interrupted bool  // the parent context was cancelled (Ctrl-C)
	NotStarted  int64 // open loop: operations scheduled but never started
	// Executors is how many goroutines ran the open loop's operations: as
	// many as were ever in flight at once, at most one per client.
	Executors int
}

// Run drives the workers until cfg.Duration has passed, cfg.Stop closes or
// ctx is cancelled.
// onTick receives every interval (warm-up flagged) from the ticking goroutine;
// it must not block for long. The final partial interval is delivered too.
func Run(ctx context.Context, cfg Config, rec *recorder.Recorder, workers []Worker, onTick func(recorder.Snapshot, bool) error) (Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return Outcome{}, err
	}
	if len(workers) != cfg.Workers {
		return Outcome{}, fmt.Errorf("runner: %d workers for %d clients", len(workers), cfg.Workers)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	start := rec.Start()
	end := start.Add(cfg.Duration)

	// stop closes when the run should start no new operation; opCtx is only
	// cancelled after the grace period so in-flight work completes honestly.
	stop := make(chan struct{})
	opCtx, cancelOps := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelOps()

	var scheduled atomic.Int64
	var schedWG sync.WaitGroup
	// halted is stop as a flag: a closed-loop client checks it before every
	// operation with one atomic load, where a select over channels locks
	// them (and every client shares them).
	var halted atomic.Bool
	var wg sync.WaitGroup // the goroutines that run operations
	var pool *openPool
	if cfg.Rate > 0 {
		pool = newOpenPool(opCtx, rec, workers, stop, &wg)
		schedWG.Add(1)
		go func() {
			defer schedWG.Done()
			defer pool.close()
			schedule(pool.dispatch, stop, start, end, cfg.Rate, &scheduled)
		}()
	} else {
		for _, w := range workers {
			h := rec.Handle()
			wg.Add(1)
			go func() {
				defer wg.Done()
				closedLoop(opCtx, w, h, &halted)
			}()
		}
	}

	clock := StartClock(rec, cfg.Tick, cfg.Warmup, onTick)
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	out := Outcome{}
	select {
	case <-timer.C:
	case <-cfg.Stop:
	case <-ctx.Done():
		out.Interrupted = true
	case <-clockFailed(clock):
	}
	halted.Store(true)
	close(stop)
	schedWG.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.Grace):
		cancelOps()
		<-done
	}
	// The last interval runs to now: it includes the in-flight tail.
	out.Elapsed = time.Since(start)
	if pool != nil {
		out.NotStarted = scheduled.Load() - pool.started.Load()
		out.Executors = pool.spawned // the scheduler is done: no race
	}
	return out, clock.Stop()
}

// clockFailed closes when the clock's onTick failed (e.g. the result file
// could not be written): the run must stop rather than measure into nothing.
func clockFailed(c *Clock) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		<-c.done
		close(ch)
	}()
	return ch
}

// closedLoop runs operations back to back until halted (Run sets it when
// the run ends or is interrupted).
func closedLoop(ctx context.Context, w Worker, h *recorder.Handle, halted *atomic.Bool) {
	for !halted.Load() {
		op := w.Next()
		do(ctx, w, h, op, mono())
	}
}

// openPool runs the open loop. A client that waits for its next operation
// is its state alone (its Worker and recording shard in the idle list), not
// a parked goroutine: operations run on executor goroutines, started as
// operations overlap and reused, so there are as many goroutines as
// operations ever in flight at once (at most one per client), not one per
// client. With 100,000 clients of which a handful are busy at any moment,
// the garbage collector no longer scans 100,000 stacks, and no stack grows
// and shrinks back on every operation, where a CPU profile of the
// 100,000-client steps of scripts/scale-clients.sh found much of the time.
//
// The scheduler dispatches each intended start to an idle client, waiting
// for one when every client is busy: a backlog then shows as latency from
// the intended start, as before.
type openPool struct {
	ctx     context.Context
	idle    chan *openClient // the clients not running an operation
	work    chan openJob     // to executors waiting for an operation
	stop    <-chan struct{}
	wg      *sync.WaitGroup
	spawned int // executors started (only the scheduler's goroutine counts)
	clients int
	started atomic.Int64
	// busy counts the executors inside an operation. Another executor is
	// started only when every one is: one between two operations is about
	// to take the next, and starting one more for each time of a backlog
	// (a process descheduled for 100 ms owes 10,000 operations at
	// 100,000/s) would start a goroutine per client again.
	busy atomic.Int64
}

type openClient struct {
	w Worker
	h *recorder.Handle
}

type openJob struct {
	c        *openClient
	intended time.Time
}

func newOpenPool(ctx context.Context, rec *recorder.Recorder, workers []Worker, stop <-chan struct{}, wg *sync.WaitGroup) *openPool {
	p := &openPool{ctx: ctx, idle: make(chan *openClient, len(workers)), work: make(chan openJob),
		stop: stop, wg: wg, clients: len(workers)}
	for _, w := range workers {
		p.idle <- &openClient{w: w, h: rec.Handle()}
	}
	return p
}

// dispatch hands the operation intended at at to an idle client on an
// executor; false when the run stopped first. It is called from the
// scheduler's goroutine alone.
func (p *openPool) dispatch(at time.Time) bool {
	var c *openClient
	select { // one case and a default: no lock when a client is idle
	case c = <-p.idle:
	default:
		select {
		case c = <-p.idle:
		case <-p.stop:
			return false
		}
	}
	j := openJob{c: c, intended: at}
	select {
	case p.work <- j: // an executor was waiting
		return true
	default:
	}
	if p.spawned < p.clients && p.busy.Load() >= int64(p.spawned) {
		p.spawned++
		p.wg.Add(1)
		go p.execute(j)
		return true
	}
	select {
	case p.work <- j:
		return true
	case <-p.stop:
		return false
	}
}

// close ends the executors once the scheduler is done: each returns after
// its operation in flight.
func (p *openPool) close() { close(p.work) }

// execute runs j, then every operation it is handed, until the pool closes.
func (p *openPool) execute(j openJob) {
	defer p.wg.Done()
	for {
		select { // one case and a default: a lock-free check
		case <-p.stop:
			p.idle <- j.c
			return
		default:
		}
		p.started.Add(1)
		p.busy.Add(1)
		op := j.c.w.Next()
		do(p.ctx, j.c.w, j.c.h, op, since(j.intended))
		p.busy.Add(-1)
		p.idle <- j.c // room for every client: never blocks
		var ok bool
		if j, ok = <-p.work; !ok {
			return
		}
	}
}

// epoch is the origin of the monotonic clock the operations are timed on.
// time.Since of a Time that carries a monotonic reading reads the monotonic
// clock alone, where time.Now reads the wall clock as well: two clock reads
// instead of four per operation, which were half of the harness's own CPU
// per operation in a profile of BenchmarkHarnessNoop.
var epoch = time.Now()

// mono is now on the monotonic clock, as an offset from epoch.
func mono() time.Duration { return time.Since(epoch) }

// since is t as an offset from epoch, without reading a clock (t must
// carry a monotonic reading, as every time.Now does).
func since(t time.Time) time.Duration { return t.Sub(epoch) }

// do runs one operation and records its latency from t0 (on the mono
// clock), the actual start in closed loop and the intended start in open
// loop.
func do(ctx context.Context, w Worker, h *recorder.Handle, op int, t0 time.Duration) {
	group, err := w.Do(ctx, op)
	d := mono() - t0
	switch {
	case err == nil && group >= 0:
		h.RecordGroup(op, group, d)
	case err == nil:
		h.Record(op, d)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// cancelled by us after the grace period: not the database's error
	default:
		h.Error(op, err)
	}
}

// schedule dispatches intended start times at rate per second until end or
// stop (or until dispatch returns false). A dispatch that waits for a free
// client blocks the scheduler but not the clock: each time is computed from
// the schedule, so a backlog shows as latency.
func schedule(dispatch func(time.Time) bool, stop <-chan struct{}, start, end time.Time, rate float64, scheduled *atomic.Int64) {
	per := time.Duration(float64(time.Second) / rate)
	if per <= 0 {
		per = 1
	}
	last := int64((end.Sub(start) + per - 1) / per) // intended times before end
	// Every time due by the stop counts as scheduled, dispatched or not: a
	// dispatch waiting for a free client does not stop the clock.
	defer func() {
		scheduled.Store(min(int64(time.Since(start)/per)+1, last))
	}()
	var sent int64
	timer := time.NewTimer(time.Hour) // reused: one timer, not one per wait
	defer timer.Stop()
	for {
		now := time.Now()
		if !now.Before(end) {
			return
		}
		due := min(int64(now.Sub(start)/per)+1, last)
		scheduled.Store(due)
		for ; sent < due; sent++ {
			if !dispatch(start.Add(time.Duration(sent) * per)) {
				return
			}
		}
		next := start.Add(time.Duration(sent) * per)
		wait := time.Until(next)
		if wait < 50*time.Microsecond {
			wait = 50 * time.Microsecond
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-timer.C:
		}
	}
}
