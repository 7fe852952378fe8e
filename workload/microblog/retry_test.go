package microblog_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestRetryOnRealFailure drives one client against a real SQLite store
// that fails for real (it is closed under the client): a failed operation
// is retried exactly Max times, the waits (backoff doubling: 30, 60, 120
// ms) are inside Do, whose duration is what the runner records as the
// operation's latency, each of the post's four attempts is reported
// failed as a tweet of its own, and the counts say so. On the open store the same client succeeds at once and nothing
// is retried.
func TestRetryOnRealFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, err := adapter.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "mb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := db.(microblog.Backend).Microblog(ctx, microblog.Denormalized)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := microblog.Generate(microblog.GenOptions{Users: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	mix, err := workload.ParseMix("post=1", microblog.ClientOps)
	if err != nil {
		t.Fatal(err)
	}
	drv, err := microblog.NewDriver(ctx, store, ds, mix, 1)
	if err != nil {
		t.Fatal(err)
	}
	drv.Retry = workload.Retry{Max: 3, Backoff: 30 * time.Millisecond}
	var failed []microblog.Tweet
	drv.OnPostFailed = func(tw microblog.Tweet, _ error) { failed = append(failed, tw) }
	c := drv.Clients(1)[0]
	if _, err := c.Do(ctx, microblog.OpPost); err != nil {
		t.Fatalf("post on the open store: %v", err)
	}
	if got := drv.RetryStats(); got != (workload.RetryStats{}) {
		t.Errorf("after a successful post: %+v, want nothing retried", got)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []int{microblog.OpPost, microblog.OpTimeline} {
		start := time.Now()
		_, err := c.Do(ctx, op)
		took := time.Since(start)
		if err == nil {
			t.Fatalf("op %d on a closed store succeeded", op)
		}
		if want := 210 * time.Millisecond; took < want {
			t.Errorf("op %d failed after %v: the three waits alone are %v", op, took, want)
		}
	}
	if got, want := drv.RetryStats(), (workload.RetryStats{Retries: 6, Exhausted: 2}); got != want {
		t.Errorf("retry counts %+v, want %+v", got, want)
	}
	ids := map[int64]bool{}
	for _, tw := range failed {
		ids[tw.ID] = true
	}
	if len(failed) != 4 || len(ids) != 4 {
		t.Errorf("%d failed posts reported with %d ids, want 4 attempts with 4 ids", len(failed), len(ids))
	}
	// The run's end stops the waits: a cancelled context fails at once.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	if _, err := c.Do(cctx, microblog.OpTimeline); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled: err %v after %v", err, time.Since(start))
	}
}
