package netdial

import (
	"context"
	"errors"
	"net"
	"testing"
)

// TestSet: Default dials through what Set made until restore, then as
// before (a net.Dialer: a real listener on loopback accepts).
func TestSet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := Default()
	errHook := errors.New("through the hook")
	var got string
	restore := Set(func(_ context.Context, _, addr string) (net.Conn, error) {
		got = addr
		return nil, errHook
	})
	if _, err := dial(context.Background(), "tcp", l.Addr().String()); !errors.Is(err, errHook) || got != l.Addr().String() {
		t.Fatalf("with the hook set: %v, hook saw %q", err, got)
	}
	restore()
	c, err := dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("after restore: %v", err)
	}
	c.Close()
}
