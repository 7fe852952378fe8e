//go:build linux

package runner

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer is a timerfd armed at an absolute CLOCK_MONOTONIC time: it
// fires on the kernel's high-resolution timer with no timer slack, and its
// readiness wakes Go's netpoller at once, so the goroutine that reads it
// parks as on a socket, holding no OS thread and no processor meanwhile.
type preciseTimer struct {
	f      *os.File
	fd     int
	offset time.Duration // CLOCK_MONOTONIC minus mono()
	buf    [8]byte
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
	return &preciseTimer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd, offset: off}
}

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
		_, err = t.f.Read(t.buf[:])
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
