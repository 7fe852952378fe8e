package netdial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
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
// this process: one more loopback hop for every request and answer.
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

// forward dials the target for the accepted connection c and copies both
// ways until either side ends; a failed dial closes c, which the driver
// sees as a connection refused or reset.
func (r *Relay) forward(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up, err := r.dial(ctx, "tcp", r.target)
	if err != nil {
		return
	}
	if !r.track(up) {
		return
	}
	defer r.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// The other way may still carry an answer: half-close when the
		// connection can, else close.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
