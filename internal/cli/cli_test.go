package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"

	_ "github.com/fieldbench/fieldbench/db/all"
)

func execute(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Execute(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input the CLI itself refuses (commands, flags, report's arguments)
// fails and says why; the jobs' own refusals are tested in job/.
func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown workload", []string{"run", "nosuch"}, `unknown workload "nosuch"`},
		{"no workload", []string{"run"}, "needs a workload"},
		{"bad flag", []string{"run", "microblog", "--clientz", "3"}, "unknown flag"},
		{"bad duration", []string{"run", "microblog", "--duration", "soon"}, "invalid argument"},
		{"op without operation", []string{"op", "microblog"}, "needs an operation"},
		{"report without dirs", []string{"report"}, "at least one run directory"},
		{"report of a non-result", []string{"report", dir}, "read result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code == cli.ExitOK {
				t.Fatalf("exit 0 for bad input %v", tc.args)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	for _, want := range []string{"microblog", "post, userline, timeline", "denormalized, normalized, async", "--clients", "sqlite", "sqlite://"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("list (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

func onlyRun(t *testing.T, results string) *result.Run {
	t.Helper()
	entries, err := os.ReadDir(results)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", results, entries, err)
	}
	run, err := result.Read(filepath.Join(results, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestInterruptSavesResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted 2.5 s after the clients start, however long the load took.
	var once sync.Once
	errw := &signalWriter{marker: "running microblog", cancel: func() {
		once.Do(func() { time.AfterFunc(2500*time.Millisecond, cancel) })
	}}
	start := time.Now()
	var outb bytes.Buffer
	code := cli.Execute(ctx, []string{"run", "microblog", "--users", "50", "--clients", "4", "--duration", "5m", "--results", dir}, &outb, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, stderr)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("took %s to stop", time.Since(start))
	}
	run := onlyRun(t, dir)
	if run.Summary == nil || !run.Summary.Interrupted || len(run.Intervals) < 2 {
		t.Fatalf("summary %+v, %d intervals", run.Summary, len(run.Intervals))
	}
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report after interrupt:", err)
	}
}

// TestSIGKILLKeepsMeasuredSeconds kills the real binary and reads what it
// left: every completed second must be there, and report must work on it.
func TestSIGKILLKeepsMeasuredSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fieldbench")
	build := exec.Command("go", "build", "-o", bin, "github.com/fieldbench/fieldbench/cmd/fieldbench")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	res := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "run", "microblog", "--users", "50", "--clients", "4", "--duration", "5m", "--results", res)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the result file to have 3 intervals, then kill -9.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if entries, _ := os.ReadDir(res); len(entries) == 1 {
			if run, err := result.Read(filepath.Join(res, entries[0].Name())); err == nil && len(run.Intervals) >= 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no 3 intervals within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	run := onlyRun(t, res)
	if run.Summary != nil || len(run.Intervals) < 3 {
		t.Fatalf("after SIGKILL: summary %v, %d intervals", run.Summary, len(run.Intervals))
	}
	sum, err := run.Summarize()
	if err != nil || sum.Ops["timeline"].Count == 0 {
		t.Fatalf("summary from intervals: %+v %v", sum, err)
	}
	out := filepath.Join(dir, "killed.html")
	if code, _, stderr := execute(context.Background(), "report", run.Dir, "--out", out); code != 0 {
		t.Fatalf("report of a killed run: exit %d %s", code, stderr)
	}
}

// Bad input exits 2 wherever it is found: an unknown command, a help topic
// that does not exist, a flag a command lacks or cannot parse, and a job's
// refusal of its options (a few of each workload's: the job's own tests in
// job/ check every message). Refused commands leave no run directory.
func TestBadInputExitsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, ""},
		{[]string{"help", "nosuch"}, ""},
		{[]string{"run", "nosuch"}, ""},
		// microblog
		{[]string{"run", "microblog", "--clientz", "3"}, "unknown flag"},
		{[]string{"run", "microblog", "--model", "columnar", "--results", res}, `unknown microblog model "columnar"`},
		{[]string{"generate", "microblog", "--users", "1", "--out", t.TempDir()}, "--users must be at least 2"},
		{[]string{"op", "microblog", "timeline", "--user", "1"}, "needs --db"},
		{[]string{"run", "ingest", "--db", "null://", "--results", t.TempDir()}, ""},
		{[]string{"run", "trajectory", "--db", "null://", "--results", t.TempDir()}, ""},
		// wiki
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--request", "5"}, "unknown flag"},
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--reads", "120"}, "--reads is a percentage: 0 to 100 (got 120)"},
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--db", "nosuchdb://x"}, `no adapter for DSN scheme "nosuchdb"`},
		{[]string{"load", "wiki", "--results", res, "--from", dir}, "is a directory"},
		{[]string{"generate", "wiki"}, "needs --out"},
		{[]string{"op", "wiki"}, "needs an operation: read or update"},
		{[]string{"op", "wiki", "read", "--id", "1"}, "needs --db"},
		// trajectory
		{[]string{"run", "trajectory", "--scale", "big"}, "invalid argument"},
		{[]string{"run", "trajectory", "--mode", "foo", "--results", res}, `unknown trajectory mode "foo"`},
		{[]string{"generate", "trajectory"}, "needs --out"},
		{[]string{"op", "trajectory"}, "needs an operation: write, distance, knn, range, region"},
		{[]string{"op", "trajectory", "write", "--db", "sqlite://" + filepath.Join(dir, "t.db"), "--index", "0", "--count", "many"}, "invalid argument"},
		{[]string{"op", "trajectory", "write", "--db", "sqlite://" + filepath.Join(dir, "t.db"), "--scale", "0.0002", "--index", "-1"}, "--index must be from 0 to 1296"},
		{[]string{"op", "trajectory", "distance", "--x", "1", "--y", "2"}, "needs --db"},
		// ingest
		{[]string{"sweep", "ingest", "--results", res, "--from", "400", "--to", "300"}, "--from (400) must not be greater than --to (300)"},
		{[]string{"run", "ingest", "--results", res, "--records", "0"}, "--records must be at least 1"},
		{[]string{"op", "ingest"}, "needs an operation: insert, batch or count"},
		{[]string{"op", "ingest", "count"}, "needs --db"},
		{[]string{"op", "ingest", "batch", "--db", "sqlite://" + filepath.Join(dir, "in.db"), "--source", "1", "--index", "0"}, "needs --source, --index and --count"},
		{[]string{"op", "ingest", "batch", "--db", "sqlite://" + filepath.Join(dir, "in.db"), "--source", "1", "--index", "0", "--count", "ten"}, "invalid argument"},
	} {
		code, _, stderr := execute(context.Background(), tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d saying %q (%s)", tc.args, code, cli.ExitUsage, tc.want, stderr)
		}
	}
	if code, out, _ := execute(context.Background(), "help", "run", "microblog"); code != cli.ExitOK || !strings.Contains(out, "--clients") {
		t.Errorf("help run microblog: exit %d, %q", code, out)
	}
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// signalWriter cancels when what was written contains a marker.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
	}
	return len(p), nil
}

// Ctrl-C during a load exits 130 and says what the database now holds; a
// later run refuses the partial dataset instead of measuring it.
func TestInterruptedLoadSaysPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled as the populate begins: 20,000 users take seconds to load.
	errw := &signalWriter{marker: "loading ", cancel: cancel}
	var out bytes.Buffer
	code := cli.Execute(ctx, []string{"load", "microblog", "--db", dsn, "--users", "20000"}, &out, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, stderr)
	}
	if !strings.Contains(stderr, "cut short") || !(strings.Contains(stderr, "PARTIAL") || strings.Contains(stderr, "untouched")) {
		t.Fatalf("stderr does not say what the database holds: %s", stderr)
	}
	t.Logf("interrupted load: %s", strings.TrimSpace(stderr))
	if strings.Contains(stderr, "PARTIAL") {
		code, _, stderr := execute(context.Background(), "run", "microblog", "--db", dsn, "--users", "20000", "--duration", "1s", "--results", filepath.Join(dir, "r"))
		if code != cli.ExitUsage || !strings.Contains(stderr, "partial load") {
			t.Fatalf("a run on the partial load: exit %d, %s", code, stderr)
		}
	}
}
