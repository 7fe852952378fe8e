//go:build linux

package runner

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer is a timerfd armed at an absolute CLOCK_MONOTONIC time: it
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
	f      *os.File
	rc     syscall.RawConn
	fd     int
	offset time.Duration // CLOCK_MONOTONIC minus mono()

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
	off, ok := monoOffset()
	if !ok {
		unix.Close(fd)
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
	t := &preciseTimer{f: f, rc: rc, fd: fd, offset: off}
	t.ready = t.fired
	return t
}

// fired is the wait's callback: RawConn.Read calls it once before waiting
// for readiness (the timer, just armed, has not fired: wait) and again
// after each readiness. It says the timer fired once the moment is near
// (within readySlop, for monoOffset's error; the alarm spins whatever
// remains, so it is never early), so that a readiness that was not this
// arming's could only cost another wait, never an early start.
func (t *preciseTimer) fired(uintptr) bool {
	if !t.polled {
		t.polled = true
		return false
	}
	return mono() >= t.due-readySlop
}

const readySlop = 50 * time.Microsecond

// monoOffset is CLOCK_MONOTONIC minus mono(): Go's monotonic clock is
// CLOCK_MONOTONIC from another origin. The closest of a few paired reads
// is kept (the pair's own span bounds its error: tens of nanoseconds).
func monoOffset() (time.Duration, bool) {
	var best, span time.Duration = 0, time.Hour
	for range 5 {
		var ts unix.Timespec
		a := mono()
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
			return 0, false
		}
		b := mono()
		if b-a < span {
			span = b - a
			best = time.Duration(ts.Nano()) - (a+b)/2
		}
	}
	return best, true
}

// sleepUntil returns when the timer fired for at, or just after at; false
// when interrupted.
func (t *preciseTimer) sleepUntil(at time.Duration) bool {
	ts := unix.NsecToTimespec(int64(at + t.offset))
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &unix.ItimerSpec{Value: ts}, nil); err == nil {
		t.polled, t.due = false, at
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
