package job

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/runner"
)

// outage knows, from one tick to the next, whether the database is down,
// and bounds the run's operations while it is (issue 31: an outage was
// hidden as waiting — operations sat for 10 s and more in the reconnection
// backoff and the drivers' retries, the run ended 10 s late with 0 errors).
//
// The database is down when the adapter's backoff says its last dial to
// every server failed (adapter.BackoffStats.Down), or when the last second
// had errors and no success (any adapter, with or without a backoff); it
// stays down until an operation succeeds. Both are read once a tick, so the check per operation is one atomic
// load; an operation started before the tick that noticed the outage is
// bound only by its driver (which dials once per connection, through the
// backoff).
type outage struct {
	reconn adapter.Reconnector // nil: the last second alone decides
	down   atomic.Bool
}

// sample reads the adapter's state and the last interval's counts (ok:
// operations that succeeded, failed: errors) and says whether the
// database is down now. A nil outage is never down.
func (o *outage) sample(ok, failed int64) bool {
	if o == nil {
		return false
	}
	// An outage lasts until an operation succeeds: a second in which
	// nothing finished (every client waiting on a dial) does not end it.
	down := ok == 0 && (failed > 0 || o.down.Load())
	if !down && o.reconn != nil {
		down = o.reconn.Reconnects().Down
	}
	o.down.Store(down)
	return down
}

// guard wraps the workers so that, while the database is down, each
// operation fails within adapter.OutageBound (as an UnavailableError when
// the bound cut it) and a failed one returns no sooner than
// adapter.OutageSpacing after it started (a closed loop cannot spin).
func (o *outage) guard(workers []runner.Worker) []runner.Worker {
	out := make([]runner.Worker, len(workers))
	for i, w := range workers {
		out[i] = guarded{Worker: w, o: o}
	}
	return out
}

// guarded is a worker whose operations the outage bounds.
type guarded struct {
	runner.Worker
	o *outage
}

// Intended passes an open loop's intended start on to a worker that keeps
// figures of its own (runner.Scheduled): the guard must not hide it.
func (g guarded) Intended(t time.Time) {
	if s, ok := g.Worker.(runner.Scheduled); ok {
		s.Intended(t)
	}
}

// Do implements runner.Worker.
func (g guarded) Do(ctx context.Context, op int) (int, error) {
	if !g.o.down.Load() {
		return g.Worker.Do(ctx, op)
	}
	return bounded(ctx, adapter.OutageBound, adapter.OutageSpacing, func(ctx context.Context) (int, error) {
		return g.Worker.Do(ctx, op)
	})
}

// bounded runs do with a deadline of bound; a failure returns no sooner
// than spacing after the start (unless ctx ends), and a failure the
// deadline caused is an UnavailableError.
func bounded(ctx context.Context, bound, spacing time.Duration, do func(context.Context) (int, error)) (int, error) {
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	group, err := do(octx)
	if err == nil {
		return group, nil
	}
	// Cut by the bound: its deadline passed (a driver may report it as its
	// own timeout, e.g. a dial's "i/o timeout", a moment before the
	// context says so), and not because the run was interrupted.
	if ctx.Err() == nil && (errors.Is(octx.Err(), context.DeadlineExceeded) || time.Since(start) >= bound) {
		err = &adapter.UnavailableError{Err: err}
	}
	if wait := spacing - time.Since(start); wait > 0 && ctx.Err() == nil {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return group, err
}
