package job

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/fieldbench/fieldbench/adapter/sqlite"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// openIngestSQLite opens a fresh SQLite ingest store in a temporary
// directory, through the adapter a user would use.
func openIngestSQLite(t *testing.T) ingest.Store {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "in.db")
	_, db, err := OpenDB(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := ingestStore(ctx, db, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type nopBatchRecorder struct{ n int }

func (r *nopBatchRecorder) Record(int, time.Duration) { r.n++ }
func (r *nopBatchRecorder) Error(int, error)          {}

// TestIngestOnceKeepsClockError reproduces issue 13 point 9: the error of
// the clock's stop (an interval that could not be written to the result
// file) was assigned to a shadowed err and lost, so such a run exited 0.
// The run itself succeeds here; only the clock fails, and its error must
// come back.
func TestIngestOnceKeepsClockError(t *testing.T) {
	t.Parallel()
	diskFull := errors.New("write result file: no space left on device")
	for _, tc := range []struct {
		name     string
		clockErr error
	}{
		{"clock fine", nil},
		{"clock failed", diskFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := openIngestSQLite(t)
			rc := ingest.RunConfig{Sources: 2, Records: 30, Batch: 10, Seed: 1, Verify: true}
			recs := []ingest.BatchRecorder{&nopBatchRecorder{}, &nopBatchRecorder{}}
			started, stopped := 0, 0
			res, err := ingestOnce(context.Background(), st, rc, recs, func() func() error {
				started++
				return func() error { stopped++; return tc.clockErr }
			})
			if started != 1 || stopped != 1 {
				t.Fatalf("clock started %d and stopped %d times, want once each", started, stopped)
			}
			if res.Failed() || res.Run != 1 || res.Inserted != 60 {
				t.Fatalf("run result %+v, want a successful first run of 60 records", res)
			}
			if !errors.Is(err, tc.clockErr) || (tc.clockErr == nil) != (err == nil) {
				t.Fatalf("ingestOnce returned %v, want the clock's error %v", err, tc.clockErr)
			}
		})
	}
}
