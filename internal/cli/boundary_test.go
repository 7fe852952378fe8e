package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fieldbench/fieldbench/result"
)

// boundaryValues are what a numeric option is driven through: zero,
// negative, not-a-number, infinities and huge, as a user may type them.
var boundaryValues = map[string][]string{
	"int":      {"0", "-1", "1e300"},
	"int64":    {"0", "-1", "1e300"},
	"float64":  {"0", "-1", "NaN", "Inf", "-Inf", "1e300"},
	"duration": {"0s", "-1s", "1e300h"},
}

// small are options that keep a command's work small (and its files in
// the test's directory), so that a value it accepts costs little; each is
// given only to the commands that have it, and never with the option under
// test.
func small(dir string) [][2]string {
	return [][2]string{
		{"results", filepath.Join(dir, "results")}, {"out", filepath.Join(dir, "out")},
		{"users", "20"}, {"clients", "2"}, {"duration", "1s"},
		{"articles", "20"}, {"requests", "10"}, {"sets", "1"}, {"repeat", "1"},
		{"records", "10"}, {"sources", "1"}, {"batch", "5"}, {"from", "10"}, {"to", "10"}, {"step", "10"}, {"runs", "1"}, {"warmup-runs", "0"},
		{"scale", "0.0005"}, {"queries", "1"},
		{"slo", "p99<1m"}, {"step-duration", "1s"}, {"step-warmup", "0s"}, {"max-steps", "2"},
		{"from-rate", "10"}, {"max-rate", "10"}, {"min-achieved", "0.01"},
	}
}

// positional are the arguments a command needs to get as far as its
// options.
func positional(path, dir, resultDir string) []string {
	switch {
	case strings.HasPrefix(path, "op "):
		return []string{"--db", "sqlite://" + filepath.Join(dir, "op.db")}
	case path == "report", path == "scores", path == "merge":
		return []string{resultDir}
	case path == "compare":
		return []string{resultDir, resultDir}
	case path == "cluster up":
		return []string{"redis", "--dir", filepath.Join(dir, "cluster")}
	case path == "kube job":
		return []string{"microblog"}
	}
	return nil
}

// Every numeric option of every command, at every boundary value, either
// is refused with exit 2 and a message before anything is written, or is
// accepted: never a panic, never exit 1 for bad input (issue 31: a
// materializer interval of 0 panicked, --confirm-over NaN lost a result).
// The context is cancelled: an accepted value starts nothing that lasts
// (exit 0 or 130), and a refused one must be refused before anything
// starts, context or not.
func TestEveryNumericOptionAtItsBoundaries(t *testing.T) {
	t.Parallel()
	resultDir := fixtureRun(t)
	var profile *os.File
	root := newRoot(io.Discard, io.Discard, &profile)
	type option struct {
		cmd             *cobra.Command
		path, flag, typ string
	}
	var opts []option
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() {
			path := strings.TrimPrefix(c.CommandPath(), "fieldbench ")
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if _, ok := boundaryValues[f.Value.Type()]; ok {
					opts = append(opts, option{c, path, f.Name, f.Value.Type()})
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(opts) < 40 {
		t.Fatalf("only %d numeric options found: the walk is wrong", len(opts))
	}
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
		// The commands run in-process, a few at a time: most of each is
		// waiting (a 1 s run, a deadline), and one after another they
		// took 100 s alone and 780 s on a loaded CI machine.
		slots = make(chan struct{}, 4)
	)
	defer func() { t.Logf("%d options; exit codes: %v", len(opts), codes) }()
	for _, o := range opts {
		for _, v := range boundaryValues[o.typ] {
			dir := t.TempDir()
			args := append(strings.Fields(o.path), positional(o.path, dir, resultDir)...)
			for _, kv := range small(dir) {
				if kv[0] != o.flag && o.cmd.Flags().Lookup(kv[0]) != nil {
					args = append(args, "--"+kv[0]+"="+kv[1])
				}
			}
			args = append(args, "--"+o.flag+"="+v)
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				// An accepted value runs (briefly: the base options are
				// small) until the deadline cuts it (exit 130).
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				code, stderr, panicked := executeSafely(ctx, args)
				cancel()
				mu.Lock()
				codes[code]++
				mu.Unlock()
				switch {
				case panicked != "":
					t.Errorf("%v: panic: %s", args, panicked)
				case code == ExitUsage:
					if strings.Contains(stderr, "unknown flag") {
						t.Errorf("%v: the test gives a flag the command lacks: %s", args, stderr)
						return
					}
					if !strings.Contains(stderr, "error:") {
						t.Errorf("%v: exit 2 without a message: %q", args, stderr)
					}
					if files := written(t, dir); len(files) > 0 {
						t.Errorf("%v: refused (exit 2) after writing %v", args, files)
					}
				case code == ExitOK, code == ExitInterrupted:
				default:
					t.Errorf("%v: exit %d: %s", args, code, firstLines(stderr))
				}
			}()
		}
	}
	wg.Wait()
}

// executeSafely runs the command tree and turns a panic into a report.
func executeSafely(ctx context.Context, args []string) (code int, stderr, panicked string) {
	var out, errb bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	code = Execute(ctx, args, &out, &errb)
	return code, errb.String(), ""
}

// written lists the files under dir (the directories a refused command
// must not have made count too).
func written(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 4)
	if len(lines) > 3 {
		lines = lines[:3]
	}
	return strings.Join(lines, " | ")
}

// fixtureRun writes a tiny finished run to read (report, compare, merge).
func fixtureRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := result.Create(dir, result.Header{Workload: "microblog", Adapter: "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(result.Summary{Ops: map[string]result.OpSummary{"post": {Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
