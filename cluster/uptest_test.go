package cluster

import (
	"context"
	"testing"
	"time"
)

// upForTest starts a cluster of engine with opts in a temporary directory
// and stops it when t ends; a missing server fails the test, or skips it
// with -short. The context returned ends after timeout.
func upForTest(t *testing.T, engine string, opts Options, timeout time.Duration) (context.Context, Engine, *Cluster) {
	t.Helper()
	e, err := Get(engine)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Check(); err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	begin := time.Now()
	c, err := e.Up(ctx, t.TempDir(), opts)
	// scripts/testtimes reads this line: what the test waited on.
	t.Logf("waits on: %s, %d node(s) (started in %.1f s)", engine, opts.Nodes, time.Since(begin).Seconds())
	t.Cleanup(func() {
		if c != nil {
			_ = e.Down(context.Background(), c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, e, c
}
