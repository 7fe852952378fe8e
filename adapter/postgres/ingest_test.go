package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

func openIngest(t *testing.T) (*DB, ingest.Store) {
	t.Helper()
	db := openFresh(t)
	s, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return db, s
}

// ingestNopRec discards batch latencies.
type ingestNopRec struct{}

func (ingestNopRec) Record(int, time.Duration) {}
func (ingestNopRec) Error(int, error)          {}

func ingestNopRecs(n int) []ingest.BatchRecorder {
	out := make([]ingest.BatchRecorder, n)
	for i := range out {
		out[i] = ingestNopRec{}
	}
	return out
}

// TestIngestRunStoresExactly runs the workload's driver: exactly S×n
// records, each the one Generate gives for its (source, seq), read back
// from the table (counts and Reset are checked by adaptertest).
func TestIngestRunStoresExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sources int
		records int64
		batch   int
	}{
		{"eight sources", 8, 1000, 300},
		{"one record batches", 2, 50, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, s := openIngest(t)
			const seed = 11
			res := ingest.Run(ctx, s, ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: seed, Verify: true}, ingestNopRecs(tc.sources))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			want := int64(tc.sources) * tc.records
			if n, err := s.Count(ctx); err != nil || n != want {
				t.Fatalf("count %d (%v), want %d", n, err, want)
			}
			rows, err := db.w.Query(ctx, "select id, source, seq, channel, measured_at, tag, quality, value, recorded_at from "+ingestTable)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[[2]int32]bool{}
			for rows.Next() {
				var r ingest.Record
				if err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &r.MeasuredAt, &r.Tag, &r.Quality, &r.Value, &r.RecordedAt); err != nil {
					t.Fatal(err)
				}
				r.MeasuredAt, r.RecordedAt = r.MeasuredAt.UTC(), r.RecordedAt.UTC()
				if g := ingest.Generate(seed, int(r.Source), int64(r.Seq)); r != g {
					t.Fatalf("stored %+v\nwant     %+v", r, g)
				}
				k := [2]int32{r.Source, r.Seq}
				if seen[k] {
					t.Fatalf("record %v stored twice", k)
				}
				seen[k] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestIngestCancelledBatchStoresNothing(t *testing.T) {
	t.Parallel()
	_, s := openIngest(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	recs := make([]ingest.Record, 1000)
	ingest.Fill(recs, 1, 0, 0)
	if err := s.InsertBatch(ctx, recs); err == nil {
		t.Fatal("a batch with a cancelled context succeeded")
	}
	if n, err := s.Count(t.Context()); err != nil || n != 0 {
		t.Fatalf("count %d (%v) after a cancelled batch, want 0", n, err)
	}
}

// TestIngestThroughput measures COPY throughput of 8 sources (a figure for
// docs/postgres.md, not a pass/fail bound).
func TestIngestThroughput(t *testing.T) {
	t.Parallel()
	_, s := openIngest(t)
	start := time.Now()
	const sources, records = 8, 20000
	res := ingest.Run(t.Context(), s, ingest.RunConfig{Sources: sources, Records: records, Batch: 1000, Seed: 1}, ingestNopRecs(sources))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	t.Logf("%d records in %v: %.0f records/s", sources*records, time.Since(start), sources*records/time.Since(start).Seconds())
}
