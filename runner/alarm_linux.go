//go:build linux

package runner

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer is a timerfd armed for the time left until a moment (see arm): it
// fires on the kernel's high-resolution timer with no timer slack, and its
// readiness wakes Go's netpoller at once, so the goroutine that reads it
// parks as on a socket, holding no OS thread and no processor meanwhile.
//
// The descriptor is never read. Arming a timerfd resets its count of
// expiries, so it is not readable again until it fires; the goroutine
// waits for that readiness alone (RawConn.Read with a callback that reads
// nothing) instead of reading the count, which costs a read that fails
// with EAGAIN before parking and the read that clears it after: two system
// calls of every open-loop operation's four (perf stat at 10,000/s).
type preciseTimer struct {
	f  *os.File
	rc syscall.RawConn
	fd int

	// The wait's callback and its state, bound once: a closure per sleep
	// would be allocated per operation.
	ready  func(uintptr) bool
	polled bool          // the callback ran once since arming
	due    time.Duration // the moment armed, on the mono clock
}

// openPreciseTimer returns nil when no timerfd can be had (no descriptor
// left, a kernel without it): the alarm then uses a Go timer.
func openPreciseTimer() *preciseTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor becomes a pollable File: Read parks the
	// goroutine in the netpoller, and SetReadDeadline interrupts it.
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	t := &preciseTimer{f: f, rc: rc, fd: fd}
	t.ready = t.fired
	return t
}

// fired is the wait's callback: RawConn.Read calls it once before waiting
// for readiness and again after each readiness. It says the timer fired
// once the moment is near (within readySlop; the alarm spins whatever
// remains, so it is never early).
//
// The first call must look at the clock too, not assume the timer has not
// fired: RawConn.Read resets the descriptor's readiness before that call,
// so an expiry between arming and the wait (a short wait, or a goroutine
// descheduled there on a busy machine) would be forgotten, and with the
// descriptor never read no later edge would come: the wait hung for ever
// (TestWikiRateOpenLoop under CPU load, 2026-11-29). After a readiness
// that comes before the moment (not expected: the timer is armed for the
// time left), the timer is armed again for what remains, so that another
// edge comes.
func (t *preciseTimer) fired(uintptr) bool {
	if mono() >= t.due-readySlop {
		return true
	}
	if !t.polled {
		t.polled = true
		return false
	}
	return t.arm(t.due) != nil // cannot arm: stop waiting, the alarm spins
}

const readySlop = 50 * time.Microsecond

// arm sets the timer to expire at on the mono clock, as a time relative
// to now: Go's monotonic clock has another origin than CLOCK_MONOTONIC,
// and a relative time needs no conversion between them, so the expiry
// is never early (a relative timer fires at least that long after it is
// set). A moment already past is armed 1 µs ahead (a zero time disarms).
func (t *preciseTimer) arm(at time.Duration) error {
	d := max(at-mono(), time.Microsecond)
	return unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, nil)
}

// sleepUntil returns when the timer fired for at, or just after at; false
// when interrupted.
func (t *preciseTimer) sleepUntil(at time.Duration) bool {
	t.polled, t.due = false, at
	if err := t.arm(at); err == nil {
		// Read resets the readiness, then calls fired, which checks the
		// clock first: an expiry before the wait is not lost.
		err = t.rc.Read(t.ready)
		if err == nil {
			return true
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
	}
	// Not seen to happen: a Go timer then, coarser, never early.
	time.Sleep(at - mono())
	return true
}

func (t *preciseTimer) interrupt() { _ = t.f.SetReadDeadline(time.Unix(1, 0)) }

func (t *preciseTimer) close() error { return t.f.Close() }
