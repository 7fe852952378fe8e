package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Retry is a client's bounded retry policy, shared by the workloads whose
// clients can retry (microblog operations, ingest batches): a failed
// operation is tried again up to Max more times, after waiting Backoff,
// then twice that before each next retry, at most MaxRetryBackoff. Each
// retry is a new request through the database client, whose own host
// selection picks the node (gocql, for Cassandra, skips nodes it has
// marked down, so a retry after a coordinator's crash usually lands on a
// live one). The operation's latency runs from its start (the intended
// start in open loop) to the end of its last attempt: the retries and
// waits are inside it, never hidden. The zero value does not retry
// (fieldbench's default: every failure is counted).
//
// Timeout, when positive, bounds each attempt: without it a client waits
// as long as its driver does, and a node that stops answering without
// closing its connections (a partition, a paused process) held every
// client that reached it until the whole load stood still (a PostgreSQL
// replica partitioned under faults-postgres.yaml: 0 operations a second
// for 20 s; MariaDB likewise, docs/faults.md). An attempt past it fails
// with ErrOpTimeout (and is retried under Max like any failure).
type Retry struct {
	Max     int
	Backoff time.Duration
	Timeout time.Duration
}

// ErrOpTimeout is an attempt's error once Retry.Timeout passed.
var ErrOpTimeout = errors.New("operation timed out (--op-timeout)")

// MaxRetryBackoff caps the wait before one retry.
const MaxRetryBackoff = 2 * time.Second

// MaxRetries bounds Retry.Max: with the backoff capped at MaxRetryBackoff,
// 20 retries wait at most about 40 s in all.
const MaxRetries = 20

// Validate reports a policy that cannot run.
func (r Retry) Validate() error {
	switch {
	case r.Max < 0 || r.Max > MaxRetries:
		return fmt.Errorf("--retries must be between 0 and %d (got %d)", MaxRetries, r.Max)
	case r.Max > 0 && r.Backoff <= 0:
		return fmt.Errorf("--retry-backoff must be positive (got %s)", r.Backoff)
	case r.Timeout < 0:
		return fmt.Errorf("--op-timeout must not be negative (got %s)", r.Timeout)
	}
	return nil
}

// Wait is the pause before retry k (1, 2, …).
func (r Retry) Wait(k int) time.Duration {
	d := r.Backoff
	for i := 1; i < k && d < MaxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, MaxRetryBackoff)
}

// RetryStats counts what a Retry policy did over a run: the retries made
// (attempts after an operation's first), the operations that failed at
// least once and then succeeded, and those that failed on every attempt
// after at least one retry.
type RetryStats struct {
	Retries, Recovered, Exhausted int64
}

// RetryTally counts what a Retry policy did for many clients at once (its
// methods are safe for concurrent use): one per run, shared by every
// client of the workload, so that a run reports its retries whichever
// client made them.
type RetryTally struct {
	retries, recovered, exhausted atomic.Int64
}

// Do is r.Do, counted; a nil tally counts nothing (a client whose run
// keeps no tally, such as the oracle's replay of a wiki run).
func (t *RetryTally) Do(ctx context.Context, r Retry, attempt func(context.Context) error) error {
	retries, err := r.Do(ctx, attempt)
	if retries == 0 || t == nil {
		return err
	}
	t.retries.Add(int64(retries))
	if err != nil {
		t.exhausted.Add(1)
	} else {
		t.recovered.Add(1)
	}
	return err
}

// Stats returns the counts so far.
func (t *RetryTally) Stats() RetryStats {
	return RetryStats{Retries: t.retries.Load(), Recovered: t.recovered.Load(), Exhausted: t.exhausted.Load()}
}

// Do calls attempt until it succeeds, Max retries were made or ctx is
// done, waiting Wait(k) before retry k; it returns the retries made and
// the last attempt's error. Each attempt gets a context of its own,
// bounded by Timeout when there is one.
func (r Retry) Do(ctx context.Context, attempt func(context.Context) error) (retries int, err error) {
	for {
		err = r.once(ctx, attempt)
		if err == nil || retries >= r.Max || ctx.Err() != nil {
			return retries, err
		}
		t := time.NewTimer(r.Wait(retries + 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return retries, err
		case <-t.C:
		}
		retries++
	}
}

// once is one attempt, bounded by Timeout when positive; an attempt that
// ran out of it says so whatever its driver made of the deadline.
func (r Retry) once(ctx context.Context, attempt func(context.Context) error) error {
	if r.Timeout <= 0 {
		return attempt(ctx)
	}
	actx, cancel := context.WithTimeoutCause(ctx, r.Timeout, ErrOpTimeout)
	defer cancel()
	err := attempt(actx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), ErrOpTimeout) {
		return opTimeout{after: r.Timeout, err: err}
	}
	return err
}

// opTimeout is an attempt that ran out of Retry.Timeout: counted as a
// timeout (its Kind, recorder.KindError) whatever error the driver made
// of the deadline, a closed connection as often as a context error.
type opTimeout struct {
	after time.Duration
	err   error
}

func (e opTimeout) Error() string {
	return fmt.Sprintf("%v after %s: %v", ErrOpTimeout, e.after, e.err)
}
func (e opTimeout) Unwrap() []error { return []error{ErrOpTimeout, e.err} }
func (opTimeout) Kind() string      { return "timeout" }
