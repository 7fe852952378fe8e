// Package netdial holds the dial function the database drivers use when
// they are given none of their own: a net.Dialer, or, while an experiment
// runs its load from a load host of a virtual network (package vnet), a
// function that opens each connection inside that host's network
// namespace.
//
// Why a process-wide seam: an experiment runs its workload in-process
// (its timeline, probes and audit watch the load as it runs), and a Go
// process cannot move into another network namespace as a whole: only a
// thread can (setns), so the load host has to be entered for each
// connection, where the drivers dial. The adapters' dial hooks
// (adapter.Backoffs, adapter/rawio) take their default from here.
package netdial

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// Func is a driver's dial hook.
type Func func(ctx context.Context, network, addr string) (net.Conn, error)

var hook atomic.Pointer[Func]

// Set makes f the default dial until restore is called (which puts back
// the one before). f nil restores the net.Dialer.
func Set(f Func) (restore func()) {
	var prev *Func
	if f == nil {
		prev = hook.Swap(nil)
	} else {
		prev = hook.Swap(&f)
	}
	return func() { hook.Store(prev) }
}

// Default is the dial function of a driver given none: the one Set made,
// else a net.Dialer with a 10 s timeout and 30 s keep-alive.
func Default() Func {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if f := hook.Load(); f != nil {
			return (*f)(ctx, network, addr)
		}
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		return d.DialContext(ctx, network, addr)
	}
}
