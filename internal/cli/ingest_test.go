package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

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

// TestIngestSweepExitCodes: a sweep whose runs all fail exits 0 when it
// goes on (continue) and 1 when it stops at the first failure (stop).
func TestIngestSweepExitCodes(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string]int{"continue": cli.ExitOK, "stop": cli.ExitFailure} {
		res := filepath.Join(t.TempDir(), "results")
		code, out, stderr := execute(context.Background(), "sweep", "ingest", "--results", res, "--timeout", "1ns", "--on-error", mode,
			"--from", "100", "--to", "200", "--step", "100", "--runs", "3", "--warmup-runs", "1", "--sources", "2", "--batch", "50")
		if code != want {
			t.Errorf("--on-error %s: exit %d, want %d\n%s\n%s", mode, code, want, out, stderr)
		}
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
