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

// TestFindmaxEveryWorkload searches every workload with an open-loop mode:
// microblog by its --duration, the others by their work sized to each step.
// An objective nothing breaks on any machine: the search holds up to
// --max-rate, each step's run is in the search's directory, and the
// confirmations (at the answer and 20 % above) are recorded.
func TestFindmaxEveryWorkload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workload string
		args     []string
	}{
		{"microblog", []string{"--users", "20", "--clients", "2"}},
		{"wiki", []string{"--articles", "50", "--threads", "2"}},
		{"ingest", []string{"--sources", "2", "--batch", "5"}},
		{"trajectory", []string{"--scale", "0.0005", "--mode", "random", "--clients", "2", "--queries", "2", "--batch", "100"}},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"findmax", tc.workload, "--slo", "p99<50s", "--min-achieved", "0.01", "--from-rate", "20", "--max-rate", "40",
				"--step-duration", "1500ms", "--step-warmup", "500ms", "--confirm", "1500ms", "--results", dir}, tc.args...)
			code, out, stderr := execute(context.Background(), args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(out, "maximum sustainable rate: at least 40 ops/s") || !strings.Contains(out, "confirmation at 48 ops/s") {
				t.Errorf("stdout: %s", out)
			}
			m, _ := filepath.Glob(filepath.Join(dir, "*-findmax-"+tc.workload+"-search"))
			if len(m) != 1 {
				t.Fatalf("search directories %v", m)
			}
			run, err := result.Read(m[0])
			if err != nil {
				t.Fatal(err)
			}
			x := run.Summary.Extra
			if run.Summary == nil || x["max_sustainable_rate"] != 40 || x["steps"] != 2 || x["confirm_rate"] != 40 || x["confirm_over_rate"] != 48 || x["confirm_held"] != 1 {
				t.Errorf("summary %+v", run.Summary)
			}
			if _, err := os.Stat(filepath.Join(m[0], "report.html")); err != nil {
				t.Error(err)
			}
			steps, _ := filepath.Glob(filepath.Join(m[0], "*-"+tc.workload+"-sqlite", "result.jsonl"))
			if len(steps) != 4 {
				t.Errorf("%d runs (steps and confirmations), want 4", len(steps))
			}
		})
	}
}

func TestFindmaxBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"findmax", "microblog"}, "--slo is required"},
		{[]string{"findmax", "microblog", "--slo", "p99<50ms", "--from-rate", "0"}, "--from-rate must be a positive rate"},
		{[]string{"findmax", "microblog", "--slo", "p99<50ms", "--rate", "10"}, "unknown flag"},
		{[]string{"findmax", "wiki", "--slo", "p99<50ms", "--requests", "10"}, "unknown flag"},
		{[]string{"findmax", "microblog", "--slo", "p99<50ms", "--confirm", "1s", "--step-warmup", "2s"}, "--confirm 1s must be longer"},
	} {
		code, _, stderr := execute(context.Background(), tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// An objective naming an operation the workload does not have could never
// be judged: it is refused before a step runs or a directory is made.
func TestFindmaxSLOUnknownOperation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ workload, slo, want string }{
		{"microblog", "p99:bogus<1ms", `the workload's clients send no operation "bogus" (they send: post, userline, timeline)`},
		{"wiki", "p99<50ms,p99.9:post<1s", `no operation "post" (they send: read, update)`},
		// Measured beside the clients with --model async, never judged.
		{"microblog", "p99:async-lag<1s", `no operation "async-lag"`},
	} {
		dir := t.TempDir()
		code, out, stderr := execute(context.Background(), "findmax", tc.workload, "--slo", tc.slo, "--results", dir, "--step-duration", "1s", "--step-warmup", "0s")
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("findmax %s --slo %q: exit %d, %q; want exit 2 saying %q", tc.workload, tc.slo, code, stderr, tc.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 || out != "" {
			t.Errorf("findmax %s --slo %q ran before refusing: %d entries in --results, stdout %q", tc.workload, tc.slo, len(ents), out)
		}
	}
}
