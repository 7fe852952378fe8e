package mariadb

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// mariadbTime is the text the driver returns for a DATETIME(6) column: the
// adapter leaves parseTime off and stores UTC.
const mariadbTime = "2006-01-02 15:04:05.999999"

// storedRecords reads db's ingest table back, parsing the times as
// ingest.Generate gives them, for adaptertest.IngestStoresExactly.
func storedRecords(db *DB) func(context.Context) ([]ingest.Record, error) {
	return func(ctx context.Context) ([]ingest.Record, error) {
		rows, err := db.first().QueryContext(ctx, adaptertest.SelectIngestRecords(ingestTable))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		recs, err := adaptertest.CollectRecords(rows, func() (ingest.Record, error) { return scanRecord(rows) })
		if err != nil {
			return nil, err
		}
		return recs, rows.Close()
	}
}

// scanRecord scans one row of the ingest table.
func scanRecord(rows *sql.Rows) (ingest.Record, error) {
	var r ingest.Record
	var m, rec string
	if err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &m, &r.Tag, &r.Quality, &r.Value, &rec); err != nil {
		return r, err
	}
	var err error
	if r.MeasuredAt, err = time.Parse(mariadbTime, m); err != nil {
		return r, err
	}
	r.RecordedAt, err = time.Parse(mariadbTime, rec)
	return r, err
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
			db := openFresh(t)
			s, err := db.Ingest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: 11}
			adaptertest.IngestStoresExactly(t, s, cfg, storedRecords(db))
		})
	}
}
