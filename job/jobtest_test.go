package job_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"

	_ "github.com/fieldbench/fieldbench/db/all"
)

// runJob runs command verb ("run", "load", "op read") of workload's job with
// opts set by name, as the CLI does without its flags: a fresh job, its
// options set as written on the command line, the run options checked
// first for run, then the command with progress on stderr. It returns what
// the command printed and its error.
func runJob(t *testing.T, workload, verb string, opts map[string]string) (stdout, stderr string, err error) {
	t.Helper()
	return runJobCtx(context.Background(), t, workload, verb, opts)
}

// runJobCtx is runJob with a context.
func runJobCtx(ctx context.Context, t *testing.T, workload, verb string, opts map[string]string) (stdout, stderr string, err error) {
	t.Helper()
	j, err := job.New(workload)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range opts {
		if err := j.Opts().Set(k, v); err != nil {
			t.Fatalf("%s %s --%s %s: %v", verb, workload, k, v, err)
		}
	}
	c := findCommand(t, j, verb)
	var out, errb bytes.Buffer
	if verb == "run" {
		err = job.CheckRun(j)
	}
	if err == nil {
		err = c.Run(job.WithProgress(ctx, &errb), &job.Env{Stdout: &out, Stderr: &errb, Version: "test"})
	}
	return out.String(), errb.String(), err
}

// findCommand finds verb in j's commands, an operation ("op read") among
// op's.
func findCommand(t *testing.T, j job.Job, verb string) job.Command {
	t.Helper()
	top, _, _ := strings.Cut(verb, " ")
	c, ok := job.Find(j, top)
	if ok && top != verb {
		ok = false
		for _, sub := range c.Subs {
			if sub.Verb == verb {
				c, ok = sub, true
			}
		}
	}
	if !ok || c.Run == nil {
		t.Fatalf("%s has no command %q", j.Workload().Name, verb)
	}
	return c
}

// isUsage reports whether err is bad input: what the CLI exits 2 for (a
// usage error or a malformed DSN).
func isUsage(err error) bool {
	return job.IsUsage(err) || errors.Is(err, adapter.ErrBadDSN)
}

// with returns base's options overridden by kv (name, value pairs), as a
// command line that repeats an option keeps its last value.
func with(base map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(base)+len(kv)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// onlyRun reads the one run directory in results.
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

// badInput is a table of commands a job refuses as bad input, each with
// what its error must say.
type badInput struct {
	name string
	verb string
	opts map[string]string
	want string
}

// checkBadInput runs every case of a bad-input table against workload and
// checks it is refused as a usage error saying what it wants.
func checkBadInput(t *testing.T, workload string, cases []badInput) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runJob(t, workload, tc.verb, tc.opts)
			if !isUsage(err) {
				t.Fatalf("error %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// op on a database file that does not exist says so and creates nothing.
func TestOpOnMissingFileCreatesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.db")
	for _, tc := range []struct {
		workload, verb string
		opts           map[string]string
	}{
		{"microblog", "op timeline", map[string]string{"user": "1"}},
		{"wiki", "op read", map[string]string{"id": "1"}},
		{"ingest", "op count", nil},
		{"trajectory", "op region", map[string]string{"weekday": "1", "slot": "1"}},
	} {
		_, _, err := runJob(t, tc.workload, tc.verb, with(tc.opts, "db", "sqlite://"+path))
		if !isUsage(err) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s %s: %v", tc.verb, tc.workload, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s %s created %s", tc.verb, tc.workload, path)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
