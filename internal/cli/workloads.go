package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/report/live"
)

// jobCmds returns, for one verb, a subcommand per registered job that offers
// it: the flags, help and action all come from the job's declaration.
func jobCmds(verb string) []*cobra.Command {
	var out []*cobra.Command
	for _, name := range job.Names() {
		j, err := job.New(name)
		if err != nil {
			continue
		}
		if c, ok := job.Find(j, verb); ok {
			out = append(out, jobCmd(j, name, c))
		}
	}
	return out
}

// jobCmd is the cobra command of one job command (use is the workload's
// name, or an operation's under op).
func jobCmd(j job.Job, use string, c job.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: c.Short, Long: c.Long, Example: c.Example, Args: cobra.NoArgs}
	for _, f := range j.Opts().For(c.Verb) {
		cmd.Flags().AddFlag(f)
	}
	if len(c.Subs) > 0 {
		names := make([]string, len(c.Subs))
		for i, sub := range c.Subs {
			names[i] = strings.TrimPrefix(sub.Verb, c.Verb+" ")
			cmd.AddCommand(jobCmd(j, names[i], sub))
		}
		cmd.RunE = func(cmd *cobra.Command, _ []string) error {
			if c.Run != nil { // the job words its own refusal
				return c.Run(job.WithProgress(cmd.Context(), cmd.ErrOrStderr()), &job.Env{Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Version: Version})
			}
			return usagef("%s %s needs an operation: %s", c.Verb, use, strings.Join(names, ", "))
		}
		return cmd
	}
	var cl *cluster.Cluster // started by --cluster
	var out outputFlags
	var hist historyFlags // --history: record the run as it finishes
	// check refuses bad options (an empty --db, a DSN of the wrong form,
	// what the sizing rule refuses, a run's or a sweep's own, an
	// unreadable --history) before a metrics endpoint or a --cluster
	// server is started for the command: job.Check, which experiments
	// make too.
	check := func() error {
		if err := job.Check(j, c.Verb); err != nil {
			return err
		}
		return hist.check()
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := check(); err != nil {
			return err
		}
		env := &job.Env{Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Version: Version, Cluster: job.ClusterInfo(cl)}
		stop, err := out.apply(cmd.Context(), env)
		if err != nil {
			return err
		}
		defer stop()
		dirs := hist.watch(env)
		err = c.Run(job.WithProgress(cmd.Context(), env.Stderr), env)
		return hist.finish(cmd, err, *dirs...)
	}
	if c.Measured {
		out.bind(cmd)
		hist.bind(cmd)
		withCluster(cmd, check, func(started *cluster.Cluster) { cl = started })
	}
	if c.Verb == "run" || c.Verb == "load" {
		withLoadHost(cmd)
	}
	return cmd
}

// outputFlags are the standard outputs every measured command offers.
type outputFlags struct {
	hdrLog, csv, json bool
	metricsAddr       string
	allowRemote       bool
	linger            time.Duration
}

func (o *outputFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.hdrLog, "hdr-log", false, "also write hdr/<operation>.hlog in the run directory: the standard HdrHistogram interval log (one histogram a second, µs)")
	f.BoolVar(&o.csv, "summary-csv", false, "also write summary.csv (one row per operation) in the run directory")
	f.BoolVar(&o.json, "summary-json", false, "also write summary.json in the run directory")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve live OpenMetrics/Prometheus metrics on HOST:PORT/metrics while the run goes on (loopback only unless --metrics-allow-remote)")
	f.BoolVar(&o.allowRemote, "metrics-allow-remote", false, "let --metrics-addr listen on an address that is not loopback")
	f.DurationVar(&o.linger, "metrics-linger", 0, "after the run, keep serving --metrics-addr with the final totals (and fieldbench_run_ended 1) this long, then exit; at least twice the scraper's interval, e.g. 30s for Prometheus's 15s (Ctrl-C ends it at once)")
}

// apply sets env's outputs and starts the metrics endpoint (live.Serve,
// whose stop ends it).
func (o *outputFlags) apply(ctx context.Context, env *job.Env) (stop func(), err error) {
	env.Outputs = job.Outputs{HDRLog: o.hdrLog, CSV: o.csv, JSON: o.json}
	if o.linger < 0 {
		return nil, usagef("--metrics-linger %s: want a duration of 0 or more, e.g. 30s", o.linger)
	}
	if o.metricsAddr == "" {
		if o.linger > 0 {
			return nil, usagef("--metrics-linger needs --metrics-addr: there is no endpoint to keep serving")
		}
		return func() {}, nil
	}
	srv, stop, err := live.Serve(ctx, o.metricsAddr, o.allowRemote, o.linger, env.Stderr)
	if err != nil {
		return nil, job.Usage(err)
	}
	env.Outputs.Live = srv
	return stop, nil
}
