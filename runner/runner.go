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

// MaxRate is the highest open-loop rate a schedule can honour, in
// operations per second: intended starts are nanoseconds on the mono
// clock (schedule.at), so above a billion a second two starts share a
// nanosecond, the gap between starts rounds to 0 (alarm.pace) and a
// duration times the rate no longer counts the starts (at 1e19 the count
// of a 2 s run overflowed int64 and the run did 0 operations, exit 0).
// Every --rate of every command is held to it (CheckRate), and findmax's
// --from-rate and --max-rate too.
const MaxRate = 1e9

// CheckRate refuses a rate the schedule cannot honour: negative, not
// finite, or above MaxRate (0 is the closed loop). name is the option as
// the user wrote it ("--rate") and unit what it counts ("batches per
// second"), for the message.
func CheckRate(name, unit string, rate float64) error {
	switch {
	case rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0):
		return fmt.Errorf("%s must be a number of %s, 0 or more (got %g)", name, unit, rate)
	case rate > MaxRate:
		return fmt.Errorf("%s %g is more than an open-loop schedule can honour: at most %g %s (intended starts are whole nanoseconds apart)", name, rate, float64(MaxRate), unit)
	}
	return nil
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
	}
	if err := CheckRate("rate", "operations per second", c.Rate); err != nil {
		return err
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
	// Abandoned: operations still had not returned AbandonAfter after their
	// context was cancelled at the end of the grace (a driver that ignores
	// cancellation, a server that hangs); the run ended without them.
	Abandoned bool
}

// AbandonAfter is how long Run waits, after cancelling the operations
// still in flight at the end of the grace, before it ends without them: a
// run ends at its duration plus Grace plus this, whatever the database or
// its driver does.
const AbandonAfter = 5 * time.Second

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

	// halted is stop as a flag: a closed-loop client checks it before every
	// operation with one atomic load, where a select over channels locks
	// them (and every client shares them).
	var halted atomic.Bool
	var wg sync.WaitGroup // the goroutines that run operations
	var pool *openPool
	if cfg.Rate > 0 {
		// Intended starts before the end: k/rate < duration. Rate is at
		// most MaxRate, so only a duration near time.Duration's own
		// limit (292 years) could overflow the count: it is clamped.
		last := int64(math.MaxInt64)
		if n := math.Ceil(cfg.Duration.Seconds() * cfg.Rate); n < math.MaxInt64 {
			last = int64(n)
		}
		pool = newOpenPool(opCtx, rec, workers, stop, &wg, newSchedule(start, cfg.Rate, last))
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
	stoppedAt := mono()
	if pool != nil {
		pool.sched.interrupt()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.Grace):
		cancelOps()
		select {
		case <-done:
		case <-time.After(AbandonAfter):
			out.Abandoned = true
		}
	}
	// The last interval runs to now: it includes the in-flight tail.
	out.Elapsed = time.Since(start)
	if pool != nil {
		// Every intended start due by the stop counts, started or not: a
		// backlog of busy clients does not stop the schedule's clock.
		out.NotStarted = max(pool.sched.due(stoppedAt)-pool.started.Load(), 0)
		out.Executors = int(pool.spawned.Load())
		pool.sched.close()
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
