package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/db/postgres"
)

// pgServer is a real PostgreSQL, started as the adapter's tests start
// theirs (the postgres cluster engine, loopback, a free port) by the first
// test that needs it and stopped by TestMain.
var pgServer = &clustertest.SharedCluster{Engine: "postgres", Timeout: 3 * time.Minute,
	Options: cluster.Options{Nodes: 1, Extra: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}}}

func TestMain(m *testing.M) { os.Exit(pgServer.Stop(m.Run())) }

var pgSeq atomic.Int64

// pgHistory is the DSN of an empty database of its own on the server,
// dropped when the test ends.
func pgHistory(t *testing.T) string {
	t.Helper()
	c := pgServer.Get(t)
	name := fmt.Sprintf("history_%d_%d", os.Getpid(), pgSeq.Add(1))
	admin := strings.Replace(c.DSN, "/"+postgres.PGDatabase+"?", "/postgres?", 1)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return strings.Replace(c.DSN, "/"+postgres.PGDatabase+"?", "/"+name+"?", 1)
}

// The PostgreSQL store does what the SQLite one does, on a real server:
// the schema made and migrated once by two processes' worth of
// connections opening it together, runs added once, two writers at once
// losing nothing, series and runs read back with their intervals, a p99
// recomputed from the stored histogram equal to the run's, change points
// found in what it returns, a newer schema refused.
func TestPostgresStore(t *testing.T) {
	ctx := context.Background()
	dsn := pgHistory(t)
	dir := t.TempDir()
	// Two writers open the new database at once: both migrate it, once.
	var wg sync.WaitGroup
	stores := make([]*Store, 2)
	errs := make([]error, 2)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(ctx, dsn, false)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	defer stores[0].Close()
	defer stores[1].Close()
	if strings.Contains(stores[0].Where, "@") && !strings.Contains(stores[0].Where, "postgres@") {
		t.Errorf("Where names more than the server: %s", stores[0].Where)
	}
	// 24 runs: a step of +40 % in p99 after the 12th, added by two
	// writers at once, each run twice.
	var recs []Run
	var fakes []fakeRun
	for i := range 24 {
		lat := 1000.0
		if i >= 12 {
			lat = 1400
		}
		f := fakeRun{started: t0.Add(time.Duration(i) * time.Hour), ops: []string{"post", "timeline"}, seconds: 12, rate: 300, latencyUS: lat, seed: uint64(i)}
		fakes = append(fakes, f)
		recs = append(recs, f.record(t, filepath.Join(dir, fmt.Sprint(i))))
	}
	addErrs := make([]error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < len(recs) && addErrs[w] == nil; i += 3 {
				_, addErrs[w] = stores[w].Add(ctx, recs[i:i+3])
			}
		}()
	}
	wg.Wait()
	for _, err := range addErrs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := stores[0]
	if n, err := s.Count(ctx); err != nil || n != 24 {
		t.Fatalf("%d runs (%v), want 24", n, err)
	}
	series, err := s.SeriesList(ctx)
	if err != nil || len(series) != 1 || series[0].Runs != 24 || series[0].ID != recs[0].Series {
		t.Fatalf("series %+v (%v)", series, err)
	}
	runs, err := s.Runs(ctx, series[0].ID)
	if err != nil || len(runs) != 24 {
		t.Fatalf("%d runs (%v)", len(runs), err)
	}
	for i, r := range runs {
		if r.ID != recs[i].ID || !r.Started.Equal(recs[i].Started) {
			t.Fatalf("run %d: %s at %s, want %s at %s", i, r.ID, r.Started, recs[i].ID, recs[i].Started)
		}
	}
	o, _ := runs[3].Op("post")
	if lo, hi := o.Interval("p99"); !(lo < float64(o.P99) && float64(o.P99) < hi) {
		t.Errorf("p99 %d, interval [%g, %g]", o.P99, lo, hi)
	}
	b, err := s.Histogram(ctx, runs[3].ID, "post")
	if err != nil {
		t.Fatal(err)
	}
	h, err := DecodeHist(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := fakes[3].run(t).Summary.Ops["post"].P99US; h.ValueAtQuantile(99) != want || o.P99 != want {
		t.Errorf("p99 recomputed %d, stored %d, the run's %d", h.ValueAtQuantile(99), o.P99, want)
	}
	cps, err := Detect(Values(Trend(runs, "post", "p99")), Options{})
	if err != nil || len(cps) != 1 || cps[0].Index != 12 {
		t.Errorf("change points %+v (%v), want one at run 12", cps, err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE history_schema SET version = $1", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, false); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("a newer schema opened: %v", err)
	}
}
