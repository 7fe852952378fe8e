package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

func openIngest(t testing.TB, mode ingestInsertMode) (*DB, *ingestStore) {
	return openIngestChunk(t, mode, ingestRows)
}

func openIngestChunk(t testing.TB, mode ingestInsertMode, chunk int) (*DB, *ingestStore) {
	t.Helper()
	db, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "ingest.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s, err := db.ingestStore(context.Background(), mode, chunk)
	if err != nil {
		db.Close()
		t.Fatalf("ingestStore: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("store Close: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db, s
}

// storedRecords reads db's ingest table back, times from the stored
// microseconds in UTC, for adaptertest.IngestStoresExactly.
func storedRecords(db *DB) func(context.Context) ([]ingest.Record, error) {
	return func(ctx context.Context) ([]ingest.Record, error) {
		rows, err := db.r.QueryContext(ctx, adaptertest.SelectIngestRecords(ingestTable))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		recs, err := adaptertest.CollectRecords(rows, func() (ingest.Record, error) {
			var r ingest.Record
			var m, rec int64
			err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &m, &r.Tag, &r.Quality, &r.Value, &rec)
			r.MeasuredAt, r.RecordedAt = time.UnixMicro(m).UTC(), time.UnixMicro(rec).UTC()
			return r, err
		})
		if err != nil {
			return nil, err
		}
		return recs, rows.Close()
	}
}

func TestIngestSchemaHasTheNineTypedColumns(t *testing.T) {
	t.Parallel()
	db, _ := openIngest(t, ingestMultiRow)
	rows, err := db.r.QueryContext(t.Context(), "select name, type, \"notnull\" from pragma_table_info(?)", ingestTable)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name, typ string
		var notNull bool
		if err := rows.Scan(&name, &typ, &notNull); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %v", name, strings.ToLower(typ), notNull))
	}
	want := "id text true,source integer true,seq integer true,channel integer true,measured_at integer true," +
		"tag text true,quality integer true,value real true,recorded_at integer true"
	if strings.Join(got, ",") != want {
		t.Fatalf("columns\n%s\nwant\n%s", strings.Join(got, ","), want)
	}
	var indexes int
	if err := db.r.QueryRowContext(t.Context(), "select count(*) from sqlite_schema where type = 'index' and tbl_name = ?", ingestTable).Scan(&indexes); err != nil || indexes != 0 {
		t.Fatalf("%d indexes (%v): the study disabled indexing", indexes, err)
	}
	// STRICT: a wrongly typed value is refused, not stored.
	if _, err := db.w.ExecContext(t.Context(), "insert into "+ingestTable+" values ('x', 'not a number', 0, 0, 0, 't', 0, 0, 0)"); err == nil {
		t.Fatal("a text in an integer column was accepted")
	}
}

// TestIngestRunStoresExactlyAndResetEmpties runs the workload's own driver
// against SQLite for both insert strategies: exactly S×n records, each the
// one Generate gives for its (source, seq), then Reset empties the table
// and shrinks the file.
func TestIngestRunStoresExactlyAndResetEmpties(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mode    ingestInsertMode
		chunk   int
		sources int
		records int64
		batch   int
	}{
		{"multi-row, partial chunks", ingestMultiRow, ingestRows, 3, 1234, 700}, // 500 + 200 per batch, 534 last
		{"multi-row, small batches", ingestMultiRow, ingestRows, 8, 300, 7},
		{"multi-row, chunk of 3", ingestMultiRow, 3, 2, 100, 8}, // 3+3+2, then 3+1
		{"per-row", ingestPerRow, 1, 4, 500, 64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, s := openIngestChunk(t, tc.mode, tc.chunk)
			cfg := ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: 11}
			adaptertest.IngestStoresExactly(t, s, cfg, storedRecords(db))
			full, _ := db.SizeBytes(ctx)
			if err := s.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Count(ctx); err != nil || n != 0 {
				t.Fatalf("count after Reset %d (%v), want 0", n, err)
			}
			empty, _ := db.SizeBytes(ctx)
			if empty >= full || empty > 64<<10 {
				t.Fatalf("file is %d bytes after Reset (%d before): want it back to a new database's size", empty, full)
			}
			// and the store works after a reset
			if err := s.InsertBatch(ctx, []ingest.Record{ingest.Generate(1, 0, 0)}); err != nil {
				t.Fatal(err)
			}
			if n, _ := s.Count(ctx); n != 1 {
				t.Fatalf("count %d after one insert following Reset", n)
			}
		})
	}
}

// TestIngestCancelledBatchStoresNothing checks that a cancelled batch
// stores nothing: a batch is all or nothing.
func TestIngestCancelledBatchStoresNothing(t *testing.T) {
	t.Parallel()
	_, s := openIngest(t, ingestMultiRow)
	adaptertest.IngestCancelledBatch(t, s)
}

func TestIngestBackendOpensOnExistingTable(t *testing.T) {
	t.Parallel()
	db, s := openIngest(t, ingestMultiRow)
	if err := s.InsertBatch(t.Context(), []ingest.Record{ingest.Generate(1, 0, 0), ingest.Generate(1, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	st, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.Count(t.Context()); err != nil || n != 2 {
		t.Fatalf("second store counts %d (%v), want the 2 stored", n, err)
	}
}

// BenchmarkIngestInsert compares the two insert strategies, and the rows
// per multi-row INSERT, on one source (SQLite has one writer whatever the
// number of sources). The records/s metric is what docs/ingest.md quotes.
func BenchmarkIngestInsert(b *testing.B) {
	for _, v := range []struct {
		name  string
		m     ingestInsertMode
		chunk int
	}{
		{"per-row", ingestPerRow, 1},
		{"multi-row=50", ingestMultiRow, 50},
		{"multi-row=250", ingestMultiRow, 250},
		{"multi-row=500", ingestMultiRow, 500},
		{"multi-row=1000", ingestMultiRow, 1000},
	} {
		for _, batch := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/batch=%d", v.name, batch), func(b *testing.B) {
				_, s := openIngestChunk(b, v.m, v.chunk)
				recs := make([]ingest.Record, batch)
				var seq int64
				for b.Loop() {
					ingest.Fill(recs, 1, 0, seq)
					seq += int64(batch)
					if err := s.InsertBatch(context.Background(), recs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// TestIngestMeasure prints throughput at study loads for both strategies
// with 8 sources; it runs only with FIELDBENCH_INGEST_MEASURE=1 (minutes).
func TestIngestMeasure(t *testing.T) {
	if os.Getenv("FIELDBENCH_INGEST_MEASURE") == "" {
		t.Skip("set FIELDBENCH_INGEST_MEASURE=1 to measure")
	}
	for _, mode := range []struct {
		name string
		m    ingestInsertMode
	}{{"multi-row", ingestMultiRow}, {"per-row", ingestPerRow}} {
		_, s := openIngest(t, mode.m)
		for _, n := range []int64{10_000, 50_000, 330_000} {
			for _, batch := range []int{100, 1000} {
				var xs []float64
				var reset time.Duration
				for k := 0; k < 4; k++ {
					t0 := time.Now()
					if err := s.Reset(t.Context()); err != nil {
						t.Fatal(err)
					}
					reset = time.Since(t0)
					res := ingest.Run(t.Context(), s, ingest.RunConfig{Sources: 8, Records: n, Batch: batch, Seed: 1, Verify: true}, adaptertest.NopRecorders(8))
					if res.Err != nil {
						t.Fatal(res.Err)
					}
					if k > 0 {
						xs = append(xs, res.Throughput)
					}
				}
				t.Logf("%-9s n=%-6d batch=%-5d %v records/s (last reset %s)", mode.name, n, batch, ingestFmtK(xs), reset.Round(time.Millisecond))
			}
		}
	}
}

func ingestFmtK(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.0fk", x/1000))
	}
	return strings.Join(parts, " ")
}
