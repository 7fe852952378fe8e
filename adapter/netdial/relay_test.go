package netdial

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
)

// TestRelay: a connection to the relay reaches the target through the
// relay's dial function (a real echo server on loopback), both ways; a
// failing dial closes the client's connection; Close ends the
// connections in flight.
func TestRelay(t *testing.T) {
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
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte("echo " + line))
				}
			}()
		}
	}()
	var dialled []string
	var d net.Dialer
	for _, tc := range []struct {
		name string
		dial Func
		want string // "" when the connection must close without an answer
	}{
		{"through the dial", func(ctx context.Context, n, a string) (net.Conn, error) {
			dialled = append(dialled, a)
			return d.DialContext(ctx, n, a)
		}, "echo ping\n"},
		{"dial fails", func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("no route") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRelay(l.Addr().String(), tc.dial)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			c, err := net.Dial("tcp", r.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			got, err := bufio.NewReader(c).ReadString('\n')
			if tc.want == "" {
				if err == nil {
					t.Errorf("got %q, want the connection closed", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v: want %q", got, err, tc.want)
			}
		})
	}
	if len(dialled) != 1 || dialled[0] != l.Addr().String() {
		t.Errorf("dialled %v, want the target once", dialled)
	}
	// Close ends a connection in flight: the client's read returns.
	hold, err := NewRelay(l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", hold.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := hold.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
		t.Error("a connection outlived the relay's Close")
	}
}
