package adaptertest

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

func init() {
	registerFamily(ingest.Name, func(t *testing.T, open func(t *testing.T) adapter.DB) { checkIngest(t, open(t)) })
}

// Ingest check sizes: 4 concurrent sources of 700 records in batches of 128
// (the last one partial), then a run after Reset with other sizes.
const (
	ingestSources = 4
	ingestRecords = 700
	ingestBatch   = 128
	ingestSeed    = 9
)

// checkIngest runs the workload's driver (ingest.Run: every source inserts
// its batches concurrently) and checks that Count is exactly what was
// acknowledged, that Reset empties the store and that it loads again.
func checkIngest(t testing.TB, db adapter.DB) {
	ctx := checkContext(t)
	b, ok := db.(ingest.Backend)
	if !ok {
		t.Fatalf("%T does not implement ingest.Backend", db)
	}
	s, err := b.Ingest(ctx)
	if err != nil {
		t.Fatalf("Ingest on a fresh database: %v", err)
	}
	closeOnCleanup(t, "ingest", s)
	if n, err := s.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count of a fresh database = %d, %v; want 0", n, err)
	}
	run := func(when string, cfg ingest.RunConfig) {
		t.Helper()
		res := ingest.Run(ctx, s, cfg, NopRecorders(cfg.Sources))
		total := int64(cfg.Sources) * cfg.Records
		if res.Err != nil {
			t.Fatalf("%s: %d sources × %d records, batch %d: %v", when, cfg.Sources, cfg.Records, cfg.Batch, res.Err)
		}
		if res.Inserted != total {
			t.Errorf("%s: %d records acknowledged, want %d", when, res.Inserted, total)
		}
		if n, err := s.Count(ctx); err != nil || n != total {
			t.Fatalf("%s: Count = %d, %v; want %d (%d sources × %d records)", when, n, err, total, cfg.Sources, cfg.Records)
		}
	}
	run("first run", ingest.RunConfig{Sources: ingestSources, Records: ingestRecords, Batch: ingestBatch, Seed: ingestSeed})

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if n, err := s.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count after Reset = %d, %v; want 0", n, err)
	}
	// The same records again (a sweep repeats a load): a store that kept
	// ids or constraints of the old records would refuse them.
	run("after Reset", ingest.RunConfig{Sources: ingestSources + 1, Records: ingestRecords / 2, Batch: ingestBatch / 2, Seed: ingestSeed})

	// One more batch on top counts too.
	one := make([]ingest.Record, 3)
	ingest.Fill(one, ingestSeed+1, 0, 0)
	if err := s.InsertBatch(ctx, one); err != nil {
		t.Fatalf("InsertBatch after a run: %v", err)
	}
	want := int64(ingestSources+1)*(ingestRecords/2) + int64(len(one))
	if n, err := s.Count(ctx); err != nil || n != want {
		t.Errorf("Count after one more batch of %d = %d, %v; want %d", len(one), n, err, want)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatalf("second Reset: %v", err)
	}
	if n, err := s.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count after the second Reset = %d, %v; want 0", n, err)
	}
}

// nopRecorder discards batch latencies: the suite checks answers, not
// speed.
type nopRecorder struct{}

func (nopRecorder) Record(int, time.Duration) {}
func (nopRecorder) Error(int, error)          {}
