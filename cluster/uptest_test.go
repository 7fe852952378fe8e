package cluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// upForTest starts a cluster of engine with opts in a new directory and
// stops it when t ends: Down must succeed within 2 minutes and leave no
// node running. A missing server fails the test, or skips it with -short.
// The context returned ends after timeout. The directory is
// world-searchable (postgres runs its servers as another user when the
// tests run as root) and kept, with the servers' logs, when the test
// failed.
func upForTest(t *testing.T, engine string, opts Options, timeout time.Duration) (context.Context, Engine, *Cluster) {
	t.Helper()
	e, err := Get(engine)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Check(); err != nil {
		if testing.Short() {
			t.Skipf("%s cannot run (scripts/install-servers.sh): %v", engine, err)
		}
		t.Fatalf("%s cannot run: run scripts/install-servers.sh: %v", engine, err)
	}
	dir, err := os.MkdirTemp("", "fb-"+engine+"-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	begin := time.Now()
	c, err := e.Up(ctx, dir, opts)
	// scripts/testtimes reads this line: what the test waited on.
	t.Logf("waits on: %s, %d node(s) (started in %.1f s)", engine, opts.Nodes, time.Since(begin).Seconds())
	t.Cleanup(func() {
		if c != nil {
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.Down(dctx, c); err != nil {
				t.Errorf("Down: %v", err)
			}
			for _, n := range c.Nodes {
				if n.PID != 0 && Alive(n.PID) {
					t.Errorf("%s (pid %d) still running after Down", n.Name, n.PID)
				}
			}
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("cluster directory kept: %s", dir)
		}
	})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	return ctx, e, c
}

// upEngine is upForTest for a test that needs the engine's own type, for
// its methods beyond Engine's: E's zero value names the engine.
func upEngine[E Engine](t *testing.T, opts Options, timeout time.Duration) (context.Context, E, *Cluster) {
	t.Helper()
	var zero E
	ctx, e, c := upForTest(t, zero.Name(), opts, timeout)
	typed, ok := e.(E)
	if !ok {
		t.Fatalf("engine %s is a %T, not a %T", zero.Name(), e, zero)
	}
	return ctx, typed, c
}
