package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

func TestFindmaxRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// An objective nothing breaks on any machine: the search holds up to
	// --max, and its result and report are written.
	code, out, stderr := execute(context.Background(), "findmax", "microblog", "--users", "20", "--clients", "2",
		"--slo", "p99<50s", "--min-achieved", "0.01", "--from", "20", "--max", "40",
		"--step-duration", "1500ms", "--step-warmup", "500ms", "--results", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "maximum sustainable rate: at least 40 ops/s") {
		t.Errorf("stdout: %s", out)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*-findmax-microblog-search"))
	if len(m) != 1 {
		t.Fatalf("search directories %v", m)
	}
	run, err := result.Read(m[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary == nil || run.Summary.Extra["max_sustainable_rate"] != 40 || run.Summary.Extra["steps"] != 2 {
		t.Errorf("summary %+v", run.Summary)
	}
	if _, err := os.Stat(filepath.Join(m[0], "report.html")); err != nil {
		t.Error(err)
	}
	steps, _ := filepath.Glob(filepath.Join(m[0], "*-microblog-sqlite", "result.jsonl"))
	if len(steps) != 2 {
		t.Errorf("%d step runs, want 2", len(steps))
	}
}

func TestFindmaxBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"findmax", "microblog"}, "--slo is required"},
		{[]string{"findmax", "microblog", "--slo", "p99<50ms", "--from", "0"}, "--from must be a positive rate"},
		{[]string{"findmax", "microblog", "--slo", "p99<50ms", "--rate", "10"}, "unknown flag"},
		{[]string{"findmax", "wiki"}, "unknown workload"},
	} {
		code, _, stderr := execute(context.Background(), tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
