package runner

import (
	"sync"
	"sync/atomic"
	"time"
)

// alarm sleeps until a moment on the mono clock as precisely as the
// system allows. Why not a time.Timer alone: on Linux the Go runtime waits
// for its timers in epoll_wait, whose timeout is whole milliseconds, so a
// timer due in 300 µs fires after about 1 ms (measured here: p50 lateness
// 0.6 ms on a 500 µs schedule), and that lateness sat inside every
// open-loop latency. Where the kernel offers a precise timer the alarm
// uses it (see alarm_linux.go: a timerfd read through the netpoller, so
// the waiting goroutine holds no OS thread); elsewhere, or should it fail,
// a Go timer, coarser but never wrong, and the lateness each run records
// shows what it cost.
type alarm struct {
	precise *preciseTimer // nil: the Go timer below
	// early is how long before the moment the precise timer is armed, the
	// rest spun: the mean delay of this timer's past wake-ups (up to
	// maxEarly). A thread woken from an idle CPU arrives long after its
	// timer fired on this machine's virtual CPUs (measured on a quiet
	// machine: lateness p50 106 µs at 100 operations/s with at most 50 µs
	// early, 1 µs at 10,000/s where the CPUs never idle); arming that much
	// earlier and spinning the remainder takes the mean delay out of every
	// start for as much CPU (p50 4.5 µs at 100/s with up to 200 µs early,
	// CPU per operation unchanged: scripts/open-loop-error.sh).
	early time.Duration
	// maxEarly bounds early: at most a quarter of the schedule's gap
	// between starts (and never over the constant maxEarly), so that the
	// spinning stays a small share of a core whatever the rate; at
	// 100,000 starts a second, spins of up to 200 µs by several sleepers
	// were a third of the process's CPU (perf, 2026-11-29).
	maxEarly time.Duration
	// grain, when not zero, rounds a moment still ahead up to a multiple
	// of it: sleepers due within one grain wake together, in one return
	// of the netpoller, instead of one wake-up each. Set only where the
	// starts come faster than a wake-up costs (see coarseGap).
	grain time.Duration
	// gates, with a grain, is where the sleepers of one schedule meet:
	// the first due at a grain's moment sleeps on its timer for everyone
	// due then, the others wait on its gate (see sleepGrain).
	gates *atomic.Pointer[gate]

	timer    *time.Timer
	stop     chan struct{}
	stopOnce sync.Once
}

// maxPrecise bounds the precise timers open at once in a process: each
// holds a file descriptor, which the database connections need more (an
// open loop has one sleeper per operation in flight, usually a few; a
// phase of 100,000 paced workers would hold 100,000). Past it an alarm
// uses a Go timer, and the lateness recorded shows it.
const maxPrecise = 1024

var preciseOpen atomic.Int64

func newAlarm() *alarm {
	a := &alarm{stop: make(chan struct{}), maxEarly: maxEarly}
	if preciseOpen.Add(1) <= maxPrecise {
		a.precise = openPreciseTimer()
	}
	if a.precise == nil {
		preciseOpen.Add(-1)
		a.timer = time.NewTimer(time.Hour)
		a.timer.Stop()
	}
	return a
}

// sleepUntil returns at (on the mono clock) or just after it (up to a
// grain after, where the alarm has one); false when interrupt was called
// first. Waits shorter than spinBelow are spun: a
// timer costs system calls and a wake-up, more than the wait itself.
func (a *alarm) sleepUntil(at time.Duration) bool {
	if a.grain > 0 && at > mono() {
		at = (at + a.grain - 1) / a.grain * a.grain
		if a.gates != nil {
			if ok, slept := a.sleepGrain(at); slept {
				return ok
			}
		}
	}
	return a.sleepOwn(at)
}

// gate is one grain's moment that several sleepers wait for: open is
// closed once the moment has come.
type gate struct {
	at   time.Duration
	open chan struct{}
	// interrupted is set before open is closed when the sleeper for the
	// moment was interrupted: the schedule ended, and the waiters with it.
	interrupted bool
}

// sleepGrain waits for at, a grain's moment, on the schedule's gate for
// it: the first sleeper due at at sleeps on its own timer and opens the
// gate when it wakes; every other one waits on the gate, with no timer of
// its own. Why: at 100,000 starts a second, every operation in a grain
// had its own sleeper, so one timerfd armed and one wake-up from the
// netpoller per operation (922,007 timerfd_settime calls for 1,000,000
// operations, perf stat, 2026-11-29) although they all woke at the same
// moment. slept is false when a later moment's gate is already up (this
// sleeper lost a race and is due earlier): it then sleeps on its own.
func (a *alarm) sleepGrain(at time.Duration) (ok, slept bool) {
	for {
		g := a.gates.Load()
		switch {
		case g != nil && g.at == at:
			// A plain receive, not a select with the alarm's stop: a
			// select costs more than the rest of the wait (runtime.selectgo
			// was 11 % of the process at 100,000/s), and an interrupt
			// reaches the waiters through the gate's sleeper anyway: the
			// schedule interrupts every alarm, that one's too.
			<-g.open
			if g.interrupted {
				return false, true
			}
			return spinUntil(at), true // the opener woke at or after at
		case g == nil || g.at < at:
			ng := &gate{at: at, open: make(chan struct{})}
			if !a.gates.CompareAndSwap(g, ng) {
				continue // another sleeper put a gate up first: look again
			}
			ok = a.sleepOwn(at)
			ng.interrupted = !ok
			close(ng.open)
			return ok, true
		default:
			return false, false
		}
	}
}

// sleepOwn waits for at on this alarm's own timer.
func (a *alarm) sleepOwn(at time.Duration) bool {
	if d := at - mono(); d >= spinBelow {
		if a.precise != nil {
			wake := at
			if d >= 2*a.early+spinBelow {
				wake -= a.early
			}
			if !a.precise.sleepUntil(wake) {
				return false
			}
			// Learn the wake-up delay (an exponential mean over about the
			// last 8 wake-ups), bounded so that a stalled process does not
			// turn into a long spin.
			delay := min(max(mono()-wake, 0), a.maxEarly)
			a.early += (delay - a.early) / 8
		} else {
			a.timer.Reset(d)
			select {
			case <-a.timer.C:
			case <-a.stop:
				a.timer.Stop()
				return false
			}
		}
	}
	return spinUntil(at)
}

// interrupt ends the sleep in progress, and makes every later one return
// false at once.
func (a *alarm) interrupt() {
	a.stopOnce.Do(func() {
		close(a.stop)
		if a.precise != nil {
			a.precise.interrupt()
		}
	})
}

func (a *alarm) close() {
	if a.precise != nil {
		_ = a.precise.close() // a timerfd's close has nothing to flush
		preciseOpen.Add(-1)
		a.precise = nil
	}
}

// maxEarly bounds the early wake-up, and so the CPU spun per start: at
// most 2 % of a core at 100 starts a second per sleeper.
const maxEarly = 200 * time.Microsecond

// spinBelow: a wait shorter than this is spun, not slept. Arming a timer
// and being woken costs a few microseconds of CPU and as many of delay, so
// below this a short spin is both cheaper and on time.
const spinBelow = 5 * time.Microsecond

// coarseGap and coarseGrain: where a schedule's starts are closer together
// than coarseGap (above 10,000 a second in one process), a wake-up per
// start costs more CPU than the previous scheduler's whole operation (a
// bare C sleeper, cyclictest, spends 9–18 µs of CPU per wake-up on this
// project's virtual CPUs): 2.2 × its CPU per operation at 20,000/s, and at
// 39,000/s the process saturated and a backlog of up to a second formed
// (p99.9 latency 0.8 s on null://, 2026-11-29). There the sleepers wake on
// a coarseGrain grid, the sleepers of one moment on one timer (see
// sleepGrain): starts up to 200 µs late (recorded as lateness; p50 130–145
// µs from 20,000 to 100,000/s), a fifth of the previous scheduler's
// millisecond, for 1.4–1.5 × its CPU per operation. A 500 µs grid cost
// 1.04–1.30 × for lateness p50 320–365 µs; the accuracy was preferred
// (scripts/open-loop-error.sh, docs/performance.md).
const (
	coarseGap   = 100 * time.Microsecond
	coarseGrain = 200 * time.Microsecond
)

// pace sets the alarm's early wake-up bound and grain for a schedule
// whose starts are gap apart.
func (a *alarm) pace(gap time.Duration) {
	a.maxEarly = min(maxEarly, gap/4)
	a.early = min(a.early, a.maxEarly)
	a.grain = 0
	if gap < coarseGap {
		a.grain = coarseGrain
	}
}

// spinUntil returns once the mono clock reaches at (it always does: true).
func spinUntil(at time.Duration) bool {
	for mono() < at {
	}
	return true
}
