package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/study"
)

// `study` lists the studies from the registry, dry-runs a plan from the
// repository's scenarios without starting anything, and refuses bad
// input as bad input. The end-to-end run is package study's test.
func TestStudyCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, help, _ := execute(ctx, "study", "--help")
	for _, n := range study.Names() {
		if !strings.Contains(help, "  "+n+" ") {
			t.Errorf("study --help does not list %s", n)
		}
	}
	scen := filepath.Join("..", "..", "scenarios")
	res := t.TempDir()
	code, out, errs := execute(ctx, "study", "trajectory", "--dry-run", "--scenarios", scen, "--results", res)
	if code != cli.ExitOK || !strings.Contains(out, "1/5 postgres") || !strings.Contains(out, "(to run)") {
		t.Errorf("dry run: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{
		{"study", "nosuch", "--dry-run"},
		{"study", "ingest", "--size", "huge", "--dry-run"},
		{"study", "ingest", "--dry-run", "--scenarios", t.TempDir()},
	} {
		if code, _, errs := execute(ctx, args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, cli.ExitUsage, errs)
		}
	}
	// --report-only on an empty directory writes a report saying nothing
	// was measured.
	code, out, errs = execute(ctx, "study", "ingest", "--report-only", "--results", res)
	if code != cli.ExitOK || !strings.Contains(out, "study-report.md") {
		t.Errorf("report-only: exit %d\n%s%s", code, out, errs)
	}
}
