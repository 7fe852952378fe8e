package job

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fieldbench/fieldbench/merge"
	"github.com/fieldbench/fieldbench/result"
)

// shard is this process's part of a run spread over several machines
// (--shard I/N): each shard computes its own share from (options, I, N)
// alone, with no coordinator, as k6's execution segments do.
type shard struct {
	i, n int
}

// parseShard reads --shard ("" is the whole run: shard 0 of 1).
func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{0, 1}, nil
	}
	i, n, err := merge.ParseShard(s)
	if err != nil {
		return shard{}, Usagef("--shard: %v", err)
	}
	return shard{i, n}, nil
}

// shardOf reads --shard, or --shards N with the index from
// JOB_COMPLETION_INDEX (what a Kubernetes Indexed Job sets in each pod).
func shardOf(spec string, shards int) (shard, error) {
	if shards == 0 {
		return parseShard(spec)
	}
	if spec != "" {
		return shard{}, Usagef("give --shard I/N or --shards N, not both")
	}
	idx, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
	if !ok {
		return shard{}, Usagef("--shards %d reads the shard index from JOB_COMPLETION_INDEX, which is not set (outside Kubernetes use --shard I/N)", shards)
	}
	return parseShard(idx + "/" + strconv.Itoa(shards))
}

func (sh shard) sharded() bool { return sh.n > 1 }

// share is the part [lo, hi) of total items (clients, sources, threads)
// that is this shard's: contiguous, sizes differing by at most one, and
// together exactly the total.
func (sh shard) share(total int) (lo, hi int) {
	return sh.i * total / sh.n, (sh.i + 1) * total / sh.n
}

// record writes the shard into a run's header, so merge can check it.
func (sh shard) record(h *result.Header, items string, lo, hi int) {
	if !sh.sharded() {
		return
	}
	h.Options[merge.ShardOption] = fmt.Sprintf("%d/%d", sh.i, sh.n)
	h.Options["shard_"+items] = hi - lo
}

// parseStartAt reads --start-at: an RFC 3339 wall-clock time ("" none).
func parseStartAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Usagef("--start-at %q: want an RFC 3339 time such as 2026-11-25T14:00:00Z", s)
	}
	return t, nil
}

// waitStart sleeps until at (the shards' common start), returning how late
// the start was; it returns at once when at is zero or past.
func waitStart(ctx context.Context, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ErrInterrupted
	case <-t.C:
		return nil
	}
}

// waitFor polls ready every second until it holds, for shards that must
// not load what shard 0 loads: the database under test is the barrier.
func waitFor(ctx context.Context, limit time.Duration, what string, ready func(context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		ok, err := ready(wctx)
		if err == nil && ok {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return fmt.Errorf("waited %s for %s", limit, what)
		case <-time.After(time.Second):
		}
	}
}
