package adapter

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
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
//
// An outage is measured as an outage, not hidden as waiting (issue 31): a
// dial waits at most until the next allowed moment (never more than Max)
// and is made once; the adapters set their drivers to dial once per
// connection (go-redis's DialerRetries) so that a driver's own retries do
// not multiply that wait. On top of it, while a DB's Reconnects says Down,
// (every server's last dial failed) the run bounds every operation (see OutageBound and OutageSpacing, and
// job's outage guard): it fails within OutageBound as an error of its
// second (kind "unavailable" when the bound cut it, else the driver's), and
// a failed operation returns no sooner than OutageSpacing after it
// started. A client in a closed loop thus makes about one failed operation
// per OutageSpacing during an outage: the errors are counted second by
// second, and it cannot spin at millions of errors a second (a driver that
// fails at once, like gocql with no host or go-redis after a pool's worth
// of failed dials, would otherwise).
type Backoff struct {
	Min, Max time.Duration

	mu       sync.Mutex
	failures int       // consecutive failed dials
	next     time.Time // no dial before this
	okStart  time.Time // when the latest-started successful dial started

	dials, failed atomic.Int64
	waitedNS      atomic.Int64
}

// Default bounds: the first retry after 10 ms (a restart is noticed
// quickly), then at most one attempt a second per database handle.
const (
	DefaultBackoffMin = 10 * time.Millisecond
	DefaultBackoffMax = time.Second
)

// OutageBound is the longest an operation may take while its database is
// down (the last dial to every server failed): one backoff step, the
// longest a dial waits for its moment. An operation needing more (a
// driver that retries, each attempt waiting out the backoff: go-redis's
// cluster client tries a command 4 times) is cut and fails with an
// UnavailableError. With OutageSpacing equal to it, every failed operation
// of an outage takes one step: a closed-loop client fails once a second.
// (At 2 s, a Redis Cluster client failed every other second.)
const OutageBound = DefaultBackoffMax

// OutageSpacing is the least time a failed operation takes while its
// database is down: the longest step between two dials, so that a client
// fails about once per step, as often as the backoff lets a dial through.
const OutageSpacing = DefaultBackoffMax

// UnavailableError is an operation cut by OutageBound: its database could
// not be reached within the run's bound. Its error kind is "unavailable".
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("database unavailable (no answer within %s while its dials fail): %v", OutageBound, e.Err)
}

// Unwrap is the error the bound cut (a context deadline).
func (e *UnavailableError) Unwrap() error { return e.Err }

// Kind names the error for counting (recorder.KindError).
func (e *UnavailableError) Kind() string { return "unavailable" }

// dialBudget is the least time a waiting caller must have left after its
// wait for a dial and a first exchange (on loopback: well under a
// millisecond; across machines: a few round trips).
const dialBudget = 200 * time.Millisecond

// NewBackoff is a Backoff with the default bounds.
func NewBackoff() *Backoff { return &Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax} }

// BackoffStats are what a Backoff counted.
type BackoffStats struct {
	Dials, Failed int64         // dial attempts, and those that failed
	Waited        time.Duration // summed over every caller that waited
	// Down: the last dial to every server failed (the database is
	// unreachable now). One dead node of a cluster whose other nodes serve
	// is not Down: the live nodes' operations must not be bounded as an
	// outage's (a slow one would be cut and counted as unavailable).
	Down bool
}

// Stats returns the counts so far.
func (b *Backoff) Stats() BackoffStats {
	b.mu.Lock()
	down := b.failures > 0
	b.mu.Unlock()
	return BackoffStats{Dials: b.dials.Load(), Failed: b.failed.Load(), Waited: time.Duration(b.waitedNS.Load()), Down: down}
}

// SumStats adds the counts of several backoffs (one per server of a DB);
// it is Down when every one of them is.
func SumStats(bs []*Backoff) BackoffStats {
	st := BackoffStats{Down: len(bs) > 0}
	for _, b := range bs {
		s := b.Stats()
		st.Dials += s.Dials
		st.Failed += s.Failed
		st.Waited += s.Waited
		st.Down = st.Down && s.Down
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
	// A caller whose deadline comes before the dial could be made and
	// answered (an operation bounded during an outage) fails now instead of
	// waiting out its whole bound: else every dial of a restarted server
	// was cut by its operation's bound just after the wait, and the run
	// was not served again until a wait happened to be short.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d+dialBudget {
		return &UnavailableError{Err: fmt.Errorf("next dial allowed in %s, after the operation's deadline", d.Round(time.Millisecond))}
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

// Done records the outcome of one attempt that started just now (one that
// fails at once, like a request finding no connection).
func (b *Backoff) Done(err error) { b.record(time.Now(), err) }

// record records the outcome of a dial that started at start. A failure
// of a dial that started before a dial that has since succeeded is old
// news: it is counted, but it neither marks the server down nor delays
// the next dial. A dial timing out after 10 s tells of the network when it
// started, and one started during a partition failed 10 s later, after
// the heal and after the dials that followed it had succeeded: the handle
// then read as Down, with every dial succeeding, until the pool next
// needed a connection, and the run bounded every operation as an
// outage's (HBase run 2 of faults-hbase.yaml: timeline reads slowed by a
// bandwidth limit 20 s later were cut at 1 s as "unavailable").
func (b *Backoff) record(start time.Time, err error) {
	b.dials.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.failures, b.next = 0, time.Time{}
		if start.After(b.okStart) {
			b.okStart = start
		}
		return
	}
	b.failed.Add(1)
	if start.Before(b.okStart) {
		return
	}
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
	dial = orDefaultDial(dial)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return b.dial(ctx, dial, network, addr)
	}
}

// orDefaultDial is dial, or netdial.Default() when nil (a net.Dialer, or
// the load host's dial during an experiment on hosts).
func orDefaultDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		dial = netdial.Default()
	}
	return dial
}

// dial waits for the backoff, dials and records the outcome.
func (b *Backoff) dial(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string) (net.Conn, error) {
	if err := b.Wait(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := dial(ctx, network, addr)
	b.record(start, err)
	return c, err
}

// Reconnector is an optional capability of a DB whose connections dial
// through a Backoff: what it counted, for the result of a run.
type Reconnector interface {
	Reconnects() BackoffStats
}

// Backoffs is one Backoff per server address, for a driver with a single
// dial hook for every server of a cluster (go-redis's cluster client,
// gocql): a dead node's dials are spaced without slowing those to the
// live ones. The zero value is ready to use.
type Backoffs struct {
	mu sync.Mutex
	by map[string]*Backoff
}

// For returns addr's Backoff (with the default bounds), made on first use.
func (bs *Backoffs) For(addr string) *Backoff {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.by[addr]
	if b == nil {
		if bs.by == nil {
			bs.by = map[string]*Backoff{}
		}
		b = NewBackoff()
		bs.by[addr] = b
	}
	return b
}

// DialFunc wraps dial (nil: a net.Dialer) with the Backoff of the address
// dialled.
func (bs *Backoffs) DialFunc(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial = orDefaultDial(dial)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return bs.For(addr).dial(ctx, dial, network, addr)
	}
}

// DialContext is DialFunc(nil) as a method, for drivers that take a
// dialer value (gocql's Dialer interface).
func (bs *Backoffs) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return bs.DialFunc(nil)(ctx, network, addr)
}

// Reconnects sums the counts of every address (it makes Backoffs an
// adapter.Reconnector).
func (bs *Backoffs) Reconnects() BackoffStats {
	bs.mu.Lock()
	all := make([]*Backoff, 0, len(bs.by))
	for _, b := range bs.by {
		all = append(all, b)
	}
	bs.mu.Unlock()
	return SumStats(all)
}
