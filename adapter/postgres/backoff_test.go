package postgres

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
)

// Finding 6 of issue 13: with PostgreSQL killed, clients retried at once,
// 6,000-9,400 "connection refused" a second. Against a real server killed
// and restarted under 8 busy clients: every client keeps getting its
// errors, the dials are spaced by the shared backoff (at most one round of
// the clients per delay step, steps capped at a second), and the service
// comes back after the restart. The bound counts dials, not time: it holds
// on a slow machine as on a fast one.
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	requireServers(t)
	ctx := context.Background()
	c, dir, err := upCluster(ctx, 1, map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
	e, _ := cluster.Get("postgres")
	t.Cleanup(func() {
		if c != nil {
			_ = e.Down(context.Background(), c)
		}
		if dir != "" && !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	db, err := Open(ctx, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	const clients = 8
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := db.w.Exec(qctx, "select 1")
				cancel()
				if err != nil {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 minutes (ok %d, failed %d)", what, ok.Load(), failed.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("queries before the kill", func() bool { return ok.Load() > 100 })

	killer := e.(cluster.Killer)
	node := c.Nodes[0].Name
	before := db.Reconnects()
	failedBefore := failed.Load()
	down := time.Now()
	if err := killer.Kill(ctx, c, node); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := killer.Restart(ctx, c, node); err != nil {
		t.Fatal(err)
	}
	okAtRestart := ok.Load()
	waitFor("queries after the restart", func() bool { return ok.Load() > okAtRestart+100 })
	outage := time.Since(down)
	after := db.Reconnects()
	dials, refused := after.Dials-before.Dials, after.Failed-before.Failed
	errs := failed.Load() - failedBefore
	steps := int64(outage/adapter.DefaultBackoffMax) + 12 // doubling steps from 10 ms to 1 s, then one a second
	t.Logf("outage %v: %d query errors, %d dials (%d refused), %v waited in all", outage.Round(time.Millisecond), errs, dials, refused, (after.Waited - before.Waited).Round(time.Millisecond))
	if errs == 0 {
		t.Error("no query failed while the server was down: the errors were swallowed")
	}
	if refused == 0 {
		t.Error("no dial was refused while the server was down")
	}
	if limit := steps * clients; refused > limit {
		t.Errorf("%d refused dials in %v; the backoff allows at most %d (%d steps × %d clients)", refused, outage, limit, steps, clients)
	}
}
