//go:build linux

package rawio

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// conn is a net.Conn whose Read and Write go through the socket's RawConn
// with raw system calls; everything else is the embedded connection's.
type conn struct {
	net.Conn
	rc syscall.RawConn
}

func wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &conn{Conn: c, rc: rc}
}

// Read reads what the socket holds, waiting (in the netpoller, honouring
// the read deadline) only when it holds nothing.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			if e == syscall.EAGAIN {
				return false // wait for readiness, then try again
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting for room in the socket's buffer when it
// is full.
func (c *conn) Write(p []byte) (int, error) {
	var done int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
			switch e {
			case 0:
				done += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return done, err
	}
	if errno != 0 {
		return done, &net.OpError{Op: "write", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	}
	return done, nil
}

// SyscallConn is the socket's own: what looks below the connection (a
// driver's health check, runner/loop's Detach) sees the plain socket.
func (c *conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }
