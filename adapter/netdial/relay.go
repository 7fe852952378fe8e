package netdial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/inetaf/tcpproxy"
)

// Hooked reports whether Set put a dial function in place (an
// experiment's load runs from a load host): a driver without a dial hook
// of its own needs a Relay then, and only then.
func Hooked() bool { return hook.Load() != nil }

// Relay is a listener on 127.0.0.1 (a port the kernel picks) that
// forwards every connection it accepts to one address, opened with a
// dial function. It is for drivers that have no dial hook (rethinkdb-go
// v6 dials with a net.Dialer of its own): pointed at the relay, their
// connections still go where the dial function goes, e.g. from inside a
// load host's or a node's network namespace. The bytes are copied in
// this process (inetaf/tcpproxy's DialProxy): one more loopback hop for
// every request and answer.
type Relay struct {
	l      net.Listener
	target string
	dial   Func

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// NewRelay listens on 127.0.0.1 and forwards each accepted connection to
// target through dial (nil: Default()), until Close.
func NewRelay(target string, dial Func) (*Relay, error) {
	if dial == nil {
		dial = Default()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay to %s: %w", target, err)
	}
	r := &Relay{l: l, target: target, dial: dial, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is the relay's address, the one to give the driver.
func (r *Relay) Addr() string { return r.l.Addr().String() }

// Close stops accepting, closes every connection in flight both ways and
// waits for the relay's goroutines.
func (r *Relay) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	err := r.l.Close()
	r.mu.Lock()
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// track remembers c for Close; false when the relay is closing (c is
// closed then).
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	_ = c.Close()
}

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || r.closed.Load() {
				return
			}
			continue
		}
		if !r.track(c) {
			continue
		}
		r.wg.Add(1)
		go r.forward(c)
	}
}

// forward relays the accepted connection c with tcpproxy's DialProxy
// (the dial, the copies both ways, the half-closes), its dial being the
// relay's: a failed dial closes c, which the driver sees as a connection
// refused or reset. The connection it dials is tracked as c is, so that
// Close can end a relayed connection whose server says nothing.
func (r *Relay) forward(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c)
	dp := &tcpproxy.DialProxy{
		Addr:        r.target,
		DialTimeout: -1, // the dial function's own bound (netdial.Default: 10 s)
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			up, err := r.dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if !r.track(up) {
				return nil, net.ErrClosed
			}
			return trackedConn{Conn: up, r: r}, nil
		},
		OnDialError: func(src net.Conn, _ error) { _ = src.Close() },
	}
	dp.HandleConn(c)
}

// trackedConn is a relayed connection's upstream side: closing it forgets
// it, and a half-close reaches the connection beneath (DialProxy
// half-closes what it can, so that an answer still on its way is not cut).
type trackedConn struct {
	net.Conn
	r *Relay
}

func (t trackedConn) Close() error {
	t.r.untrack(t.Conn)
	return nil
}

func (t trackedConn) CloseWrite() error {
	if cw, ok := t.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return t.Conn.Close()
}
