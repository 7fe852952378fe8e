package adaptertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// NopRecorders returns n batch recorders that discard latencies, for
// ingest.Run in tests that check answers, not speed.
func NopRecorders(n int) []ingest.BatchRecorder {
	recs := make([]ingest.BatchRecorder, n)
	for i := range recs {
		recs[i] = nopRecorder{}
	}
	return recs
}

// IngestStoresExactly runs the workload's driver with cfg (and Verify on)
// against s, an empty store, then reads the table back through stored and
// checks that it holds exactly Sources × Records records, each once and
// each the one ingest.Generate gives for its (source, seq). Count alone
// cannot see a record stored twice and another lost, or stored wrongly
// (a time zone, a rounded value); the suite's checkIngest checks counts
// and Reset. stored is the adapter's query, with its own column types.
func IngestStoresExactly(t testing.TB, s ingest.Store, cfg ingest.RunConfig, stored func(context.Context) ([]ingest.Record, error)) {
	t.Helper()
	ctx := t.Context()
	cfg.Verify = true
	start := time.Now()
	res := ingest.Run(ctx, s, cfg, NopRecorders(cfg.Sources))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := int64(cfg.Sources) * cfg.Records
	t.Logf("%d records in %v (%.0f records/s)", want, time.Since(start), float64(want)/time.Since(start).Seconds())
	if n, err := s.Count(ctx); err != nil || n != want {
		t.Fatalf("count %d (%v), want %d", n, err, want)
	}
	recs, err := stored(ctx)
	if err != nil {
		t.Fatalf("read the records back: %v", err)
	}
	checkGenerated(t, cfg.Seed, recs, want)
}

// SelectIngestRecords is the query that reads every record of table, the
// columns in ingest.Fields order, for an adapter's stored function.
func SelectIngestRecords(table string) string {
	names := make([]string, len(ingest.Fields))
	for i, f := range ingest.Fields {
		names[i] = f.Name
	}
	return "select " + strings.Join(names, ", ") + " from " + table
}

// Rows is what both database/sql's and pgx's query results offer.
type Rows interface {
	Next() bool
	Err() error
}

// CollectRecords reads rows to the end, each through scan (the adapter's
// column types), for an adapter's stored function; the caller closes rows.
func CollectRecords(rows Rows, scan func() (ingest.Record, error)) ([]ingest.Record, error) {
	var recs []ingest.Record
	for rows.Next() {
		r, err := scan()
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// checkGenerated checks that recs are want records, none twice, each the
// one ingest.Generate gives for its (source, seq) with seed.
func checkGenerated(t testing.TB, seed int64, recs []ingest.Record, want int64) {
	t.Helper()
	seen := map[[2]int32]bool{}
	for _, r := range recs {
		if g := ingest.Generate(seed, int(r.Source), int64(r.Seq)); r != g {
			t.Fatalf("stored %+v\nwant     %+v", r, g)
		}
		k := [2]int32{r.Source, r.Seq}
		if seen[k] {
			t.Fatalf("record %v stored twice", k)
		}
		seen[k] = true
	}
	if int64(len(recs)) != want {
		t.Fatalf("read %d records back, want %d", len(recs), want)
	}
}

// IngestCancelledBatch inserts a batch with a cancelled context into s, an
// empty store: it must fail and store nothing, since a batch is all or
// nothing and a run that timed out must not count half-written batches.
func IngestCancelledBatch(t testing.TB, s ingest.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	recs := make([]ingest.Record, 1000)
	ingest.Fill(recs, 1, 0, 0)
	if err := s.InsertBatch(ctx, recs); err == nil {
		t.Fatal("a batch with a cancelled context succeeded")
	}
	if n, err := s.Count(t.Context()); err != nil || n != 0 {
		t.Fatalf("count %d (%v) after a cancelled batch, want 0: a batch is all or nothing", n, err)
	}
}
