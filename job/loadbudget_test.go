package job_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
)

// cgroupWatch is an observer that reads, once the session exists (the
// measured work about to start), which control groups this process is in,
// and fails the run from Ended when told to.
type cgroupWatch struct {
	job.NopObserver
	during string
	fail   error
	// interrupt, when set, is called once the run started: Ctrl-C.
	interrupt func()
}

func (w *cgroupWatch) Started(context.Context, *job.Session) {
	b, _ := os.ReadFile("/proc/self/cgroup")
	w.during = string(b)
	if w.interrupt != nil {
		w.interrupt()
	}
}

func (w *cgroupWatch) Ended() error { return w.fail }

// TestLoadBudgetHoldsTheRun: with --load-budget, fieldbench's own process
// is in the load's control group during the measured run (its
// /proc/self/cgroup names it in the cpu and memory hierarchies), is back
// where it was after, and the group is gone, on success, when the run
// fails and when it is interrupted (Ctrl-C: the observer cancels the
// run's context); the header records the budget and the group's series
// are written. Needs root and cgroups; not parallel (it moves the test
// process itself).
func TestLoadBudgetHoldsTheRun(t *testing.T) {
	// Small: other processes' budgets on this machine are summed with it.
	b := budget.Budget{CPU: 0.1, Memory: 256 << 20}
	if err := budget.Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	group := budget.LoadGroup(os.Getpid())
	for _, c := range []struct {
		name      string
		fail      error
		interrupt bool
	}{{"run", nil, false}, {"failed run", errors.New("the observer failed"), false}, {"interrupted run", job.ErrInterrupted, true}} {
		t.Run(c.name, func(t *testing.T) {
			results := filepath.Join(t.TempDir(), "results")
			j, err := job.New("microblog")
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"users": "50", "clients": "2", "duration": "2s", "results": results, "load-budget": b.String()} {
				if err := j.Opts().Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := job.Check(j, "run"); err != nil {
				t.Fatal(err)
			}
			cmd, _ := job.Find(j, "run")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &cgroupWatch{}
			if c.interrupt {
				w.interrupt = cancel
			} else {
				w.fail = c.fail
			}
			var out, errb bytes.Buffer
			err = cmd.Run(ctx, &job.Env{Stdout: &out, Stderr: &errb, Version: "test", Observer: w})
			// An interrupt stays ErrInterrupted itself (measure's own
			// clean-up compares it), not an error that wraps it.
			if !errors.Is(err, c.fail) || (c.fail == nil && err != nil) || (c.interrupt && err != job.ErrInterrupted) {
				t.Fatalf("run: %v, want %v (%s)", err, c.fail, errb.String())
			}
			for _, l := range strings.Split(w.during, "\n") {
				if (strings.Contains(l, ":cpu,") || strings.Contains(l, ":cpu:") || strings.Contains(l, ":memory:")) && !strings.Contains(l, "/"+group) {
					t.Errorf("during the run, outside %s: %s", group, l)
				}
			}
			if w.during == "" {
				t.Error("the observer never saw the run start")
			}
			if now, _ := os.ReadFile("/proc/self/cgroup"); string(now) != string(before) {
				t.Errorf("after the run in\n%s\nwant back in\n%s", now, before)
			}
			for _, d := range budget.Here(group).Dirs {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("%s left after the run", d)
				}
			}
			dirs, _ := filepath.Glob(filepath.Join(results, "*"))
			if len(dirs) != 1 {
				t.Fatalf("run directories %v, want one", dirs)
			}
			run, err := result.Read(dirs[0])
			if err != nil {
				t.Fatal(err)
			}
			if run.Header.LoadBudget != b.String() {
				t.Errorf("header load_budget %q, want %s", run.Header.LoadBudget, b)
			}
			n := map[string]int{}
			for _, p := range run.Points {
				n[p.Series]++
				if p.Series == "load-budget-memory" && (p.Y <= 0 || p.Y > 100) {
					t.Errorf("load-budget-memory %v%%, want a share of the 256 MiB limit", p.Y)
				}
			}
			for _, series := range []string{"load-budget-cpu", "load-budget-throttled", "load-budget-memory"} {
				if _, ok := run.Header.Series[series]; !ok || (n[series] == 0 && !c.interrupt) {
					t.Errorf("series %v, %d %s points; want the load's series", run.Header.Series, n[series], series)
				}
			}
		})
	}
}

// TestLoadBudgetBadInput: a --load-budget that is malformed, asks a disk
// rate, or does not fit this machine with the reserve is bad input,
// refused by Check before anything starts, with the reason (and the sums).
func TestLoadBudgetBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		verb, workload, value, want string
		sums                        bool // the refusal prints the sums
	}{
		{"run", "microblog", "cpu=lots", "want a number of CPUs", false},
		{"run", "wiki", "disk=10MiB/s", "no data directory", false},
		{"load", "microblog", "net=1mbit", "limit fault on the load host", false},
		{"load", "microblog", "nett=1mbit", `unknown key "nett"`, false},
		{"sweep", "ingest", "memory=1KiB", "at least 16MiB", false},
		// Whatever else fieldbench holds here is summed too (another
		// process's cluster): only the load's part is certain.
		{"run", "microblog", "cpu=4096", "4096", true},
		{"run", "trajectory", "memory=100TiB", "100TiB", true},
	} {
		j, err := job.New(c.workload)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Opts().Set("load-budget", c.value); err != nil {
			t.Fatal(err)
		}
		err = job.Check(j, c.verb)
		if !job.IsUsage(err) || !strings.Contains(err.Error(), c.want) || (c.sums && !strings.Contains(err.Error(), "are kept for the system")) {
			t.Errorf("%s %s --load-budget %s: %v; want bad input saying %q", c.verb, c.workload, c.value, err, c.want)
		}
	}
}

// TestLoadBudgetHoldsAShardLoad: a load's shard (load --shard I/N, one
// process of several) runs in the load's control group too, and leaves
// none: the test's process, which runs the load, is seen in the group
// while it loads. Needs root and cgroups; not parallel (it moves the test
// process itself).
func TestLoadBudgetHoldsAShardLoad(t *testing.T) {
	// Small: other processes' budgets on this machine are summed with it.
	b := budget.Budget{CPU: 0.1, Memory: 256 << 20}
	if err := budget.Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	group := budget.LoadGroup(os.Getpid())
	j, err := job.New("microblog")
	if err != nil {
		t.Fatal(err)
	}
	db := "sqlite://" + filepath.Join(t.TempDir(), "shard.db")
	for k, v := range map[string]string{"users": "200", "db": db, "shard": "0/2", "load-budget": b.String()} {
		if err := j.Opts().Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := job.Check(j, "load"); err != nil {
		t.Fatal(err)
	}
	cmd, _ := job.Find(j, "load")
	// Watch /proc/self/cgroup while the shard loads: at 0.1 CPU, 100
	// users and their follows take far longer than a poll.
	done, seen := make(chan struct{}), make(chan bool, 1)
	go func() {
		in := false
		for {
			select {
			case <-done:
				seen <- in
				return
			default:
			}
			if now, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(now), "/"+group+"\n") {
				in = true
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	err = cmd.Run(context.Background(), &job.Env{Stdout: &out, Stderr: &errb, Version: "test"})
	close(done)
	if err != nil {
		t.Fatalf("load --shard 0/2: %v (%s)", err, errb.String())
	}
	if !<-seen {
		t.Errorf("the shard's load never ran in %s", group)
	}
	for _, d := range budget.Here(group).Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left after the load", d)
		}
	}
}
