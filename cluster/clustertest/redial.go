package clustertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
)

// KilledServerRedial checks finding 6 of issue 13 against a real server:
// with the single node of c killed for 3 seconds and restarted under 8
// busy clients (each calling query in a loop), every client keeps getting
// its errors, the dials are spaced by the adapter's backoff (at most one
// round of the clients per delay step, steps capped at
// adapter.DefaultBackoffMax), and the service comes back after the
// restart. The adapter's stats say Down while the server is killed (every
// dial fails) and no longer once it serves again. The bound counts dials,
// not time: it holds on a slow machine as on a fast one. Before the backoff, a killed PostgreSQL saw 6,000-9,400
// refused dials a second.
func KilledServerRedial(t *testing.T, e cluster.Engine, c *cluster.Cluster, db adapter.Reconnector, query func(ctx context.Context) error) {
	t.Helper()
	killer, ok := e.(cluster.Killer)
	if !ok {
		t.Fatalf("engine %s cannot kill a node", e.Name())
	}
	const clients = 8
	ctx := context.Background()
	var okN, failed atomic.Int64
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
				err := query(qctx)
				cancel()
				if err != nil {
					failed.Add(1)
				} else {
					okN.Add(1)
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
				t.Fatalf("%s: not within 2 minutes (ok %d, failed %d)", what, okN.Load(), failed.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("queries before the kill", func() bool { return okN.Load() > 100 })

	node := c.Nodes[0].Name
	before := db.Reconnects()
	if before.Down {
		t.Errorf("Reconnects says Down while the server serves: %+v", before)
	}
	failedBefore := failed.Load()
	down := time.Now()
	if err := killer.Kill(ctx, c, node); err != nil {
		t.Fatal(err)
	}
	// While the server is down its dials fail: the stats must say Down
	// (what job's outage guard reads) within the 3 s.
	var sawDown bool
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		sawDown = sawDown || db.Reconnects().Down
	}
	if !sawDown {
		t.Errorf("Reconnects never said Down in the 3 s the server was killed: %+v", db.Reconnects())
	}
	if err := killer.Restart(ctx, c, node); err != nil {
		t.Fatal(err)
	}
	okAtRestart := okN.Load()
	waitFor("queries after the restart", func() bool { return okN.Load() > okAtRestart+100 })
	outage := time.Since(down)
	after := db.Reconnects()
	if after.Down {
		t.Errorf("Reconnects still says Down once queries succeed again after the restart: %+v", after)
	}
	dials, refused := after.Dials-before.Dials, after.Failed-before.Failed
	errs := failed.Load() - failedBefore
	// Doubling steps from 10 ms to 1 s, then one a second.
	steps := int64(outage/adapter.DefaultBackoffMax) + 12
	t.Logf("outage %v: %d query errors, %d dials (%d refused), %v waited in all",
		outage.Round(time.Millisecond), errs, dials, refused, (after.Waited - before.Waited).Round(time.Millisecond))
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
