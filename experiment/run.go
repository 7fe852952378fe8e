package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/redact"
)

// WritePlan says what the scenario will do (experiment --dry-run).
func (sc *Scenario) WritePlan(w io.Writer) error {
	fmt.Fprintf(w, "scenario %s", sc.Name)
	if sc.Study != "" {
		fmt.Fprintf(w, " (%s)", sc.Study)
	}
	fmt.Fprintln(w)
	switch {
	case sc.Cluster.External():
		c := sc.Cluster
		fmt.Fprintf(w, "  cluster: external %s, %d member(s), started by its owner (fieldbench starts and stops nothing)\n", c.Database, c.Nodes)
		for _, m := range c.Members {
			spare := ""
			if m.Spare {
				spare = " (spare: joins on add)"
			}
			fmt.Fprintf(w, "    member %s at %s%s\n", m.Name, net.JoinHostPort(m.Host, strconv.Itoa(m.Port)), spare)
		}
		if c.DSN != "" {
			fmt.Fprintf(w, "    dsn: %s\n", redact.DSN(c.DSN))
		}
		for _, a := range cluster.ExternalActions {
			if t, ok := c.Commands[a]; ok {
				fmt.Fprintf(w, "    %s: %s\n", a, redact.Command(t, redact.PasswordOf(c.DSN)))
			}
		}
	case sc.Cluster != nil:
		fmt.Fprintf(w, "  cluster: %s, %d node(s)", sc.Cluster.Engine, sc.Cluster.Nodes)
		for _, k := range sortedOptKeys(sc.Cluster.Options) {
			fmt.Fprintf(w, " %s=%s", k, sc.Cluster.Options[k])
		}
		fmt.Fprintln(w)
		if o, err := sc.Cluster.UpOptions(); err == nil && !o.Budget.Empty() {
			fmt.Fprintf(w, "    budget: %s (docs/scale-model.md)\n", o.Budget)
		}
		if sc.Cluster.Network == cluster.NetworkHosts {
			fmt.Fprintf(w, "    network: hosts, each node a network namespace of its own (198.18.0.0/15); the load from load host %s (%s)\n", loadHostName, vnet.LoadAddr(1))
		}
	case sc.DSN != "":
		fmt.Fprintf(w, "  database: %s\n", redact.DSN(sc.DSN))
	default:
		fmt.Fprintln(w, "  database: embedded SQLite in the run directory")
	}
	if sc.Workload.Name != "none" {
		fmt.Fprintf(w, "  workload: fieldbench %s %s %s\n", sc.Workload.Command, sc.Workload.Name, strings.Join(CommandLine(sc.Workload.Options), " "))
	}
	for i, s := range sc.Steps {
		fmt.Fprintf(w, "  step %d: %d node(s) %s\n", i+1, s.Nodes, strings.Join(CommandLine(s.Options), " "))
	}
	for _, a := range sc.Timeline {
		fmt.Fprintf(w, "  timeline: %s\n", Describe(a))
	}
	if sc.Audit {
		fmt.Fprintln(w, "  afterwards: durability audit of every acknowledged post")
	}
	if c := sc.Convergence; c != nil {
		fmt.Fprintf(w, "  afterwards: convergence, %d rounds (poll %s, timeout %s)\n", c.Rounds, c.Poll.D(), c.Timeout.D())
	}
	switch {
	case sc.ProbeEvery > 0 && sc.Cluster.External():
		fmt.Fprintf(w, "  probes: every %s, what the database reports about each node (its /proc is not readable from here; the result names the probes not available)\n", sc.ProbeEvery.D())
	case sc.ProbeEvery > 0:
		fmt.Fprintf(w, "  probes: every node every %s\n", sc.ProbeEvery.D())
	}
	return nil
}

// runDirName is the word an experiment's directory is named with:
// <time>-experiment-<scenario name>.
const runDirName = "experiment"

// Config is how the caller (the CLI) runs a scenario.
// ClusterStarter starts a scenario's cluster in dir: engine and options
// (node count, network, engine options, budgets), saying its progress on
// progress. The CLI gives `cluster up`'s; one type, so every caller (an
// experiment, a study's steps) passes the same function.
type ClusterStarter func(ctx context.Context, engine string, opts cluster.Options, dir string, progress io.Writer) (*cluster.Cluster, error)

type Config struct {
	// Results is the directory under which the experiment's directory is
	// created.
	Results        string
	Stdout, Stderr io.Writer
	// Version is fieldbench's version, written into result files.
	Version string
	// StartCluster starts the scenario's cluster in dir (the CLI's `cluster
	// up`, so both start clusters the same way).
	// network is the scenario's cluster.network ("" for loopback).
	StartCluster ClusterStarter
}

// expRun is one experiment in progress: its directory, its cluster, and
// the observer side of the runs it drives (observer.go).
type expRun struct {
	cfg    Config
	sc     *Scenario
	dir    string
	stdout io.Writer
	stderr io.Writer
	cl     *cluster.Cluster
	eng    cluster.Engine
	// step is the scalability step running (1-based; 0 outside steps).
	step int
	// runDirs are the run directories the workload commands created.
	runDirs []string
	// formation is how long the cluster took to form.
	formation time.Duration

	mu sync.Mutex   // guards cl's nodes while the timeline changes them
	up atomic.Int64 // running nodes when last counted (see nodesUp)

	// loadHost is the host the load runs from on a cluster on hosts
	// (nil on loopback): every connection of the workload's drivers is
	// opened inside its namespace (loadhost.go).
	loadHost *vnet.Host
	// delays is the delay fallback where the kernel has no netem (set by
	// onLoadHost when the timeline delays); nil where netem does it.
	delays *linkDelays
	// faults is what the fault actions did and not yet undid (x.mu).
	faults faultState
}

// Run runs the scenario: it starts the cluster, drives the workload with
// the timeline, probes, audit and convergence, tears the cluster down and
// writes the experiment's report. An interrupt returns job.ErrInterrupted
// once what was measured is saved, the report of it included (beside
// InterruptedFile).
func Run(ctx context.Context, sc *Scenario, cfg Config) (err error) {
	stdout, stderr := cfg.Stdout, cfg.Stderr
	if err := sc.NeedBudgets(); err != nil {
		return job.Usage(err) // before the run's directory exists
	}
	dir, err := job.NewRunDir(cfg.Results, runDirName, sc.Name, time.Now())
	if err != nil {
		return err
	}
	x := &expRun{cfg: cfg, sc: sc, dir: dir, stdout: stdout, stderr: stderr, faults: newFaultState()}
	fmt.Fprintf(stderr, "experiment %s in %s\n", sc.Name, dir)
	dsn := sc.DSN
	if c := sc.Cluster; c.External() {
		ext, cl, err := cluster.OpenExternal(ctx, c.ExternalSpec(), filepath.Join(dir, "cluster"))
		if err != nil {
			return err
		}
		x.cl, x.eng = cl, ext
		x.up.Store(int64(running(cl)))
		defer func() {
			// Nothing to stop: the nodes stay as the timeline left them.
			err = errors.Join(err, ext.Down(ctx, cl))
			_ = os.Remove(filepath.Join(cl.Dir, cluster.StateFile))
		}()
		dsn = cl.DSN
		fmt.Fprintf(stderr, "external cluster: %s %s (as the database reports it), %d member(s); node actions run the scenario's commands, logged in %s\n",
			cl.Database, cl.Version, len(cl.Nodes), filepath.Join(cl.Dir, cluster.CommandLog))
	} else if c != nil {
		t0 := time.Now()
		opts, err := c.UpOptions()
		if err != nil {
			return err // checked before: Check refused it
		}
		cl, err := cfg.StartCluster(ctx, c.Engine, opts, filepath.Join(dir, "cluster"), stderr)
		if err != nil {
			return err // a failed start cleans up after itself, network too
		}
		formed := time.Since(t0)
		x.cl = cl
		x.eng, _ = cluster.Get(cl.Engine)
		x.up.Store(int64(running(cl)))
		defer func() {
			dctx, cancel := job.Detached(ctx, 3*time.Minute)
			defer cancel()
			if did, uerr := x.undoFaults(dctx); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo the faults left (%s): %w", did, uerr))
			}
			if derr := cluster.Teardown(dctx, cl); derr != nil {
				err = errors.Join(err, fmt.Errorf("stop the cluster in %s: %w", cl.Dir, derr))
			}
		}()
		dsn = cl.DSN
		fmt.Fprintf(stderr, "cluster formed in %.1fs\n", formed.Seconds())
		x.formation = formed
		if cl.OnHosts() {
			leave, err := x.onLoadHost(ctx)
			if err != nil {
				return err
			}
			defer leave()
		}
	}
	if len(sc.Steps) > 0 {
		err = x.runSteps(ctx, dsn)
	} else if sc.Workload.Name != "none" {
		err = x.runWorkload(ctx, dsn, sc.Workload.Options)
	}
	if err == nil && sc.Convergence != nil {
		err = x.runConvergence(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted: the report of what was measured, as a killed
			// run's own report.html is written (issue 40: none was).
			if rerr := x.concludeInterrupted(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return err
	}
	return x.conclude()
}

// runWorkload runs the scenario's workload command with opts on dsn, the
// experiment observing it.
func (x *expRun) runWorkload(ctx context.Context, dsn string, opts map[string]any) error {
	return x.runJob(ctx, x.sc.Workload.Command, dsn, x.sc.runOptions(opts))
}

// runOptions are the options the workload runs with: opts, and in a join
// experiment the request sets bounded by stability.max_sets (it ends on
// stability, not on a set count). The checks apply the same (checkJob).
func (sc *Scenario) runOptions(opts map[string]any) map[string]any {
	if opt := sc.traits().SetsOption; sc.joins() && opt != "" {
		return Merge(opts, map[string]any{opt: sc.Stability.MaxSets})
	}
	return opts
}

// runJob runs one command of the scenario's workload job.
func (x *expRun) runJob(ctx context.Context, verb, dsn string, opts map[string]any) error {
	j, c, err := prepareJob(x.sc.Workload.Name, verb, opts)
	if err != nil {
		return err
	}
	o := j.Opts()
	if err := o.Set("results", x.dir); err != nil {
		return err
	}
	if dsn != "" {
		if err := o.Set("db", dsn); err != nil {
			return err
		}
	}
	fmt.Fprintf(x.stderr, "fieldbench %s %s %s\n", verb, x.sc.Workload.Name, strings.Join(CommandLine(opts), " "))
	env := &job.Env{Stdout: x.stdout, Stderr: x.stderr, Version: x.cfg.Version, Cluster: job.ClusterInfo(x.cl), Observer: &observer{x: x}}
	return c.Run(ctx, env)
}

// prepareJob makes the job of a workload command with opts applied.
func prepareJob(workload, verb string, opts map[string]any) (job.Job, job.Command, error) {
	j, err := job.New(workload)
	if err != nil {
		return nil, job.Command{}, job.Usage(err)
	}
	c, ok := job.Find(j, verb)
	if !ok {
		return nil, job.Command{}, job.Usagef("workload %s has no %s command", workload, verb)
	}
	if err := j.Opts().Apply(verb, opts, func(k string) string { return "workload.options." + k }); err != nil {
		return nil, job.Command{}, job.Usage(err)
	}
	return j, c, nil
}

// joins reports whether the timeline adds nodes.
func (sc *Scenario) joins() bool {
	for _, a := range sc.Timeline {
		if a.Do == "add" {
			return true
		}
	}
	return false
}

func sortedOptKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
