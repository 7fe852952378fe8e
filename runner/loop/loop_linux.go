//go:build linux

package loop

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fieldbench/fieldbench/recorder"
)

// Supported reports whether this system has the event loop (Linux: epoll).
const Supported = true

// waitMillis bounds one blocking wait, so a cancelled ctx and a silent
// server are noticed.
const waitMillis = 10

// firstBuf is each connection's first reply buffer; it doubles when a reply
// does not fit.
const firstBuf = 64 << 10

// conn is one connection and the client whose requests it carries.
type conn struct {
	c      Conn
	fd     int
	client Client
	h      *recorder.Handle
	left   int64 // requests still to send
	busy   bool  // a request is outstanding
	op     int
	start  time.Time
	req    []byte
	buf    []byte
	n      int // bytes of the reply received so far
}

// Run has client i send per requests over conns[i], one at a time, each
// timed from the write of its request to the read that completed its
// reply and recorded into handles[i]. It returns when every client is done,
// or — interrupted — when ctx ended first: requests already sent are
// answered and recorded, no new ones are sent. An error is a connection
// that broke (closed, a malformed reply, or timeout with no byte from the
// server); what was recorded before it stays recorded.
//
// The system calls are raw (no scheduler transition): reads and writes of
// a non-blocking socket and epoll_pwait never block longer than
// waitMillis. Through the runtime's syscall path, a wait longer than 20 µs
// — nearly every wait — let the runtime hand the processor to another OS
// thread, and those hand-offs were what a request cost (measured against
// redis-benchmark: 0.8x with it, about 1x without). Holding the processor
// in the kernel is safe for so short a wait: the runtime's preemption
// signal interrupts it (EINTR), so the run's other goroutines (progress,
// the recorder's tick, the garbage collector) still get their turn.
func Run(ctx context.Context, conns []Conn, clients []Client, handles []*recorder.Handle, per int64, timeout time.Duration) (interrupted bool, err error) {
	if len(conns) != len(clients) || len(conns) != len(handles) {
		return false, fmt.Errorf("loop: %d connections for %d clients and %d handles", len(conns), len(clients), len(handles))
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("loop: epoll: %w", err)
	}
	defer unix.Close(ep)
	cs := make([]conn, len(conns))
	for i, c := range conns {
		fd := c.FD()
		if err := unix.SetNonblock(fd, true); err != nil {
			return false, fmt.Errorf("loop: connection %d: %w", i, err)
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			return false, fmt.Errorf("loop: connection %d: epoll: %w", i, err)
		}
		cs[i] = conn{c: c, fd: fd, client: clients[i], h: handles[i], left: per, buf: make([]byte, firstBuf)}
	}
	active := 0
	for i := range cs {
		if cs[i].left > 0 {
			if err := cs[i].send(i); err != nil {
				return false, err
			}
			active++
		}
	}
	events := make([]unix.EpollEvent, max(1, len(cs)))
	done := ctx.Done()
	stopping := false
	last := time.Now()
	for active > 0 {
		if !stopping && done != nil {
			select {
			case <-done:
				stopping = true
			default:
			}
		}
		n, err := wait(ep, events)
		if err != nil {
			return stopping, err
		}
		if n == 0 {
			if time.Since(last) > timeout {
				return stopping, fmt.Errorf("loop: no reply from the server in %v (%d requests outstanding)", timeout, active)
			}
			continue
		}
		last = time.Now()
		for _, ev := range events[:n] {
			i := int(ev.Fd)
			c := &cs[i]
			finished, err := c.receive(i)
			if err != nil {
				return stopping, err
			}
			if !finished {
				continue
			}
			switch {
			case c.left > 0 && !stopping:
				if err := c.send(i); err != nil {
					return stopping, err
				}
			case c.left > 0:
				interrupted = true
				active--
			default:
				active--
			}
		}
	}
	return interrupted, nil
}

// send draws the client's next request and writes it.
func (c *conn) send(i int) error {
	c.op = c.client.Next()
	c.req = c.c.AppendRequest(c.req[:0], c.client.ID())
	c.left--
	c.busy = true
	c.n = 0
	c.start = time.Now()
	for b := c.req; len(b) > 0; {
		n, err := rawIO(unix.SYS_WRITE, c.fd, b)
		switch err {
		case nil:
			b = b[n:]
		case unix.EINTR:
		case unix.EAGAIN: // the socket's buffer is full: rare for a request
			if _, err := unix.Poll([]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}, 1000); err != nil && err != unix.EINTR {
				return fmt.Errorf("loop: connection %d: %w", i, err)
			}
		default:
			return fmt.Errorf("loop: connection %d: write: %w", i, err)
		}
	}
	return nil
}

// receive reads what the socket has and, when the reply is whole, records
// the operation; finished reports that.
func (c *conn) receive(i int) (finished bool, err error) {
	if c.n == len(c.buf) {
		c.buf = append(c.buf, make([]byte, len(c.buf))...)
	}
	n, err := rawIO(unix.SYS_READ, c.fd, c.buf[c.n:])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("loop: connection %d: read: %w", i, err)
	case n == 0:
		return false, closedErr(i)
	case !c.busy:
		return false, fmt.Errorf("loop: connection %d: %d bytes from the server with no request outstanding", i, n)
	}
	c.n += n
	m, opErr, err := c.c.Reply(c.buf[:c.n])
	if err != nil {
		return false, fmt.Errorf("loop: connection %d: %w", i, err)
	}
	if m == 0 {
		return false, nil
	}
	d := time.Since(c.start)
	if m != c.n {
		return false, fmt.Errorf("loop: connection %d: %d bytes after a whole reply", i, c.n-m)
	}
	if opErr != nil {
		c.h.Error(c.op, opErr)
	} else {
		c.h.Record(c.op, d)
	}
	c.busy = false
	c.n = 0
	return true, nil
}

// wait returns the ready connections: a non-blocking look first, then a
// wait of at most waitMillis.
func wait(ep int, events []unix.EpollEvent) (int, error) {
	for _, ms := range [...]int{0, waitMillis} {
		r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(ms), 0, 0)
		switch {
		case e == unix.EINTR:
			return 0, nil
		case e != 0:
			return 0, fmt.Errorf("loop: epoll_pwait: %w", e)
		case r > 0:
			return int(r), nil
		}
	}
	return 0, nil
}

// rawIO is read(2) or write(2) of a non-blocking socket, without the
// scheduler transition of unix.Read and unix.Write.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
