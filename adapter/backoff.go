package adapter

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Backoff spaces out connection attempts to a server that refuses them.
// Without it, a killed server made every client retry at once: 6,000 to
// 9,400 "connection refused" a second against a killed PostgreSQL,
// burning the CPU the surviving nodes needed (issue 13, finding 6).
//
// After a failed dial every dial waits until the next allowed moment,
// which moves away by a doubling delay (Min, 2×Min, ... up to Max) with
// each further failure; a successful dial resets it. The wait is shared by
// every connection of one database handle, so N clients make about one
// attempt per delay between them, not N. Each caller still gets its own
// error (the dial's, or the context's), so every failure is counted by
// whoever records errors; Backoff counts failures and time waited.
type Backoff struct {
	Min, Max time.Duration

	mu       sync.Mutex
	failures int       // consecutive failed dials
	next     time.Time // no dial before this

	dials, failed atomic.Int64
	waitedNS      atomic.Int64
}

// Default bounds: the first retry after 10 ms (a restart is noticed
// quickly), then at most one attempt a second per database handle.
const (
	DefaultBackoffMin = 10 * time.Millisecond
	DefaultBackoffMax = time.Second
)

// NewBackoff is a Backoff with the default bounds.
func NewBackoff() *Backoff { return &Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax} }

// BackoffStats are what a Backoff counted.
type BackoffStats struct {
	Dials, Failed int64         // dial attempts, and those that failed
	Waited        time.Duration // summed over every caller that waited
}

// Stats returns the counts so far.
func (b *Backoff) Stats() BackoffStats {
	return BackoffStats{Dials: b.dials.Load(), Failed: b.failed.Load(), Waited: time.Duration(b.waitedNS.Load())}
}

// SumStats adds the counts of several backoffs (one per server of a DB).
func SumStats(bs []*Backoff) BackoffStats {
	var st BackoffStats
	for _, b := range bs {
		s := b.Stats()
		st.Dials += s.Dials
		st.Failed += s.Failed
		st.Waited += s.Waited
	}
	return st
}

// Wait blocks until a dial is allowed, or ctx ends (its error is
// returned).
func (b *Backoff) Wait(ctx context.Context) error {
	b.mu.Lock()
	d := time.Until(b.next)
	b.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	start := time.Now()
	select {
	case <-t.C:
		b.waitedNS.Add(int64(time.Since(start)))
		return nil
	case <-ctx.Done():
		b.waitedNS.Add(int64(time.Since(start)))
		return ctx.Err()
	}
}

// Done records the outcome of one dial.
func (b *Backoff) Done(err error) {
	b.dials.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.failures, b.next = 0, time.Time{}
		return
	}
	b.failed.Add(1)
	b.failures++
	delay := b.Min
	for i := 1; i < b.failures && delay < b.Max; i++ {
		delay *= 2
	}
	delay = min(max(delay, b.Min), b.Max)
	if next := time.Now().Add(delay); next.After(b.next) {
		b.next = next
	}
}

// DialFunc wraps dial (nil: a net.Dialer) with the backoff: what a
// driver's dial hook takes (pgconn's DialFunc, go-redis's Dialer, the
// MySQL driver's dial function).
func (b *Backoff) DialFunc(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := b.Wait(ctx); err != nil {
			return nil, err
		}
		c, err := dial(ctx, network, addr)
		b.Done(err)
		return c, err
	}
}

// Reconnector is an optional capability of a DB whose connections dial
// through a Backoff: what it counted, for the result of a run.
type Reconnector interface {
	Reconnects() BackoffStats
}
