package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

// runSteps runs the workload once per step: grow the cluster to the step's
// node count (waiting until data stops moving), and for wiki (the
// scalability experiment) reload the articles the step asks for first.
func (x *expRun) runSteps(ctx context.Context, dsn string) error {
	for i, st := range x.sc.Steps {
		x.step = i + 1
		if err := x.growTo(ctx, st.Nodes); err != nil {
			return fmt.Errorf("step %d: %w", x.step, err)
		}
		// The grown cluster's DSN names its new nodes too: a client that
		// knows only the first (CouchDB's adapter without peers=) would
		// empty one node where the step's reset must empty them all.
		if x.cl != nil && x.cl.DSN != "" {
			dsn = x.cl.DSN
		}
		opts := Merge(x.sc.Workload.Options, st.Options)
		fmt.Fprintf(x.stderr, "\nstep %d of %d: %d node(s)\n", x.step, len(x.sc.Steps), st.Nodes)
		if keep := x.sc.traits().StepLoad; keep != nil {
			// Each step has its own dataset (the study doubled it).
			load := map[string]any{"reset": true}
			for _, k := range keep {
				if v, ok := opts[k]; ok {
					load[k] = v
				}
			}
			if err := x.runJob(ctx, "load", dsn, load); err != nil {
				return fmt.Errorf("step %d: load: %w", x.step, err)
			}
		}
		if err := x.runWorkload(ctx, dsn, opts); err != nil {
			return fmt.Errorf("step %d: %w", x.step, err)
		}
	}
	return nil
}

// growTo adds nodes until n run, then waits until data stops moving.
func (x *expRun) growTo(ctx context.Context, n int) error {
	g, ok := x.eng.(cluster.Grower)
	for running(x.cl) < n {
		if !ok {
			return fmt.Errorf("%s cannot add nodes: %w", x.cl.Engine, cluster.ErrUnsupported)
		}
		t0 := time.Now()
		nd, err := g.Add(ctx, x.cl)
		if err == nil {
			err = x.cl.Save()
		}
		if err != nil {
			return fmt.Errorf("add a node: %w", err)
		}
		fmt.Fprintf(x.stderr, "added %s in %.1fs\n", nd.Name, time.Since(t0).Seconds())
	}
	return x.waitSettled(ctx, 15*time.Minute)
}

// waitSettled waits until the engine reports no data moving (engines that
// cannot tell are taken as settled).
func (x *expRun) waitSettled(ctx context.Context, limit time.Duration) error {
	m, ok := x.eng.(cluster.Mover)
	if !ok {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return quiesce(wctx, time.Second, func(ctx context.Context) (bool, string, error) {
		return m.Moving(ctx, x.cl)
	}, nil)
}

// quiesce asks moving every poll until it answers that no data moves,
// calling onMoving (when not nil) with what does. It returns nil then, or,
// once ctx ends first, an error saying what was still moving (or why the
// database could not be asked). An error from moving is not an answer: a
// node restarting may refuse a status for a moment.
func quiesce(ctx context.Context, poll time.Duration, moving func(context.Context) (bool, string, error), onMoving func(what string)) error {
	t0 := time.Now()
	last := "no answer yet"
	for {
		m, what, err := moving(ctx)
		switch {
		case err == nil && !m:
			return nil
		case err != nil:
			if ctx.Err() == nil {
				last = "could not ask: " + err.Error()
			}
		default:
			last = what
			if onMoving != nil {
				onMoving(what)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("data still moving after %s (%s)", time.Since(t0).Round(time.Second), last)
		case <-time.After(poll):
		}
	}
}

// running counts the nodes of c that run now.
func running(c *cluster.Cluster) int {
	n := 0
	for _, nd := range c.Nodes {
		if nd.Running() {
			n++
		}
	}
	return n
}

// convergenceOptions reads the scenario's convergence options.
func convergenceOptions(m map[string]string) (convergence.Options, error) {
	var o convergence.Options
	for k, v := range m {
		switch k {
		case "cassandra_write":
			o.CassandraWrite = v
		case "cassandra_read":
			o.CassandraRead = v
		case "cassandra_rf":
			n, err := strconv.Atoi(v)
			if err != nil {
				return o, fmt.Errorf("convergence option cassandra_rf=%q is not a number", v)
			}
			o.CassandraRF = n
		case "redis_master":
			o.RedisMaster = v
		case "mariadb_sync_wait":
			n, err := strconv.Atoi(v)
			if err != nil {
				return o, fmt.Errorf("convergence option mariadb_sync_wait=%q is not a number", v)
			}
			o.MariaDBSyncWait = &n
		default:
			return o, fmt.Errorf("unknown convergence option %q (known: cassandra_write, cassandra_read, cassandra_rf, redis_master, mariadb_sync_wait)", k)
		}
	}
	return o, nil
}

// seriesConvergence is the per-node time-to-visible chart.
const seriesConvergence = "convergence"

// runConvergence measures how long a write takes to become visible on
// every node and writes it as its own run (result file and report).
func (x *expRun) runConvergence(ctx context.Context) error {
	cv := x.sc.Convergence
	opts, err := convergenceOptions(cv.Options)
	if err != nil {
		return job.Usage(err)
	}
	// Replicas of a cluster that just started may not be linked yet: wait
	// until it settles, and give the prober a few tries.
	if err := x.waitSettled(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("convergence: %w", err)
	}
	var p convergence.Prober
	for try := 0; ; try++ {
		p, err = convergence.Open(ctx, x.cl, opts)
		if err == nil || try == 10 || ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		return fmt.Errorf("convergence: %w", err)
	}
	defer p.Close()
	dir, err := job.NewRunDir(x.dir, "convergence", x.cl.DB(), time.Now())
	if err != nil {
		return err
	}
	h := result.Header{
		Version: x.cfg.Version, Workload: "convergence", Adapter: x.cl.DB(), DSN: redact.DSN(x.cl.DSN),
		Database: adapter.Info{Name: x.cl.DB(), Version: x.cl.Version}, Machine: probe.Machine(),
		Cluster: job.ClusterInfo(x.cl), Options: map[string]any{"rounds": cv.Rounds, "poll": cv.Poll.D().String(), "timeout": cv.Timeout.D().String(), "experiment": x.sc.Name},
		Series: map[string]result.SeriesMeta{seriesConvergence: {Title: "Time until a write is visible on each node (mean ± SD)", XLabel: "node", YLabel: "time to visible (ms)", Band: "sd"}},
	}
	for k, v := range p.Settings() {
		h.Options[k] = v
	}
	s, err := job.StartSession(dir, h, x.stdout, x.stderr)
	if err != nil {
		return err
	}
	x.runDirs = append(x.runDirs, dir)
	fmt.Fprintf(x.stderr, "convergence: %d rounds on %s (%s)\n", cv.Rounds, x.cl.DB(), strings.Join(p.Nodes(), ", "))
	res, merr := convergence.Measure(ctx, p, cv.Rounds, cv.Poll.D(), cv.Timeout.D())
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for _, nr := range res.PerNode {
		_ = s.Point(result.Point{Series: seriesConvergence, Y: ms(nr.FromAck.Mean), SD: ms(nr.FromAck.SD), N: nr.FromAck.Count,
			Labels: map[string]string{"category": nr.Node}})
		s.SetExtra("convergence_"+nr.Node+"_mean_ms", ms(nr.FromAck.Mean))
		s.SetExtra("convergence_"+nr.Node+"_timeouts", float64(nr.FromAck.Timeouts))
	}
	all := res.AllVisible
	s.SetExtra("convergence_mean_ms", ms(all.Mean))
	s.SetExtra("convergence_sd_ms", ms(all.SD))
	s.SetExtra("convergence_p99_ms", ms(all.P99))
	s.SetExtra("convergence_max_ms", ms(all.Max))
	s.SetExtra("convergence_timeouts", float64(all.Timeouts))
	s.SetExtra("convergence_write_errors", float64(res.WriteErrors))
	_ = s.Event("convergence", fmt.Sprintf("every node: %s (%s)", all, res.Reported))
	interrupted := ctx.Err() != nil
	if err := errors.Join(merr, s.Finish(interrupted)); err != nil {
		return err
	}
	if interrupted {
		return job.ErrInterrupted
	}
	return nil
}

// InterruptedFile, in an experiment directory, says the experiment was
// interrupted: its report.html shows what was measured until then, but
// the experiment did not conclude (no scores printed; a study does not
// count the directory as a complete step). It is written before the
// report, so a report without it is always a concluded experiment's.
const InterruptedFile = "interrupted.txt"

// ReportFile is the experiment's report of all its runs.
const ReportFile = "report.html"

// concludeInterrupted writes the report of the runs an interrupted
// experiment measured (none: nothing is written), after InterruptedFile.
func (x *expRun) concludeInterrupted() error {
	var runs []*result.Run
	for _, d := range x.runDirs {
		r, err := result.Read(d)
		if err != nil {
			fmt.Fprintf(x.stderr, "experiment %s: %s is not in the report: %v\n", x.sc.Name, d, err)
			continue
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil
	}
	note := fmt.Sprintf("experiment %s was interrupted: %s shows the %d run(s) measured until then; it did not conclude.\n", x.sc.Name, ReportFile, len(runs))
	if err := os.WriteFile(filepath.Join(x.dir, InterruptedFile), []byte(note), 0o644); err != nil {
		return err
	}
	out := filepath.Join(x.dir, ReportFile)
	if err := report.WriteFile(out, runs); err != nil {
		return err
	}
	fmt.Fprintf(x.stdout, "\nexperiment %s (interrupted, what was measured): %s\n", x.sc.Name, out)
	return nil
}

// conclude prints the scores of the experiment's runs and writes one report
// of them all in the experiment directory.
func (x *expRun) conclude() error {
	var runs []*result.Run
	for _, d := range x.runDirs {
		r, err := result.Read(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil
	}
	if x.sc.traits().SetsOption != "" && (x.sc.joins() || len(x.sc.Steps) > 0) {
		if err := report.Scores(x.stdout, report.MergeRuns(runs...)); err != nil {
			return err
		}
	}
	out := filepath.Join(x.dir, ReportFile)
	if err := report.WriteFile(out, runs); err != nil {
		return err
	}
	fmt.Fprintf(x.stdout, "\nexperiment %s: %s\n", x.sc.Name, out)
	return nil
}
