package job_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// The ingest job's commands run as the CLI runs them (runJob); the tests of
// its internals are in ingest_test.go.

func TestIngestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	sweep := func(kv ...string) map[string]string {
		return with(map[string]string{"results": res, "from": "100", "to": "300", "step": "100", "runs": "3", "warmup-runs": "1"}, kv...)
	}
	db := "sqlite://" + filepath.Join(dir, "in.db")
	op := func(kv ...string) map[string]string { return with(map[string]string{"db": db}, kv...) }
	checkBadInput(t, ingest.Name, []badInput{
		{"from > to", "sweep", sweep("from", "400"), "--from (400) must not be greater than --to (300)"},
		{"step 0", "sweep", sweep("step", "0"), "--step must be at least 1 (got 0)"},
		{"negative step", "sweep", sweep("step", "-10"), "--step must be at least 1"},
		{"runs = warm-up runs", "sweep", sweep("runs", "3", "warmup-runs", "3"), "--runs (3) must be greater than --warmup-runs (3)"},
		{"runs < warm-up runs", "sweep", sweep("runs", "2", "warmup-runs", "5"), "--runs (2) must be greater than --warmup-runs (5)"},
		{"no sources", "sweep", sweep("sources", "0"), "--sources must be at least 1 (got 0)"},
		{"no batch", "sweep", sweep("batch", "0"), "--batch must be at least 1 (got 0)"},
		{"on-error maybe", "sweep", sweep("on-error", "maybe"), `--on-error must be continue or stop (got "maybe")`},
		{"negative timeout", "sweep", sweep("timeout", "-1s"), "--timeout must not be negative"},
		{"too many retries", "sweep", sweep("retries", "21"), "--retries must be between 0 and 20 (got 21)"},
		{"retries without backoff", "run", map[string]string{"results": res, "retries": "2", "retry-backoff": "0s"}, "--retry-backoff must be positive"},
		{"negative op timeout", "run", map[string]string{"results": res, "op-timeout": "-1s"}, "--op-timeout must not be negative (got -1s)"},
		{"from 0", "sweep", sweep("from", "0"), "--from must be at least 1"},
		{"unknown adapter", "sweep", sweep("db", "nosuchdb://x"), `no adapter for DSN scheme "nosuchdb"`},
		{"run without records", "run", map[string]string{"results": res, "records": "0"}, "--records must be at least 1"},
		{"run with too many records", "run", map[string]string{"results": res, "records": "3000000000"}, "--records must be at most"},
		{"run without sources", "run", map[string]string{"results": res, "sources": "0"}, "--sources must be at least 1"},
		{"run without batch", "run", map[string]string{"results": res, "batch": "-1"}, "--batch must be at least 1"},
		{"op without operation", "op", nil, "needs an operation: insert, batch or count"},
		{"op insert without db", "op insert", map[string]string{"source": "1"}, "needs --db"},
		{"op count without db", "op count", nil, "needs --db"},
		{"op negative source", "op insert", op("source", "-1"), "--source must be from 0"},
		{"op negative index", "op insert", op("index", "-1"), "--index must be from 0"},
		{"op batch without db", "op batch", map[string]string{"source": "1", "index": "0", "count": "10"}, "needs --db"},
		{"op batch without count", "op batch", op("source", "1", "index", "0"), "needs --source, --index and --count"},
		{"op batch without index", "op batch", op("source", "1", "count", "10"), "needs --source, --index and --count"},
		{"op batch without source", "op batch", op("index", "0", "count", "10"), "needs --source, --index and --count"},
		{"op batch count 0", "op batch", op("source", "1", "index", "0", "count", "0"), "--count must be at least 1 (got 0)"},
		{"op batch negative count", "op batch", op("source", "1", "index", "0", "count", "-5"), "--count must be at least 1 (got -5)"},
		{"op batch negative index", "op batch", op("source", "1", "index", "-1", "count", "1"), "--index must be from 0 to 2147483646 (got -1)"},
		{"op batch index too big", "op batch", op("source", "1", "index", "2147483647", "count", "1"), "--index must be from 0 to 2147483646 (got 2147483647)"},
		{"op batch past the last index", "op batch", op("source", "1", "index", "2147483640", "count", "10"), "--count must be at most 7"},
		{"op batch negative source", "op batch", op("source", "-2", "index", "0", "count", "1"), "--source must be from 0 to 2147483647 (got -2)"},
	})
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused commands left %d run directories", len(entries))
	}
	// Refused before the database was opened: nothing was written.
	if _, err := os.Stat(strings.TrimPrefix(db, "sqlite://")); !os.IsNotExist(err) {
		t.Fatalf("refused op commands created the database: %v", err)
	}
}

// ingestCount runs op ingest count on dsn and returns what it printed.
func ingestCount(t *testing.T, dsn string) string {
	t.Helper()
	out, stderr, err := runJob(t, ingest.Name, "op count", map[string]string{"db": dsn})
	if err != nil {
		t.Fatalf("op count: %v %q %s", err, out, stderr)
	}
	return strings.TrimSpace(out)
}

// TestIngestOpBatch inserts batches with op batch and checks each one's
// answer and that the stored count grew by exactly its size (count checked
// both by the answer and by op count).
func TestIngestOpBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "in.db")
	dsn := "sqlite://" + file
	var want []ingest.Record // every record inserted, in order
	count := func() int64 {
		t.Helper()
		out := ingestCount(t, dsn)
		var got struct{ Records int64 }
		if json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("op count: %q", out)
		}
		return got.Records
	}
	stored := int64(0)
	for _, tc := range []struct {
		name                       string
		source, index, count, seed int64
	}{
		{"one record", 0, 0, 1, ingest.DefaultSeed},
		{"a run-sized batch", 3, 100, 1000, ingest.DefaultSeed},
		{"the same batch again", 3, 100, 1000, ingest.DefaultSeed},
		{"more rows than one statement, another seed", 7, 5, 1234, 9},
		{"up to the last index of a source", 1, ingest.MaxRecords - 2, 2, ingest.DefaultSeed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]string{"db": dsn, "source": strconv.FormatInt(tc.source, 10),
				"index": strconv.FormatInt(tc.index, 10), "count": strconv.FormatInt(tc.count, 10)}
			if tc.seed != ingest.DefaultSeed {
				opts["seed"] = strconv.FormatInt(tc.seed, 10)
			}
			out, stderr, err := runJob(t, ingest.Name, "op batch", opts)
			if err != nil {
				t.Fatalf("%v: %s", err, stderr)
			}
			stored += tc.count
			for i := range tc.count {
				want = append(want, ingest.Generate(tc.seed, int(tc.source), tc.index+i))
			}
			wantOut := fmt.Sprintf(`{"source":%d,"from":%d,"count":%d,"records_stored":%d}`, tc.source, tc.index, tc.count, stored)
			if strings.TrimSpace(out) != wantOut {
				t.Fatalf("printed %q, want %q", out, wantOut)
			}
			if got := count(); got != stored {
				t.Fatalf("op count says %d records after the batch, want %d", got, stored)
			}
		})
	}

	// The rows are the generator's records, batch after batch.
	db, err := sql.Open("sqlite", file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "select id, source, seq, tag from ingest_records order by rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next(); n++ {
		var got ingest.Record
		if err := rows.Scan(&got.ID, &got.Source, &got.Seq, &got.Tag); err != nil {
			t.Fatal(err)
		}
		if n >= len(want) {
			t.Fatalf("more rows than the %d records inserted", len(want))
		}
		w := want[n]
		if got.ID != w.ID || got.Source != w.Source || got.Seq != w.Seq || got.Tag != w.Tag {
			t.Fatalf("row %d is %s/%d/%d/%s, want the generator's %s/%d/%d/%s", n, got.ID, got.Source, got.Seq, got.Tag, w.ID, w.Source, w.Seq, w.Tag)
		}
	}
	if err := rows.Err(); err != nil || n != len(want) {
		t.Fatalf("%d rows, want %d: %v", n, len(want), err)
	}
}

// pointsOf splits a run's points by series.
func pointsOf(run *result.Run, series string) []result.Point {
	var out []result.Point
	for _, p := range run.Points {
		if p.Series == series {
			out = append(out, p)
		}
	}
	return out
}

func TestIngestSweepEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "in.db")
	res := filepath.Join(dir, "results")
	out, stderr, err := runJob(t, ingest.Name, "sweep", map[string]string{"db": dsn, "results": res,
		"from": "100", "to": "300", "step": "100", "runs": "3", "warmup-runs": "1", "sources": "2", "batch": "50"})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{"records/source", "mean", "sd", "95% CI", "failed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("terminal table lacks %q:\n%s", want, out)
		}
	}
	run := onlyRun(t, res)
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report.html:", err)
	}
	h := run.Header
	if h.Workload != "ingest" || h.Options["command"] != "sweep" || len(h.Operations) != 1 || h.Operations[0] != "batch" {
		t.Fatalf("header %+v", h)
	}
	for _, name := range []string{"ingest-run", "ingest-throughput"} {
		m, ok := h.Series[name]
		if !ok || m.Title == "" || m.XLabel != "records per source" || m.YLabel != "throughput (records/s)" {
			t.Fatalf("series %s: %+v", name, m)
		}
	}
	if h.Series["ingest-throughput"].Band != "ci" {
		t.Fatalf("the throughput series must draw its CI: %+v", h.Series["ingest-throughput"])
	}
	runs := pointsOf(run, "ingest-run")
	if len(runs) != 9 {
		t.Fatalf("%d run points, want 3 loads × 3 runs", len(runs))
	}
	for i, p := range runs {
		wantX, wantRun := float64(100*(i/3+1)), strconv.Itoa(i%3+1)
		if p.X != wantX || p.Labels["run"] != wantRun || p.Warmup != (i%3 == 0) || p.Failed != "" || p.Y <= 0 {
			t.Fatalf("run point %d: %+v", i, p)
		}
	}
	pts := pointsOf(run, "ingest-throughput")
	if len(pts) != 3 {
		t.Fatalf("%d load points, want 3", len(pts))
	}
	for i, p := range pts {
		// the mean of the two measured runs, without the warm-up one
		measured := []float64{runs[3*i+1].Y, runs[3*i+2].Y}
		mean := (measured[0] + measured[1]) / 2
		if p.X != float64(100*(i+1)) || p.N != 2 || p.Failed != "" || p.SD <= 0 || !(p.Lo < p.Y && p.Y < p.Hi) ||
			abs(p.Y-mean) > 1e-6*mean {
			t.Fatalf("load point %d: %+v (measured runs %v)", i, p, measured)
		}
	}
	if run.Summary == nil || run.Summary.Ops["batch"].Count != 2*3*(2+4+6) || run.Summary.Extra["runs"] != 9 || run.Summary.Extra["runs_failed"] != 0 {
		t.Fatalf("summary %+v", run.Summary)
	}
	// The database holds exactly the last run: 2 sources × 300 records.
	if got := ingestCount(t, dsn); got != `{"records":600}` {
		t.Fatalf("op count: %q", got)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestIngestSweepFailedRuns makes every run fail with a timeout too short to
// insert anything: each failure is recorded with its cause and the sweep
// goes on (continue) or ends after the first (stop: the sweep fails, not as
// bad input nor as an interrupt); neither crashes, and both leave a result
// and a report.
func TestIngestSweepFailedRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode      string
		wantErr   bool
		wantRuns  int
		wantLoads int
	}{
		{"continue", false, 6, 2},
		{"stop", true, 1, 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			res := filepath.Join(t.TempDir(), "results")
			out, stderr, err := runJob(t, ingest.Name, "sweep", map[string]string{"results": res, "timeout": "1ns", "on-error": tc.mode,
				"from": "100", "to": "200", "step": "100", "runs": "3", "warmup-runs": "1", "sources": "2", "batch": "50"})
			if (err != nil) != tc.wantErr || isUsage(err) || errors.Is(err, job.ErrInterrupted) {
				t.Fatalf("error %v, want a failure: %v\n%s\n%s", err, tc.wantErr, out, stderr)
			}
			run := onlyRun(t, res)
			runs := pointsOf(run, "ingest-run")
			if len(runs) != tc.wantRuns {
				t.Fatalf("%d run points, want %d", len(runs), tc.wantRuns)
			}
			for _, p := range runs {
				if !strings.Contains(p.Failed, "timeout") || p.Y != 0 {
					t.Fatalf("run point %+v: want a failure with its cause", p)
				}
			}
			pts := pointsOf(run, "ingest-throughput")
			if len(pts) != tc.wantLoads {
				t.Fatalf("%d load points, want %d", len(pts), tc.wantLoads)
			}
			for _, p := range pts {
				if p.N != 0 || !strings.Contains(p.Failed, "timeout") {
					t.Fatalf("load point %+v: want no sample and the failure", p)
				}
			}
			if run.Summary == nil || run.Summary.Extra["runs_failed"] != float64(tc.wantRuns) {
				t.Fatalf("summary %+v", run.Summary)
			}
			if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
				t.Fatal("no report.html:", err)
			}
			if !strings.Contains(out, "timeout") {
				t.Fatalf("the terminal table does not give the cause:\n%s", out)
			}
		})
	}
}

func TestIngestRunThenOp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "in.db")
	out, stderr, err := runJob(t, ingest.Name, "run", map[string]string{"db": dsn, "results": filepath.Join(dir, "results"),
		"sources": "3", "records": "500", "batch": "64", "seed": "4"})
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out, stderr)
	}
	run := onlyRun(t, filepath.Join(dir, "results"))
	ex := run.Summary.Extra
	if ex["records"] != 1500 || ex["throughput_records_per_s"] <= 0 || run.Summary.Ops["batch"].Count != 3*8 {
		t.Fatalf("summary %+v", run.Summary)
	}
	if pts := pointsOf(run, "ingest-run"); len(pts) != 1 || pts[0].X != 500 || pts[0].Y <= 0 {
		t.Fatalf("run points %+v", pts)
	}
	if got := ingestCount(t, dsn); got != `{"records":1500}` {
		t.Fatalf("after the run: %s", got)
	}
	out, stderr, err = runJob(t, ingest.Name, "op insert", map[string]string{"db": dsn, "source": "2", "index": "77", "seed": "4"})
	if err != nil {
		t.Fatalf("op insert: %v %s", err, stderr)
	}
	var got ingest.Record
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("op insert printed %q: %v", out, err)
	}
	if want := ingest.Generate(4, 2, 77); got != want {
		t.Fatalf("op insert printed %+v, want %+v", got, want)
	}
	if got := ingestCount(t, dsn); got != `{"records":1501}` {
		t.Fatalf("after op insert: %s", got)
	}
	// A second run starts from an empty table again.
	if _, stderr, err := runJob(t, ingest.Name, "run", map[string]string{"db": dsn, "results": filepath.Join(dir, "results2"), "sources": "2", "records": "10", "batch": "3"}); err != nil {
		t.Fatalf("second run: %v %s", err, stderr)
	}
	if got := ingestCount(t, dsn); got != `{"records":20}` {
		t.Fatalf("after a second run: %s", got)
	}
}
