package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

var durabilitySeed = flag.Uint64("durability-seed", 1, "seed of the kill moments of TestResultFilesSurviveSIGKILL")

// kills is how many times each command is killed.
const kills = 4

// TestResultFilesSurviveSIGKILL is issue 13's durability test: the built
// binary is SIGKILLed at seeded random moments of `run`, `sweep` and
// `experiment` (on SQLite, quick settings), and every result file left
// must be read by `report` and `scores` — exit 0, or, for a file the kill
// left without its header, a clear refusal that names it incomplete —
// never a crash and never a hang. The moments are drawn over each
// command's own duration, measured by one complete run first, so the
// kills land in loading, measuring and finishing alike on a slow machine
// as on a fast one.
func TestResultFilesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it about 15 times")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "fieldbench")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	scenario := filepath.Join(tmp, "scenario.yaml")
	if err := os.WriteFile(scenario, []byte(`name: durability
study: test
description: killed at random
workload: {name: microblog, options: {users: 40, clients: 2, duration: 2s}}
timeline:
  - {at: 1s, do: mark, note: half-time}
audit: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	commands := []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "microblog", "--users", "40", "--clients", "2", "--duration", "2s"}},
		{"sweep", []string{"sweep", "ingest", "--sources", "2", "--from", "2000", "--to", "6000", "--step", "2000", "--batch", "100", "--runs", "2", "--warmup-runs", "0"}},
		{"experiment", []string{"experiment", scenario}},
	}
	rng := rand.New(rand.NewPCG(*durabilitySeed, 13))
	t.Logf("seed %d (-durability-seed)", *durabilitySeed)
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			// One complete run: its duration spreads the kills, and its
			// result must read too.
			start := time.Now()
			results := filepath.Join(tmp, c.name+"-whole")
			if out, err := runFor(bin, append(c.args, "--results", results), 2*time.Minute); err != nil {
				t.Fatalf("complete %s: %v\n%s", c.name, err, out)
			}
			whole := time.Since(start)
			checkResults(t, bin, results)
			// A kill mid-write cuts a line anywhere: the complete files cut
			// at seeded random bytes (the timing of a real kill rarely
			// lands inside a write).
			cutCopies(t, rng, results, filepath.Join(tmp, c.name+"-cut"))
			checkResults(t, bin, filepath.Join(tmp, c.name+"-cut"))
			for i := range kills {
				after := time.Duration(rng.Float64() * 1.1 * float64(whole))
				results := filepath.Join(tmp, c.name+"-killed-"+string(rune('a'+i)))
				killAfter(t, bin, append(c.args, "--results", results), after)
				t.Logf("%s killed after %v (a whole run took %v)", c.name, after.Round(time.Millisecond), whole.Round(time.Millisecond))
				checkResults(t, bin, results)
			}
		})
	}
}

// cutCopies copies every result file under from into run directories
// under to, each cut at a random byte.
func cutCopies(t *testing.T, rng *rand.Rand, from, to string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(from, "*", "result.jsonl"))
	more, _ := filepath.Glob(filepath.Join(from, "*", "*", "result.jsonl"))
	for i, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			dir := filepath.Join(to, fmt.Sprintf("cut-%d-%d", i, j))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			n := rng.IntN(len(b) + 1)
			if err := os.WriteFile(filepath.Join(dir, "result.jsonl"), b[:n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runFor runs the binary to its end, or kills it after limit.
func runFor(bin string, args []string, limit time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return exec.CommandContext(ctx, bin, args...).CombinedOutput()
}

// killAfter starts the binary and SIGKILLs it after d (or lets it end,
// when it ends first).
func killAfter(t *testing.T, bin string, args []string, d time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// checkResults reads every run directory under results (those holding a
// result file, and those the kill left without one) with report and
// scores.
func checkResults(t *testing.T, bin, results string) {
	t.Helper()
	var dirs []string
	_ = filepath.WalkDir(results, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // nothing there (killed before the directory existed)
		}
		if d.IsDir() && path != results && isRunDir(path) {
			dirs = append(dirs, path)
		}
		return nil
	})
	for _, dir := range dirs {
		file := filepath.Join(dir, "result.jsonl")
		b, err := os.ReadFile(file)
		headed := err == nil && bytes.Contains(b, []byte("\n")) // the header line is whole
		state := "no result file"
		if run, err := result.Read(dir); err == nil {
			state = fmt.Sprintf("%d intervals, %d points, summary %v, last line cut off %v", len(run.Intervals), len(run.Points), run.Summary != nil, run.Truncated)
		} else if _, serr := os.Stat(file); serr == nil {
			state = "refused: " + err.Error()
		}
		t.Logf("  %s: %s", filepath.Base(dir), state)
		for _, cmd := range [][]string{
			{"report", dir, "--out", filepath.Join(dir, "check.html")},
			{"scores", dir},
		} {
			out, err := runFor(bin, cmd, time.Minute)
			var exit *exec.ExitError
			switch {
			case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &exit) && exit.ProcessState.String() == "signal: killed"):
				t.Errorf("%s %s: did not end within a minute", cmd[0], dir)
			case strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine "):
				t.Errorf("%s %s crashed:\n%s", cmd[0], dir, out)
			case err == nil:
			case headed:
				t.Errorf("%s %s: %v on a file with its header:\n%s", cmd[0], dir, err, out)
			case !strings.Contains(string(out), "fieldbench: error:") || !strings.Contains(string(out), "incomplete"):
				t.Errorf("%s %s refused without saying the result is incomplete:\n%s", cmd[0], dir, out)
			}
		}
	}
}

// isRunDir says whether dir is a run's directory: it holds a result file,
// or the SQLite database a run creates beside it.
func isRunDir(dir string) bool {
	for _, name := range []string{"result.jsonl", "microblog.db", "ingest.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
