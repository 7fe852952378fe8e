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
	c       Conn
	fd      int
	ep      int // the loop's epoll descriptor
	client  Client
	h       *recorder.Handle
	left    int64 // operations still to begin
	busy    bool  // a request is outstanding
	op      int
	start   time.Time
	req     []byte
	sent    int  // bytes of req written so far
	waitOut bool // req is partly written: the loop also polls for room
	buf     []byte
	n       int // bytes of the reply received so far
}

// Run has client i perform per operations over conns[i], one at a time,
// each timed from the write of its first request to the read that
// completed its last reply (the Conn's FollowUp says whether another
// request follows) and recorded into handles[i]; a successful one is
// acknowledged to the client. It returns when every client is done, or —
// interrupted — when ctx ended first: operations already begun are
// finished and recorded, no new ones are begun. An error is a connection
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
		cs[i] = conn{c: c, fd: fd, ep: ep, client: clients[i], h: handles[i], left: per, buf: make([]byte, firstBuf)}
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
			if ev.Events&unix.EPOLLOUT != 0 && c.waitOut {
				if err := c.flush(i); err != nil {
					return stopping, err
				}
			}
			if ev.Events&^uint32(unix.EPOLLOUT) == 0 {
				continue // room to write, nothing to read
			}
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

// send draws the client's next operation and writes its first request.
func (c *conn) send(i int) error {
	c.op = c.client.Next()
	c.req = c.c.AppendRequest(c.req[:0], c.op, c.client.ID())
	c.left--
	c.start = time.Now()
	return c.write(i)
}

// write starts sending c.req, the outstanding request.
func (c *conn) write(i int) error {
	c.busy = true
	c.n = 0
	c.sent = 0
	return c.flush(i)
}

// flush writes what is left of c.req. When the socket's buffer is full (an
// update's write-back of a large article can fill it) the rest waits for
// the loop to see room (EPOLLOUT), so the other connections go on being
// served meanwhile.
func (c *conn) flush(i int) error {
	for c.sent < len(c.req) {
		n, err := rawIO(unix.SYS_SENDTO, c.fd, c.req[c.sent:], unix.MSG_NOSIGNAL)
		switch err {
		case nil:
			c.sent += n
		case unix.EINTR:
		case unix.EAGAIN:
			if c.waitOut {
				return nil
			}
			c.waitOut = true
			return c.poll(i, unix.EPOLLIN|unix.EPOLLOUT)
		default:
			return fmt.Errorf("loop: connection %d: write: %w", i, err)
		}
	}
	if c.waitOut {
		c.waitOut = false
		return c.poll(i, unix.EPOLLIN)
	}
	return nil
}

// poll sets the events the loop waits for on c.
func (c *conn) poll(i int, events uint32) error {
	if err := unix.EpollCtl(c.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: events, Fd: int32(i)}); err != nil {
		return fmt.Errorf("loop: connection %d: epoll: %w", i, err)
	}
	return nil
}

// receive reads what the socket has and, when the reply is whole, sends
// the operation's follow-up request or, when there is none, records the
// operation; finished reports the latter.
func (c *conn) receive(i int) (finished bool, err error) {
	if c.n == len(c.buf) {
		c.buf = append(c.buf, make([]byte, len(c.buf))...)
	}
	n, err := rawIO(unix.SYS_RECVFROM, c.fd, c.buf[c.n:], 0)
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
		var more bool
		if c.req, more = c.c.FollowUp(c.req[:0]); more {
			return false, c.write(i)
		}
		c.h.Record(c.op, d)
		c.client.Acknowledged(c.op)
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

// rawIO is recvfrom(2) or sendto(2) of a non-blocking socket (no address;
// flags MSG_NOSIGNAL for a send), without the scheduler transition of
// unix.Read and unix.Write; on a socket they skip the file layer that
// read(2) and write(2) go through (adapter/rawio does the same).
func rawIO(trap uintptr, fd int, b []byte, flags int) (int, error) {
	r, _, e := unix.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
