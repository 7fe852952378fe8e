package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// BatchRecorder receives the latency of each batch (operation OpBatch) and
// each failed batch. A recorder.Handle is one; the interface keeps this
// package free of the recorder.
type BatchRecorder interface {
	Record(op int, d time.Duration)
	Error(op int, err error)
}

// ErrTimeout is the cause of a run that exceeded RunConfig.Timeout. It
// matches context.DeadlineExceeded (errors.Is) so error counters classify it
// as a timeout.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string        { return "run timeout exceeded" }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// shardWait bounds how long a shard without --timeout waits for the other
// shards' records before verifying the count.
const shardWait = 30 * time.Minute

// ErrLost is the cause of a run after which the store holds fewer (or more)
// records than were acknowledged.
var ErrLost = errors.New("stored records differ from acknowledged inserts")

// RunConfig is one run: Sources sources insert Records records each, Batch
// at a time.
type RunConfig struct {
	Sources int
	Records int64 // per source
	Batch   int
	Seed    int64
	// Timeout fails the run when exceeded (0 = no limit). It cancels the
	// batches in flight: a run that has failed is not measured further.
	Timeout time.Duration
	// Verify counts the stored records after the run (untimed); a count
	// other than Sources × Records fails the run with ErrLost.
	Verify bool
	// Rate, when above 0, runs the sources open loop: Rate batches per
	// second over all sources, each source on its own schedule (see
	// Intended) and each batch's latency measured from its intended start,
	// so a database that falls behind shows its backlog as latency instead
	// of slowing the sources down. 0 is the study's closed loop: each
	// source sends its next batch when the previous one is acknowledged.
	Rate float64
	// Lo and Hi, when Hi > 0, are the sources [Lo, Hi) this process drives:
	// a shard's share of a run spread over machines. Source s inserts the
	// same records (a function of seed, s and index) whichever process
	// drives it, so shards never write the same record, and in an open
	// loop a source keeps its place in the common schedule (Intended). The
	// store then also receives the other shards' records: Verify waits, up
	// to Timeout, until it holds all Sources × Records.
	Lo, Hi int
	// Retry, when its Max is above 0, sends a failed batch again (the same
	// records) up to Max more times before the failure fails the run, as
	// an ingest pipeline with failover would; Verify's count is retried
	// the same way. A store whose insert
	// overwrites (Cassandra, HBase, Redis, Couchbase's upserts) takes the
	// same records twice without harm; on a store that refuses a key it
	// holds, a retry of a batch that had landed fails on its keys (and
	// Verify still counts exactly). The batch's latency includes every
	// attempt and wait.
	Retry workload.Retry
}

// Span is the sources this process drives: [Lo, Hi), or all of them.
func (c RunConfig) Span() (lo, hi int) {
	if c.Hi <= 0 {
		return 0, c.Sources
	}
	return c.Lo, c.Hi
}

// Intended is when batch k (from 0) of source src is due in an open-loop
// run, counted from the run's common start: the sources take turns, so
// batches are due every 1/Rate seconds over all sources and every
// Sources/Rate seconds for each one. It is 0 in a closed loop.
func (c RunConfig) Intended(src int, k int64) time.Duration {
	if c.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(k*int64(c.Sources)+int64(src)) / c.Rate * float64(time.Second))
}

// Validate reports the first bad setting in words a user understands.
func (c RunConfig) Validate() error {
	switch {
	case c.Sources < 1:
		return fmt.Errorf("--sources must be at least 1 (got %d)", c.Sources)
	case c.Sources > 10_000:
		return fmt.Errorf("--sources must be at most 10000 (got %d)", c.Sources)
	case c.Batch < 1:
		return fmt.Errorf("--batch must be at least 1 (got %d)", c.Batch)
	case c.Records < 1:
		return fmt.Errorf("--records must be at least 1 (got %d)", c.Records)
	case c.Records > MaxRecords:
		return fmt.Errorf("--records must be at most %d per source (a record's index is a 4-byte int; got %d)", MaxRecords, c.Records)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout must not be negative (got %s)", c.Timeout)
	case c.Retry.Validate() != nil:
		return c.Retry.Validate()
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("--rate must be 0 (closed loop) or a positive number of batches per second (got %g)", c.Rate)
	case c.Hi > 0 && (c.Lo < 0 || c.Lo >= c.Hi || c.Hi > c.Sources):
		return fmt.Errorf("sources [%d, %d) are not a part of the %d sources", c.Lo, c.Hi, c.Sources)
	}
	return nil
}

// RunResult is what one run measured.
type RunResult struct {
	Records  int64 // per source: the load
	Run      int   // position within its load in a sweep, from 1
	Warmup   bool  // a sweep's warm-up run, left out of the statistics
	Inserted int64 // records acknowledged by the store
	// Retries is how many times a failed batch was sent again (RunConfig's
	// Retry); Recovered how many batches succeeded after failing first.
	Retries, Recovered int64
	Elapsed            time.Duration
	// Throughput is Sources × Records / Elapsed in records per second (a
	// shard: its own sources' records); 0 when the run failed.
	Throughput float64
	// Err is why the run failed (nil when it succeeded). A failure is a
	// result: the database could not take this load.
	Err error
	// Interrupted: the caller's context was cancelled (Ctrl-C); the run
	// measured nothing and is no result at all.
	Interrupted bool
}

// Failed reports whether the run is a failure result.
func (r RunResult) Failed() bool { return r.Err != nil && !r.Interrupted }

// Cause is the failure's cause as recorded in the result file ("" when the
// run succeeded).
func (r RunResult) Cause() string {
	if !r.Failed() {
		return ""
	}
	return r.Err.Error()
}

// Run drives one run: every source starts at once and inserts its records
// batch by batch, each batch generated (untimed for its latency) and then
// stored by one InsertBatch (timed, recorded into recs[source]). Elapsed
// runs from the common start until the last source's last batch returned,
// so Throughput = Sources × Records / Elapsed is the study's "records over
// total insertion time". The first failed batch or the timeout fails the
// run and stops every source; there is no retry, because a database that
// cannot take the load is what the sweep is looking for.
//
// Run does not reset the store; callers do (Sweep before every run).
func Run(ctx context.Context, store Store, cfg RunConfig, recs []BatchRecorder) RunResult {
	res := RunResult{Records: cfg.Records}
	if err := cfg.Validate(); err != nil {
		res.Err = err
		return res
	}
	lo, hi := cfg.Span()
	if len(recs) != hi-lo {
		res.Err = fmt.Errorf("ingest: %d recorders for %d sources", len(recs), hi-lo)
		return res
	}
	runCtx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if cfg.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, cfg.Timeout, ErrTimeout)
		defer stop()
	}

	var inserted atomic.Int64
	var tally workload.RetryTally
	var wg sync.WaitGroup
	var start time.Time // set before ready closes, read after
	ready := make(chan struct{})
	for s := lo; s < hi; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]Record, min(int64(cfg.Batch), cfg.Records))
			<-ready
			source(runCtx, fail, store, cfg, s, buf, recs[s-lo], &inserted, &tally, start)
		}()
	}
	start = time.Now()
	close(ready)
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Inserted = inserted.Load()
	rs := tally.Stats()
	res.Retries, res.Recovered = rs.Retries, rs.Recovered

	total := int64(hi-lo) * cfg.Records
	whole := int64(cfg.Sources) * cfg.Records
	switch {
	case ctx.Err() != nil:
		res.Interrupted = true
		res.Err = ctx.Err()
		return res
	case runCtx.Err() != nil:
		cause := context.Cause(runCtx)
		if errors.Is(cause, ErrTimeout) {
			res.Err = fmt.Errorf("%w after %s (%d of %d records inserted)", ErrTimeout, cfg.Timeout, res.Inserted, total)
		} else {
			res.Err = fmt.Errorf("%w (%d of %d records inserted)", cause, res.Inserted, total)
		}
		return res
	}
	if cfg.Verify {
		// The count is untimed but bounded like the run, so a database
		// that hangs on it cannot hang a sweep.
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if limit := cfg.Timeout; limit > 0 || total < whole {
			if limit <= 0 {
				limit = shardWait // never wait forever for a shard that died
			}
			cctx, cancel = context.WithTimeout(ctx, limit)
		}
		// A count is a read: under a Retry policy a failed one is tried
		// again like a batch (a scan of the whole table times out on a
		// node still replaying its hints after a partition).
		// Not bounded by --op-timeout: a count scans the whole table, far
		// longer than a batch may take; the count's own limit bounds it.
		countRetry := cfg.Retry
		countRetry.Timeout = 0
		var n int64
		count := func() error {
			_, err := countRetry.Do(cctx, func(cctx context.Context) (err error) {
				n, err = store.Count(cctx)
				return err
			})
			return err
		}
		err := count()
		for err == nil && n < whole && total < whole && cctx.Err() == nil {
			// A shard: the other shards' sources may still be inserting.
			select {
			case <-cctx.Done():
			case <-time.After(100 * time.Millisecond):
				err = count()
			}
		}
		cancel()
		switch {
		case ctx.Err() != nil:
			res.Interrupted = true
			res.Err = ctx.Err()
			return res
		case err != nil:
			res.Err = fmt.Errorf("count stored records after the run: %w", err)
			return res
		case n != whole && total == whole:
			res.Err = fmt.Errorf("%w: %d records stored, %d acknowledged", ErrLost, n, total)
			return res
		case n != whole:
			res.Err = fmt.Errorf("%w: %d records stored, %d expected from all shards' sources (this shard's %d acknowledged)", ErrLost, n, whole, total)
			return res
		}
	}
	res.Throughput = float64(total) / res.Elapsed.Seconds()
	return res
}

// source inserts one source's records. On the first error it cancels the
// run with that error as the cause; errors that follow from the
// cancellation (other sources' batches cut short) are not counted as the
// database's errors, but batches cut by the run's timeout are counted as
// timeouts. In an open loop (cfg.Rate > 0) a batch is sent no earlier than
// its intended start and its latency runs from there; a source that is
// behind its schedule sends at once, and its backlog is in the latency.
func source(ctx context.Context, fail context.CancelCauseFunc, store Store, cfg RunConfig, src int, buf []Record, rec BatchRecorder, inserted *atomic.Int64, tally *workload.RetryTally, start time.Time) {
	var wait *time.Timer
	for k, first := int64(0), int64(0); first < cfg.Records; k, first = k+1, first+int64(len(buf)) {
		if ctx.Err() != nil {
			return
		}
		b := buf[:min(int64(len(buf)), cfg.Records-first)]
		Fill(b, cfg.Seed, src, first)
		t0 := time.Now()
		if cfg.Rate > 0 {
			t0 = start.Add(cfg.Intended(src, k))
			if d := time.Until(t0); d > 0 {
				if wait == nil {
					wait = time.NewTimer(d)
					defer wait.Stop()
				} else {
					wait.Reset(d)
				}
				select {
				case <-wait.C:
				case <-ctx.Done():
					return
				}
			}
		}
		attempts := 0
		err := tally.Do(ctx, cfg.Retry, func(ctx context.Context) error {
			if attempts++; attempts > 1 {
				Fill(b, cfg.Seed, src, first) // the same records, whatever the store did to b
			}
			return store.InsertBatch(ctx, b)
		})
		d := time.Since(t0)
		if err == nil {
			rec.Record(OpBatch, d)
			inserted.Add(int64(len(b)))
			continue
		}
		if ctx.Err() != nil {
			if cause := context.Cause(ctx); errors.Is(cause, ErrTimeout) {
				rec.Error(OpBatch, cause)
			}
			return
		}
		rec.Error(OpBatch, err)
		after := ""
		if attempts > 1 {
			after = fmt.Sprintf(" (after %d retries)", attempts-1)
		}
		fail(fmt.Errorf("source %d, batch of records %d..%d%s: %w", src, first, first+int64(len(b))-1, after, err))
		return
	}
}
