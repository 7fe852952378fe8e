package job

// This file is the toy workload of docs/architecture.md ("Add a
// workload"), written the way that page tells a newcomer to write one, and
// the tests of the measured-run skeleton (measure) that every job's run
// goes through. If the page and this file disagree, one of them is wrong.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/adapter/null"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
)

// tallyJob is the toy workload: clients that count, on any database
// (they never call it). Its options are its fields, declared once.
type tallyJob struct {
	base
	db, results string
	clients     int
	duration    time.Duration
	seed        int64
	// For the tests: what setup, drive and verdict should do.
	refuse, interrupt, fail bool
}

func newTallyJob() *tallyJob {
	j := &tallyJob{base: newBase("tally")}
	o := j.opts
	o.String(&j.db, "db", "", "database DSN (default: SQLite in the run directory)", "run")
	o.String(&j.results, "results", "results", "directory for run directories", "run")
	o.Int(&j.clients, "clients", 2, "concurrent clients", "run")
	o.Duration(&j.duration, "duration", time.Second, "how long to run", "run")
	o.Int64(&j.seed, "seed", 1, "random seed", "run")
	return j
}

func (j *tallyJob) Commands() []Command {
	return []Command{{Verb: "run", Short: "Count for --duration", Run: j.run, Measured: true}}
}

// tallyClient is one client: its only operation, "count", adds one.
type tallyClient struct{ n *int64 }

func (c tallyClient) Next() int { return 0 }
func (c tallyClient) Do(context.Context, int) (int, error) {
	*c.n++
	return 0, nil
}

func (j *tallyJob) run(ctx context.Context, env *Env) error {
	return measure(ctx, env, measured{
		workload: "tally", dirName: "tally", results: j.results, db: j.db, seed: j.seed,
		ops: []string{"count"}, lo: 0, hi: j.clients, items: "clients",
		setup: func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error) {
			if j.refuse {
				return nil, Usagef("tally refuses %s", redact.DSN(dsn))
			}
			counts := make([]int64, j.clients)
			return &plan{
				header: func(h *result.Header) { j.opts.Record(h.Options, "clients", "duration", "seed") },
				extra:  map[string]float64{"clients": float64(j.clients)},
				banner: func(info adapter.Info) string { return "running tally on " + info.Name },
				drive: func(ctx context.Context, s *Session) (driven, error) {
					workers := make([]runner.Worker, j.clients)
					for i := range workers {
						workers[i] = tallyClient{&counts[i]}
					}
					out, err := s.drive(ctx, runner.Config{Workers: j.clients, Duration: j.duration}, workers)
					return driven{interrupted: out.Interrupted || j.interrupt}, err
				},
				after: func(ctx context.Context, s *Session) {
					var total int64
					for _, n := range counts {
						total += n
					}
					s.SetExtra("counted", float64(total))
				},
				verdict: func(*Session) error {
					if j.fail {
						return errors.New("tally: the count is wrong")
					}
					return nil
				},
			}, nil
		},
	})
}

// runTally runs the toy job on null:// with set applied, and returns its
// run directories, what it wrote to stderr and its error.
func runTally(t *testing.T, set func(j *tallyJob)) (dirs []string, stderr string, err error) {
	t.Helper()
	j := newTallyJob()
	j.db, j.results, j.duration = "null://", filepath.Join(t.TempDir(), "results"), 300*time.Millisecond
	set(j)
	var out, errb bytes.Buffer
	err = j.run(context.Background(), &Env{Stdout: &out, Stderr: &errb, Version: "test"})
	dirs, _ = filepath.Glob(filepath.Join(j.results, "*"))
	return dirs, errb.String(), err
}

func TestMeasureSkeleton(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  func(j *tallyJob)
		// wantErr: the error wanted, nil for none; usage: it is a usage error.
		wantErr      error
		usage        bool
		wantRun      bool // a result file was written
		interrupted  bool
		errorContent string
	}{
		{name: "measured", set: func(*tallyJob) {}, wantRun: true},
		{name: "refused before the start leaves no run directory", set: func(j *tallyJob) { j.refuse = true }, usage: true},
		{name: "interrupted keeps the result", set: func(j *tallyJob) { j.interrupt = true }, wantErr: ErrInterrupted, wantRun: true, interrupted: true},
		{name: "verdict after the result is saved", set: func(j *tallyJob) { j.fail = true }, wantRun: true, errorContent: "count is wrong"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dirs, stderr, err := runTally(t, c.set)
			switch {
			case c.usage && !IsUsage(err):
				t.Fatalf("want a usage error, got %v", err)
			case c.wantErr != nil && !errors.Is(err, c.wantErr):
				t.Fatalf("want %v, got %v", c.wantErr, err)
			case c.errorContent != "" && (err == nil || !strings.Contains(err.Error(), c.errorContent)):
				t.Fatalf("want an error saying %q, got %v", c.errorContent, err)
			case !c.usage && c.wantErr == nil && c.errorContent == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			}
			if !c.wantRun {
				if len(dirs) != 0 {
					t.Fatalf("a refused run left %v", dirs)
				}
				return
			}
			if len(dirs) != 1 {
				t.Fatalf("want one run directory, got %v", dirs)
			}
			run, rerr := result.Read(dirs[0])
			if rerr != nil {
				t.Fatal(rerr)
			}
			checkTallyRun(t, run, stderr, c.interrupted)
		})
	}
}

// checkTallyRun checks what the skeleton wrote for the toy job: the
// options from their declaration, the figures of before and after the
// load, the banner, and the interruption when there was one.
func checkTallyRun(t *testing.T, run *result.Run, stderr string, interrupted bool) {
	t.Helper()
	h, sum := run.Header, run.Summary
	if sum == nil {
		t.Fatal("no summary")
	}
	if h.Workload != "tally" || h.Options["duration"] != "300ms" || fmt.Sprint(h.Options["clients"]) != "2" || fmt.Sprint(h.Options["seed"]) != "1" {
		t.Errorf("header: workload %q options %v", h.Workload, h.Options)
	}
	if sum.Extra["clients"] != 2 {
		t.Errorf("extra known before the load: %v", sum.Extra)
	}
	if c := sum.Ops["count"].Count; c == 0 || sum.Extra["counted"] < float64(c) {
		t.Errorf("counted %v after the load, %d recorded", sum.Extra["counted"], c)
	}
	if !strings.Contains(stderr, "running tally on null") {
		t.Errorf("no banner in %q", stderr)
	}
	if sum.Interrupted != interrupted {
		t.Errorf("summary interrupted = %v, want %v", sum.Interrupted, interrupted)
	}
	var sawEvent bool
	for _, e := range run.Events {
		sawEvent = sawEvent || e.Name == "interrupted"
	}
	if sawEvent != interrupted {
		t.Errorf("interrupted event %v, want %v", sawEvent, interrupted)
	}
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Errorf("no report: %v", err)
	}
}

// TestWatchRuns: the directories WatchRuns notes are the runs that started
// (the one run the toy job measured), and the observer it wraps still sees
// the run.
func TestWatchRuns(t *testing.T) {
	t.Parallel()
	j := newTallyJob()
	j.db, j.results, j.duration = "null://", filepath.Join(t.TempDir(), "results"), 100*time.Millisecond
	inner := &countingObserver{}
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Version: "test", Observer: inner}
	dirs := WatchRuns(env)
	if err := j.run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	made, _ := filepath.Glob(filepath.Join(j.results, "*"))
	if len(made) != 1 || len(*dirs) != 1 || (*dirs)[0] != made[0] {
		t.Errorf("WatchRuns noted %v; the run made %v", *dirs, made)
	}
	if inner.started != 1 {
		t.Errorf("the wrapped observer saw %d starts, want 1", inner.started)
	}
}

type countingObserver struct {
	NopObserver
	started int
}

func (o *countingObserver) Started(context.Context, *Session) { o.started++ }

// TestOpenDBEmbedded: an adapter that opens a file or memory
// (adapter.Embedded: sqlite, null) is opened at once, with no
// "connecting to" line, which a server's DSN gets.
func TestOpenDBEmbedded(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"sqlite://" + filepath.Join(t.TempDir(), "x.db"), "null://"} {
		var progress bytes.Buffer
		a, db, err := OpenDB(WithProgress(context.Background(), &progress), dsn)
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		db.Close()
		if _, ok := a.(adapter.Embedded); !ok || progress.Len() > 0 {
			t.Errorf("%s: embedded %v, progress %q; want an embedded adapter opened silently", dsn, ok, progress.String())
		}
	}
}
