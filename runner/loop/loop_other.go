//go:build !linux

package loop

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// Supported reports whether this system has the event loop (Linux: epoll).
const Supported = false

// Run needs epoll.
func Run(ctx context.Context, conns []Conn, clients []Client, handles []*recorder.Handle, per int64, timeout time.Duration) (interrupted bool, err error) {
	return false, errors.New("loop: the event loop needs Linux (epoll)")
}

// Detach needs Linux too.
func Detach(nc net.Conn) (int, error) {
	nc.Close()
	return -1, errors.New("loop: the event loop needs Linux (epoll)")
}
