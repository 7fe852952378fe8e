// Package rawio gives a driver a connection whose reads and writes are raw
// system calls on the non-blocking socket, waiting for readiness through
// Go's netpoller as net.Conn does.
//
// Why: net.Conn's Read and Write enter the system call through the Go
// runtime (entersyscall/exitsyscall). When the call lasts past one tick of
// the runtime's monitor (sysmon: from 20 µs; a loopback write that wakes
// the server often does on a loaded machine), the monitor hands the
// processor to another OS thread, and the monitor itself keeps waking every
// 20 µs while it finds such calls. strace of PostgreSQL point reads with 4
// goroutines on one processor counted, per read, 1.3 nanosleep (the
// monitor), 0.9 futex (threads handing the processor over), 1.7
// epoll_pwait, 2 reads (one EAGAIN) and 1 write: about twice pgbench's
// client CPU per read. A non-blocking read or write returns at once, so it
// needs no hand-over: issued raw, the processor stays with its goroutine.
// This is what the event loop of runner/loop does for reads, kept here for
// every operation of the goroutine-per-client path.
package rawio

import (
	"context"
	"net"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
)

// Wrap returns c with raw reads and writes where the platform and the
// connection allow it (a TCP or Unix socket on Linux), else c itself.
// Deadlines, Close and the addresses are c's own.
func Wrap(c net.Conn) net.Conn { return wrap(c) }

// Dial wraps a dial function (nil: a net.Dialer with a 10 s timeout) so
// that every connection it opens is wrapped: what a driver's dial hook
// takes (pgconn's DialFunc, go-redis's Dialer, the MySQL driver's dial
// function).
func Dial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = netdial.Default()
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Wrap(c), nil
	}
}

// Deadline bounds one request/reply exchange on nc by timeout (0: none)
// and by ctx's deadline, and makes a cancellation of ctx end it at once:
// the deadline is set in the past, so a blocked read or write returns a
// timeout. stop releases what it set up and clears the deadline it set, so
// that the connection goes back to its pool without one (a driver that
// uses it next sets only the deadlines it wants); it reports false when
// ctx was cancelled meanwhile, after which nc is not to be used again.
//
// Why here: the adapters' own request paths (Redis's wiki MGET,
// PostgreSQL's wiki read, Cassandra's insert pipeline) talk to the socket
// directly, where a driver would have watched the context for them.
func Deadline(ctx context.Context, nc net.Conn, timeout time.Duration) (stop func() bool) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	if d, ok := ctx.Deadline(); ok && (dl.IsZero() || d.Before(dl)) {
		dl = d
	}
	if !dl.IsZero() {
		nc.SetDeadline(dl)
	}
	cancelled := func() bool { return true }
	if ctx.Done() != nil {
		cancelled = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	}
	if dl.IsZero() {
		return cancelled
	}
	return func() bool {
		if !cancelled() {
			return false
		}
		nc.SetDeadline(time.Time{})
		return true
	}
}
