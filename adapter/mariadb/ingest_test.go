package mariadb

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

type nopRec struct{}

func (nopRec) Record(int, time.Duration) {}
func (nopRec) Error(int, error)          {}

func nopRecs(n int) []ingest.BatchRecorder {
	out := make([]ingest.BatchRecorder, n)
	for i := range out {
		out[i] = nopRec{}
	}
	return out
}

// TestIngestRunStoresExactly runs concurrent sources (batches that are and
// are not multiples of ingestRows) and checks every stored record against
// the generator (counts and Reset are checked by adaptertest).
func TestIngestRunStoresExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sources int
		records int64
		batch   int
	}{
		{"partial chunks", 3, 2345, 1500}, // 1000 + 500 per batch, 845 last
		{"small batches", 8, 300, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := openFresh(t)
			s, err := db.Ingest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const seed = 11
			t0 := time.Now()
			res := ingest.Run(ctx, s, ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: seed, Verify: true}, nopRecs(tc.sources))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			want := int64(tc.sources) * tc.records
			t.Logf("%d records in %v (%.0f records/s)", want, time.Since(t0), float64(want)/time.Since(t0).Seconds())
			if n, err := s.Count(ctx); err != nil || n != want {
				t.Fatalf("count %d (%v), want %d", n, err, want)
			}
			rows, err := db.first().QueryContext(ctx, "select id, source, seq, channel, measured_at, tag, quality, value, recorded_at from "+ingestTable)
			if err != nil {
				t.Fatal(err)
			}
			var seen int64
			for rows.Next() {
				var r ingest.Record
				var m, rec string
				if err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &m, &r.Tag, &r.Quality, &r.Value, &rec); err != nil {
					t.Fatal(err)
				}
				r.MeasuredAt, _ = time.Parse("2006-01-02 15:04:05.999999", m)
				r.RecordedAt, _ = time.Parse("2006-01-02 15:04:05.999999", rec)
				if g := ingest.Generate(seed, int(r.Source), int64(r.Seq)); r != g {
					t.Fatalf("stored %+v\nwant     %+v", r, g)
				}
				seen++
			}
			if err := rows.Close(); err != nil || seen != want {
				t.Fatalf("read %d records back (%v), want %d", seen, err, want)
			}
		})
	}
}
