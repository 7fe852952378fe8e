package workload

import (
	"context"
	"fmt"
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
type Retry struct {
	Max     int
	Backoff time.Duration
}

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

// Do calls attempt until it succeeds, Max retries were made or ctx is
// done, waiting Wait(k) before retry k; it returns the retries made and
// the last attempt's error.
func (r Retry) Do(ctx context.Context, attempt func() error) (retries int, err error) {
	for {
		err = attempt()
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
