package job

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/result"
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

// TestIngestRunRate runs the job as the CLI would (options set by name) on
// SQLite, closed and open loop: the header records the rate and the loop,
// and an open-loop run lasts at least until its last batch's intended start
// (2 sources × 5 batches at 100 batches/s: source 1's fifth batch is due at
// 90 ms), a lower bound that holds on any machine.
func TestIngestRunRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate     string
		want     float64
		loop     string
		minTaken time.Duration
	}{
		{"0", 0, "closed", 0},
		{"100", 100, "open", 90 * time.Millisecond},
	} {
		t.Run(tc.loop, func(t *testing.T) {
			t.Parallel()
			res := filepath.Join(t.TempDir(), "results")
			j := newIngestJob()
			for name, v := range map[string]string{"results": res, "sources": "2", "records": "50", "batch": "10", "rate": tc.rate} {
				if err := j.opts.Set(name, v); err != nil {
					t.Fatal(err)
				}
			}
			c, ok := Find(j, "run")
			if !ok || !c.Measured || !j.opts.Has("run", "rate") || !j.opts.Has("sweep", "rate") {
				t.Fatal("run ingest is not a measured command with --rate (run and sweep)")
			}
			var out bytes.Buffer
			if err := c.Run(context.Background(), &Env{Stdout: &out, Stderr: &out}); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			entries, err := os.ReadDir(res)
			if err != nil || len(entries) != 1 {
				t.Fatalf("want one run directory: %v %v", entries, err)
			}
			run, err := result.Read(filepath.Join(res, entries[0].Name()))
			if err != nil {
				t.Fatal(err)
			}
			o := run.Header.Options
			if o["rate"] != tc.want || o["loop"] != tc.loop {
				t.Fatalf("header options rate %v loop %v, want %v %s", o["rate"], o["loop"], tc.want, tc.loop)
			}
			ex := run.Summary.Extra
			if ex["records"] != 100 || run.Summary.Ops["batch"].Count != 10 {
				t.Fatalf("summary %+v", run.Summary)
			}
			if took := time.Duration(ex["run_seconds"] * float64(time.Second)); took < tc.minTaken {
				t.Fatalf("the run took %s, before its last batch was due (%s)", took, tc.minTaken)
			}
		})
	}
}
