package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/experiment"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// An interrupted experiment writes its report.html of what was measured
// (it wrote none, issue 40, finding 10), beside the note that it was
// interrupted, and exits 130. The interrupt comes once the run has
// written an interval: whatever the machine's speed, something was
// measured.
func TestExperimentInterruptedReport(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	path := filepath.Join(base, "long.yaml")
	scenario := "name: long\nstudy: test\ndescription: test\nprobe_every: -1s\nworkload: {name: microblog, options: {users: 40, clients: 2, duration: 10m}}\n"
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			files, _ := filepath.Glob(filepath.Join(base, "*-experiment-long", "*", result.FileName))
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"kind":"interval"`)) {
					cancel()
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	code, out, errs := execute(ctx, "experiment", path, "--results", base)
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted)\n%s%s", code, cli.ExitInterrupted, out, errs)
	}
	exps, _ := filepath.Glob(filepath.Join(base, "*-experiment-long"))
	if len(exps) != 1 {
		t.Fatalf("experiment directories %v", exps)
	}
	b, err := os.ReadFile(filepath.Join(exps[0], experiment.ReportFile))
	if err != nil {
		t.Fatalf("no experiment report: %v\n%s%s", err, out, errs)
	}
	if page := string(b); !strings.Contains(page, "Interrupted: the run was stopped before its planned end.") || !strings.Contains(page, "post: p50 and p99 latency over time") {
		t.Errorf("the report does not show the interrupted run's figures")
	}
	if _, err := os.Stat(filepath.Join(exps[0], experiment.InterruptedFile)); err != nil {
		t.Errorf("no %s beside the report: %v", experiment.InterruptedFile, err)
	}
	if !strings.Contains(out, "interrupted, what was measured") {
		t.Errorf("the report is not named:\n%s", out)
	}
}
