package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
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

// storedRecords reads db's ingest table back, times in UTC as
// ingest.Generate gives them, for adaptertest.IngestStoresExactly.
func storedRecords(db *DB) func(context.Context) ([]ingest.Record, error) {
	return func(ctx context.Context) ([]ingest.Record, error) {
		rows, err := db.w.Query(ctx, adaptertest.SelectIngestRecords(ingestTable))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		return adaptertest.CollectRecords(rows, func() (ingest.Record, error) {
			var r ingest.Record
			err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &r.MeasuredAt, &r.Tag, &r.Quality, &r.Value, &r.RecordedAt)
			r.MeasuredAt, r.RecordedAt = r.MeasuredAt.UTC(), r.RecordedAt.UTC()
			return r, err
		})
	}
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
			db, s := openIngest(t)
			cfg := ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: 11}
			adaptertest.IngestStoresExactly(t, s, cfg, storedRecords(db))
		})
	}
}

// TestIngestCancelledBatchStoresNothing checks that COPY of a cancelled
// batch leaves no rows.
func TestIngestCancelledBatchStoresNothing(t *testing.T) {
	t.Parallel()
	_, s := openIngest(t)
	adaptertest.IngestCancelledBatch(t, s)
}

// TestIngestThroughput measures COPY throughput of 8 sources (a figure for
// docs/postgres.md, not a pass/fail bound).
func TestIngestThroughput(t *testing.T) {
	t.Parallel()
	_, s := openIngest(t)
	start := time.Now()
	const sources, records = 8, 20000
	res := ingest.Run(t.Context(), s, ingest.RunConfig{Sources: sources, Records: records, Batch: 1000, Seed: 1}, adaptertest.NopRecorders(sources))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	t.Logf("%d records in %v: %.0f records/s", sources*records, time.Since(start), sources*records/time.Since(start).Seconds())
}
