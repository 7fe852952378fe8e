package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/experiment"
	"github.com/fieldbench/fieldbench/job"
)

func newExperimentCmd() *cobra.Command {
	var results string
	var dryRun bool
	c := &cobra.Command{
		Use:   "experiment FILE.yaml",
		Short: "Run a scenario: start a cluster, drive a workload, fire a timeline of node joins, crashes and restarts, probe every node, audit",
		Long: `experiment runs the scenario in FILE.yaml (see scenarios/ for one per study):

  name, description, study     what it is
  cluster: {engine, nodes, options}
                               the cluster to start (torn down at the end;
                               data and server logs stay in the run directory)
  dsn                          or an existing database instead
  workload: {name, options}    microblog, wiki, ingest, trajectory or none;
                               options are the flags of 'fieldbench run NAME'
  timeline: [...]              actions: do add|remove|kill|stop-node|restart|stop|mark
                               (stop-node: SIGTERM one node; stop: end the load),
                               fired at a time after the load starts (at: 100s)
                               or when a condition holds (when: start|baseline|
                               joined|settled|stable, optionally after: 10s and
                               sets: N request sets later); nodes: [names] or
                               count: N
  steps: [{nodes, options}]    a scalability experiment: the workload once per
                               step on a growing cluster (wiki)
  stability: {warmup_sets, baseline_sets, window, max_sets, after_stable}
                               how the wiki join experiment finds the baseline
                               and the moment the cluster is stable again
  probe_every: 5s              per-node CPU, memory, I/O and disk probes
  audit: true                  read back every acknowledged post (microblog)
  convergence: {rounds, poll, timeout, options}
                               time for a write to become visible on every node

Every action is an event in the result file, drawn on every time chart of
the report. Join experiments end with the elasticity score, scalability
experiments with one score per step; 'fieldbench scores' recomputes them from
the result files alone. Results go to results/<time>-experiment-<name>/.`,
		Example: `  fieldbench experiment scenarios/microblog-crash.yaml
  fieldbench experiment scenarios/wiki-elasticity.yaml --results out/
  fieldbench experiment scenarios/wiki-elasticity.yaml --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := experiment.Load(args[0])
			if err != nil {
				return job.Usage(err)
			}
			if dryRun {
				return printPlan(cmd.OutOrStdout(), sc)
			}
			return runExperiment(cmd.Context(), sc, results, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&results, "results", "results", "directory under which the experiment's directory is created")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check the scenario and print what it would do, without starting anything")
	return c
}

// printPlan says what a scenario will do.
func printPlan(w io.Writer, sc *experiment.Scenario) error {
	fmt.Fprintf(w, "scenario %s", sc.Name)
	if sc.Study != "" {
		fmt.Fprintf(w, " (%s)", sc.Study)
	}
	fmt.Fprintln(w)
	switch {
	case sc.Cluster != nil:
		fmt.Fprintf(w, "  cluster: %s, %d node(s)", sc.Cluster.Engine, sc.Cluster.Nodes)
		for _, k := range sortedOptKeys(sc.Cluster.Options) {
			fmt.Fprintf(w, " %s=%s", k, sc.Cluster.Options[k])
		}
		fmt.Fprintln(w)
	case sc.DSN != "":
		fmt.Fprintf(w, "  database: %s\n", adapter.Redact(sc.DSN))
	default:
		fmt.Fprintln(w, "  database: embedded SQLite in the run directory")
	}
	if sc.Workload.Name != "none" {
		fmt.Fprintf(w, "  workload: fieldbench %s %s %s\n", sc.Workload.Command, sc.Workload.Name, strings.Join(experiment.Args(sc.Workload.Options), " "))
	}
	for i, s := range sc.Steps {
		fmt.Fprintf(w, "  step %d: %d node(s) %s\n", i+1, s.Nodes, strings.Join(experiment.Args(s.Options), " "))
	}
	for _, a := range sc.Timeline {
		fmt.Fprintf(w, "  timeline: %s\n", experiment.Describe(a))
	}
	if sc.Audit {
		fmt.Fprintln(w, "  afterwards: durability audit of every acknowledged post")
	}
	if c := sc.Convergence; c != nil {
		fmt.Fprintf(w, "  afterwards: convergence, %d rounds (poll %s, timeout %s)\n", c.Rounds, c.Poll.D(), c.Timeout.D())
	}
	if sc.ProbeEvery > 0 {
		fmt.Fprintf(w, "  probes: every node every %s\n", sc.ProbeEvery.D())
	}
	return nil
}

// expRun is one experiment in progress: its directory, its cluster and the
// hooks the workload commands call (see hooksFrom).
type expRun struct {
	sc     *experiment.Scenario
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
}

func runExperiment(ctx context.Context, sc *experiment.Scenario, results string, stdout, stderr io.Writer) (err error) {
	dir, err := newRunDir(results, "experiment", sc.Name, time.Now())
	if err != nil {
		return err
	}
	x := &expRun{sc: sc, dir: dir, stdout: stdout, stderr: stderr}
	fmt.Fprintf(stderr, "experiment %s in %s\n", sc.Name, dir)
	dsn := sc.DSN
	if c := sc.Cluster; c != nil {
		t0 := time.Now()
		cl, err := clusterUp(ctx, c.Engine, c.Nodes, filepath.Join(dir, "cluster"), c.Options, stderr)
		if err != nil {
			return err
		}
		formed := time.Since(t0)
		x.cl = cl
		x.eng, _ = cluster.Get(cl.Engine)
		x.up.Store(int64(running(cl)))
		defer func() {
			dctx, cancel := detached(ctx, 3*time.Minute)
			defer cancel()
			if derr := x.eng.Down(dctx, cl); derr != nil {
				err = errors.Join(err, fmt.Errorf("stop the cluster in %s: %w", cl.Dir, derr))
			}
			_ = os.Remove(filepath.Join(cl.Dir, cluster.StateFile))
		}()
		activeCluster = cl
		defer func() { activeCluster = nil }()
		dsn = cl.DSN
		fmt.Fprintf(stderr, "cluster formed in %.1fs\n", formed.Seconds())
		x.formation = formed
	}
	if len(sc.Steps) > 0 {
		err = x.runSteps(ctx, dsn)
	} else if sc.Workload.Name != "none" {
		err = x.runWorkload(ctx, dsn, sc.Workload.Options)
	}
	if err == nil && sc.Convergence != nil {
		err = x.runConvergence(ctx)
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, errInterrupted) {
		// Ctrl-C in the middle of an action (a node joining): say what was
		// cut short, and exit as interrupted; what was measured is saved.
		fmt.Fprintf(stderr, "fieldbench: %s\n", firstLine(err.Error()))
		err = errInterrupted
	}
	if err != nil {
		return err
	}
	return x.conclude()
}

// runWorkload runs `fieldbench run NAME` in this process with the
// experiment's hooks in its context.
func (x *expRun) runWorkload(ctx context.Context, dsn string, opts map[string]any) error {
	args := []string{x.sc.Workload.Command, x.sc.Workload.Name, "--results", x.dir}
	if dsn != "" {
		args = append(args, "--db", dsn)
	}
	if x.joins() && x.sc.Workload.Name == "wiki" {
		// The join experiment ends on stability, not on a set count.
		opts = experiment.Merge(opts, map[string]any{"sets": x.sc.Stability.MaxSets})
	}
	args = append(args, experiment.Args(opts)...)
	fmt.Fprintf(x.stderr, "fieldbench %s\n", strings.Join(redactArgs(args), " "))
	return x.execute(withHooks(ctx, x), args)
}

// execute runs one fieldbench command line in this process.
func (x *expRun) execute(ctx context.Context, args []string) error {
	root := newRoot(x.stdout, x.stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// joins reports whether the timeline adds nodes.
func (x *expRun) joins() bool {
	for _, a := range x.sc.Timeline {
		if a.Do == "add" {
			return true
		}
	}
	return false
}

func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if i > 0 && args[i-1] == "--db" {
			out[i] = adapter.Redact(a)
		}
	}
	return out
}

func sortedOptKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
