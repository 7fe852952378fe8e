package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// TestIsNetError: the errors that make the cluster client read its slot
// map again are the connection's, never a reply of Redis's.
func TestIsNetError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, true},
		{"reset, wrapped", fmt.Errorf("fan out: %w", syscall.ECONNRESET), true},
		{"eof", io.EOF, true},
		{"closed", net.ErrClosed, true},
		{"timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, true},
		{"moved reply", errors.New("MOVED 3999 127.0.0.1:6381"), false},
		{"nil reply", goredis.Nil, false},
		{"context", context.Canceled, false},
	} {
		if got := isNetError(tc.err); got != tc.want {
			t.Errorf("%s: isNetError(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
