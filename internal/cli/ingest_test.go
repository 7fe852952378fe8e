package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

func TestIngestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	sweep := func(args ...string) []string {
		return append([]string{"sweep", "ingest", "--results", res, "--from", "100", "--to", "300", "--step", "100", "--runs", "3", "--warmup-runs", "1"}, args...)
	}
	db := "sqlite://" + filepath.Join(dir, "in.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"from > to", sweep("--from", "400"), "--from (400) must not be greater than --to (300)"},
		{"step 0", sweep("--step", "0"), "--step must be at least 1 (got 0)"},
		{"negative step", sweep("--step", "-10"), "--step must be at least 1"},
		{"runs = warm-up runs", sweep("--runs", "3", "--warmup-runs", "3"), "--runs (3) must be greater than --warmup-runs (3)"},
		{"runs < warm-up runs", sweep("--runs", "2", "--warmup-runs", "5"), "--runs (2) must be greater than --warmup-runs (5)"},
		{"no sources", sweep("--sources", "0"), "--sources must be at least 1 (got 0)"},
		{"no batch", sweep("--batch", "0"), "--batch must be at least 1 (got 0)"},
		{"on-error maybe", sweep("--on-error", "maybe"), `--on-error must be continue or stop (got "maybe")`},
		{"negative timeout", sweep("--timeout", "-1s"), "--timeout must not be negative"},
		{"from 0", sweep("--from", "0"), "--from must be at least 1"},
		{"unknown adapter", sweep("--db", "nosuchdb://x"), `no adapter for DSN scheme "nosuchdb"`},
		{"run without records", []string{"run", "ingest", "--results", res, "--records", "0"}, "--records must be at least 1"},
		{"run with too many records", []string{"run", "ingest", "--results", res, "--records", "3000000000"}, "--records must be at most"},
		{"run without sources", []string{"run", "ingest", "--results", res, "--sources", "0"}, "--sources must be at least 1"},
		{"run without batch", []string{"run", "ingest", "--results", res, "--batch", "-1"}, "--batch must be at least 1"},
		{"op without operation", []string{"op", "ingest"}, "needs an operation: insert, batch or count"},
		{"op insert without db", []string{"op", "ingest", "insert", "--source", "1"}, "needs --db"},
		{"op count without db", []string{"op", "ingest", "count"}, "needs --db"},
		{"op negative source", []string{"op", "ingest", "insert", "--db", db, "--source", "-1"}, "--source must be from 0"},
		{"op negative index", []string{"op", "ingest", "insert", "--db", db, "--index", "-1"}, "--index must be from 0"},
		{"op batch without db", []string{"op", "ingest", "batch", "--source", "1", "--index", "0", "--count", "10"}, "needs --db"},
		{"op batch without count", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "0"}, "needs --source, --index and --count"},
		{"op batch without index", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--count", "10"}, "needs --source, --index and --count"},
		{"op batch without source", []string{"op", "ingest", "batch", "--db", db, "--index", "0", "--count", "10"}, "needs --source, --index and --count"},
		{"op batch count 0", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "0", "--count", "0"}, "--count must be at least 1 (got 0)"},
		{"op batch negative count", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "0", "--count", "-5"}, "--count must be at least 1 (got -5)"},
		{"op batch negative index", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "-1", "--count", "1"}, "--index must be from 0 to 2147483646 (got -1)"},
		{"op batch index too big", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "2147483647", "--count", "1"}, "--index must be from 0 to 2147483646 (got 2147483647)"},
		{"op batch past the last index", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "2147483640", "--count", "10"}, "--count must be at most 7"},
		{"op batch negative source", []string{"op", "ingest", "batch", "--db", db, "--source", "-2", "--index", "0", "--count", "1"}, "--source must be from 0 to 2147483647 (got -2)"},
		{"op batch count not a number", []string{"op", "ingest", "batch", "--db", db, "--source", "1", "--index", "0", "--count", "ten"}, "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d (usage); stderr:\n%s", code, cli.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused commands left %d run directories", len(entries))
	}
	// Refused before the database was opened: nothing was written.
	if _, err := os.Stat(strings.TrimPrefix(db, "sqlite://")); !os.IsNotExist(err) {
		t.Fatalf("refused op commands created the database: %v", err)
	}
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
		code, out, stderr := execute(ctx, "op", "ingest", "count", "--db", dsn)
		var got struct{ Records int64 }
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("op count: exit %d %q %s", code, out, stderr)
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
			args := []string{"op", "ingest", "batch", "--db", dsn, "--source", strconv.FormatInt(tc.source, 10),
				"--index", strconv.FormatInt(tc.index, 10), "--count", strconv.FormatInt(tc.count, 10)}
			if tc.seed != ingest.DefaultSeed {
				args = append(args, "--seed", strconv.FormatInt(tc.seed, 10))
			}
			code, out, stderr := execute(ctx, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
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

func TestIngestList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	for _, want := range []string{"ingest — ", "126-byte", "operations: batch", "--sources", "(default 8)", "--batch", "--from", "(default 10000)",
		"--to", "(default 330000)", "--step", "--runs", "(default 13)", "--warmup-runs", "(default 3)", "--on-error", "(default continue)", "--timeout"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("list (exit %d) lacks %q:\n%s", code, want, out)
		}
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
	code, out, stderr := execute(context.Background(), "sweep", "ingest", "--db", dsn, "--results", res,
		"--from", "100", "--to", "300", "--step", "100", "--runs", "3", "--warmup-runs", "1", "--sources", "2", "--batch", "50")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
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
	code, out, stderr = execute(context.Background(), "op", "ingest", "count", "--db", dsn)
	if code != 0 || strings.TrimSpace(out) != `{"records":600}` {
		t.Fatalf("op count: exit %d %q %s", code, out, stderr)
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
// goes on (continue) or ends after the first (stop, exit 1); neither
// crashes, and both leave a result and a report.
func TestIngestSweepFailedRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode      string
		wantCode  int
		wantRuns  int
		wantLoads int
	}{
		{"continue", cli.ExitOK, 6, 2},
		{"stop", cli.ExitFailure, 1, 1},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			res := filepath.Join(t.TempDir(), "results")
			code, out, stderr := execute(context.Background(), "sweep", "ingest", "--results", res, "--timeout", "1ns", "--on-error", tc.mode,
				"--from", "100", "--to", "200", "--step", "100", "--runs", "3", "--warmup-runs", "1", "--sources", "2", "--batch", "50")
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.wantCode, out, stderr)
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
	ctx := context.Background()
	code, out, stderr := execute(ctx, "run", "ingest", "--db", dsn, "--results", filepath.Join(dir, "results"),
		"--sources", "3", "--records", "500", "--batch", "64", "--seed", "4")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	run := onlyRun(t, filepath.Join(dir, "results"))
	ex := run.Summary.Extra
	if ex["records"] != 1500 || ex["throughput_records_per_s"] <= 0 || run.Summary.Ops["batch"].Count != 3*8 {
		t.Fatalf("summary %+v", run.Summary)
	}
	if pts := pointsOf(run, "ingest-run"); len(pts) != 1 || pts[0].X != 500 || pts[0].Y <= 0 {
		t.Fatalf("run points %+v", pts)
	}
	count := func() string {
		code, out, stderr := execute(ctx, "op", "ingest", "count", "--db", dsn)
		if code != 0 {
			t.Fatalf("op count: exit %d %s", code, stderr)
		}
		return strings.TrimSpace(out)
	}
	if got := count(); got != `{"records":1500}` {
		t.Fatalf("after the run: %s", got)
	}
	code, out, stderr = execute(ctx, "op", "ingest", "insert", "--db", dsn, "--source", "2", "--index", "77", "--seed", "4")
	if code != 0 {
		t.Fatalf("op insert: exit %d %s", code, stderr)
	}
	var got ingest.Record
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("op insert printed %q: %v", out, err)
	}
	if want := ingest.Generate(4, 2, 77); got != want {
		t.Fatalf("op insert printed %+v, want %+v", got, want)
	}
	if got := count(); got != `{"records":1501}` {
		t.Fatalf("after op insert: %s", got)
	}
	// A second run starts from an empty table again.
	if code, _, stderr := execute(ctx, "run", "ingest", "--db", dsn, "--results", filepath.Join(dir, "results2"), "--sources", "2", "--records", "10", "--batch", "3"); code != 0 {
		t.Fatalf("second run: exit %d %s", code, stderr)
	}
	if got := count(); got != `{"records":20}` {
		t.Fatalf("after a second run: %s", got)
	}
}

func TestIngestSweepInterrupt(t *testing.T) {
	t.Parallel()
	res := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted as the second load begins, whatever the machine's speed:
	// the first load's three runs and its point are then saved.
	errw := &signalWriter{marker: "load 1000, run 1/3", cancel: cancel}
	start := time.Now()
	var out bytes.Buffer
	code := cli.Execute(ctx, []string{"sweep", "ingest", "--results", res,
		"--from", "500", "--to", "1000000", "--step", "500", "--runs", "3", "--warmup-runs", "1", "--sources", "2", "--batch", "100"}, &out, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %s to stop", d)
	}
	run := onlyRun(t, res)
	if run.Summary == nil || !run.Summary.Interrupted {
		t.Fatalf("summary %+v", run.Summary)
	}
	runs, pts := pointsOf(run, "ingest-run"), pointsOf(run, "ingest-throughput")
	if len(runs) < 3 || len(pts) < 1 {
		t.Fatalf("%d runs and %d loads saved after the first load", len(runs), len(pts))
	}
	for _, p := range runs {
		if p.Failed != "" {
			t.Fatalf("an interrupted run was recorded as a failure: %+v", p)
		}
	}
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report after interrupt:", err)
	}
}
