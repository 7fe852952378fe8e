//go:build linux

package loop

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Detach takes the socket of nc away from Go's network poller: it returns
// a duplicate of nc's descriptor (close-on-exec) and closes nc, so the
// session that a driver set up (authentication, prepared statements) goes
// on over the duplicate and the runtime no longer wakes for its replies.
// nc must be a plain socket (TCP or Unix), not TLS.
func Detach(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return -1, fmt.Errorf("loop: %T is not a plain socket (TLS is not supported)", nc)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return -1, fmt.Errorf("loop: %w", err)
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		nc.Close()
		return -1, fmt.Errorf("loop: %w", err)
	}
	nc.Close() // the socket stays open through fd
	if dupErr != nil {
		return -1, fmt.Errorf("loop: dup: %w", dupErr)
	}
	return fd, nil
}
