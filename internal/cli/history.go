package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/history"
	"github.com/fieldbench/fieldbench/job"
)

// historyFlags are --history and --commit of the commands that record
// their runs in the run history as they finish (run, sweep, experiment,
// study): declared here once, so each of those commands adds two lines.
type historyFlags struct{ target, commit string }

func (h *historyFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.target, "history", "", "also record the finished run(s) in this run history: an SQLite file (results/history.db is 'fieldbench history''s default) or postgres://... (docs/history.md)")
	cmd.Flags().StringVar(&h.commit, "commit", "", "with --history: the commit (or any reference) to record with the run(s)")
}

// check opens the history before anything starts: a bad target or one
// from a newer fieldbench is bad input (exit 2), not a failure after the
// run. A new SQLite file is not made yet (a refused run leaves nothing),
// but where it would go must take one.
func (h *historyFlags) check() error {
	if h.target == "" {
		if h.commit != "" {
			return usagef("--commit needs --history: there is no history to record it in")
		}
		return nil
	}
	return historyUsage(history.CheckTarget(context.Background(), h.target))
}

// watch makes env's observer note the directory of every run it sees
// start (job.WatchRuns) when there is a history to record them in.
func (h *historyFlags) watch(env *job.Env) *[]string {
	if h.target == "" {
		return &[]string{}
	}
	return job.WatchRuns(env)
}

// finish records the runs under paths once the command ended, however it
// ended (an interrupted run's summary is saved and recorded as such), and
// returns err, joined to the recording's own error if it failed.
func (h *historyFlags) finish(cmd *cobra.Command, err error, paths ...string) error {
	if h.target == "" || len(paths) == 0 {
		return err
	}
	ctx, cancel := job.Detached(cmd.Context(), 2*time.Minute)
	defer cancel()
	stderr := cmd.ErrOrStderr()
	st, rerr := history.AddPaths(ctx, stderr, h.target, h.commit, paths)
	if rerr = historyUsage(rerr); rerr != nil {
		return errors.Join(err, fmt.Errorf("history: %w", rerr))
	}
	fmt.Fprintf(stderr, "history: %s\n", st)
	return err
}

// historyUsage makes the history's refusals of the user's input bad
// input (exit 2): a history from a newer fieldbench, none where one was
// named, one that cannot be made there, a selection nothing answers.
func historyUsage(err error) error {
	if errors.Is(err, history.ErrNewerSchema) || errors.Is(err, history.ErrNoHistory) || errors.Is(err, history.ErrTarget) || errors.Is(err, history.ErrSelection) {
		return usageError{Err: err}
	}
	return err
}

// detectFlags are the change-point settings of trend and changes.
type detectFlags struct {
	o history.Options
}

func (d *detectFlags) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	o := history.DefaultOptions
	f.StringVar(&d.o.Method, "method", o.Method, "significance test: ttest (Otava's default: windows, weak change points, merge) or permutation (Matteson and James's, Otava's --orig-edivisive)")
	f.Float64Var(&d.o.PValue, "pvalue", o.PValue, "largest p-value of a change point (Otava's -P)")
	f.IntVar(&d.o.Window, "window", o.Window, "runs analyzed at once by the ttest method (Otava's --window)")
	f.Float64Var(&d.o.Magnitude, "magnitude", 0, "smallest relative change kept, e.g. 0.05 for 5 % (Otava's -M)")
	f.IntVar(&d.o.Permutations, "permutations", o.Permutations, "shuffles of the permutation method")
}

func (d *detectFlags) check() error {
	if err := d.o.Check(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// selection binds and checks the flags of a history.Selection.
type selection struct{ history.Selection }

// bindSeries binds --series alone.
func (sel *selection) bindSeries(cmd *cobra.Command) {
	cmd.Flags().StringVar(&sel.Series, "series", "", "only this series (its ID or a unique prefix, as 'history list' shows)")
}

func (sel *selection) bind(cmd *cobra.Command, figures []string) {
	sel.bindSeries(cmd)
	f := cmd.Flags()
	f.StringVar(&sel.Op, "op", "", "only this operation")
	f.StringSliceVar(&sel.Figures, "figure", figures, "figures, comma-separated: "+strings.Join(history.Figures, ", "))
}

func (sel *selection) check() error {
	for _, f := range sel.Figures {
		if !history.KnownFigure(f) {
			return usagef("--figure %q: unknown (known: %s)", f, strings.Join(history.Figures, ", "))
		}
	}
	return nil
}

func newHistoryCmd() *cobra.Command {
	var target string
	c := &cobra.Command{
		Use:   "history",
		Short: "Keep every run in a results database: series of runs that compare, trends, change points, a CI gate",
		Long:  history.Help,
		Example: `  fieldbench run microblog --duration 30s --history results/history.db
  fieldbench history add results/*
  fieldbench history trend --html trend.html
  fieldbench history changes --fail-on 'p99+10%'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("history needs a command: add, list, show, trend, changes or export (see 'fieldbench history --help')")
			}
			return usagef("unknown history command %q (add, list, show, trend, changes, export)", args[0])
		},
	}
	c.PersistentFlags().StringVar(&target, "history", history.DefaultPath, "the history database: an SQLite file or postgres://user@host/db")
	c.AddCommand(historyAddCmd(&target), historyListCmd(&target), historyShowCmd(&target), historyTrendCmd(&target), historyChangesCmd(&target), historyExportCmd(&target))
	return c
}

func historyAddCmd(target *string) *cobra.Command {
	var commit string
	c := &cobra.Command{
		Use:   "add DIR...",
		Short: "Record the runs under each directory (or result file) in the history",
		Long: `add searches each DIR for run directories (a run's, an experiment's steps,
a sweep's, a study's, a merged run's; not a cluster's data) and records
each run: its identity and header (passwords redacted), each operation's
summary and intervals and its merged HDR histogram. A run is identified by
its header, so adding it again, or a copy of it, changes nothing.

Skipped, with the reason on stderr: a file that is not a result file, a
run that did not finish (no summary), a shard (add the merged result).
A damaged line costs that line, as in every command that reads results.
Exit 2 when nothing at all could be recorded.`,
		Example: `  fieldbench history add results/*
  fieldbench history add results/study-ingest-quick --commit v1.4.0
  fieldbench history add results/ --history postgres://bench@db/history`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("history add needs run directories (or result files), e.g. results/*")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := history.AddPaths(cmd.Context(), cmd.ErrOrStderr(), *target, commit, args)
			if err = historyUsage(err); err != nil {
				if cmd.Context().Err() != nil {
					return errInterrupted
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "history: "+st.String())
			if st.Added+st.Known == 0 {
				return usagef("nothing recorded: %s held no run that could be (see above)", strings.Join(st.ArgsWithNothing, ", "))
			}
			return nil
		},
	}
	c.Flags().StringVar(&commit, "commit", "", "the commit (or any reference) to record with the runs")
	return c
}

func historyListCmd(target *string) *cobra.Command {
	var sel selection
	var last int
	c := &cobra.Command{
		Use:   "list",
		Short: "The series of the history and their runs",
		Long: `list shows each series (what its runs share) and its last runs: when each
started, its ID, commit, server and fieldbench versions, host and measured
time. A change inside a series (server version, host, kernel, fieldbench)
is a line of its own where it happens.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if last < 0 {
				return usagef("--runs %d: want 0 (all) or more", last)
			}
			return historyUsage(history.List(cmd.Context(), cmd.OutOrStdout(), *target, sel.Selection, last))
		},
	}
	sel.bindSeries(c)
	c.Flags().IntVar(&last, "runs", 20, "show each series' last N runs (0: all)")
	return c
}

func historyShowCmd(target *string) *cobra.Command {
	var percentiles []float64
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "One run of the history, any percentile recomputed from its stored histograms",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range percentiles {
				if !(p > 0 && p <= 100) {
					return usagef("--percentiles: %g is not in (0, 100]", p)
				}
			}
			return historyUsage(history.Show(cmd.Context(), cmd.OutOrStdout(), *target, args[0], percentiles))
		},
	}
	c.Flags().Float64SliceVar(&percentiles, "percentiles", []float64{50, 90, 99, 99.9, 99.99}, "percentiles to compute from the stored histograms")
	return c
}

func historyTrendCmd(target *string) *cobra.Command {
	var sel selection
	var det detectFlags
	var out string
	var last int
	c := &cobra.Command{
		Use:   "trend",
		Short: "Each operation's figures over a series' runs, with every run's interval and the change points",
		Long: `trend prints, per series, operation and figure (throughput, p50, p99,
p99.9 and errors unless --figure says otherwise), the runs in order with
their figure and its 95 % interval, a line where a change point starts a
new segment and where the server version or host changed; --html writes
the same as an offline page of charts (inline SVG, no scripts).`,
		Example: `  fieldbench history trend
  fieldbench history trend --series 3f2a --op post --figure p99,throughput --html trend.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := errors.Join(sel.check(), det.check()); err != nil {
				return err
			}
			if last < 0 {
				return usagef("--last %d: want 0 (all) or more", last)
			}
			if out != "" {
				if err := checkOutput("--html", out, nil); err != nil {
					return err
				}
			}
			return historyUsage(history.TrendReport(cmd.Context(), cmd.OutOrStdout(), *target, sel.Selection, det.o, last, out))
		},
	}
	sel.bind(c, history.TrendFigures)
	det.bind(c)
	c.Flags().StringVar(&out, "html", "", "also write the trends as an offline HTML page to FILE")
	c.Flags().IntVar(&last, "last", 20, "terminal: each figure's last N runs (0: all; the page has all)")
	return c
}

func historyChangesCmd(target *string) *cobra.Command {
	var sel selection
	var det detectFlags
	var failOn string
	var asJSON bool
	c := &cobra.Command{
		Use:   "changes",
		Short: "Change points of every series' figures; --fail-on exits 3 when the newest segment is a regression",
		Long:  history.ChangesHelp,
		Example: `  fieldbench history changes
  fieldbench history changes --fail-on 'p99+10%,throughput-5%'
  fieldbench history changes --series 3f2a --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := errors.Join(sel.check(), det.check()); err != nil {
				return err
			}
			gates, err := compare.ParseGates(failOn)
			if err != nil {
				return usageError{Err: err}
			}
			broken, err := history.Changes(cmd.Context(), cmd.OutOrStdout(), *target, sel.Selection, det.o, gates, asJSON)
			if err != nil {
				return historyUsage(err)
			}
			if len(broken) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "regressions:\n  %s\n", strings.Join(broken, "\n  "))
				return errRegression{len(broken)}
			}
			return nil
		},
	}
	sel.bind(c, history.TrendFigures)
	det.bind(c)
	c.Flags().StringVar(&failOn, "fail-on", "", "exit 3 when a series' newest segment is worse than the one before by more than a limit: FIGURE[:OP]+N% for latency (mean, p50, p99, p99.9), throughput[:OP]-N%; comma-separated")
	c.Flags().BoolVar(&asJSON, "json", false, "print the change points as JSON")
	return c
}

func historyExportCmd(target *string) *cobra.Command {
	var sel selection
	var format, out string
	c := &cobra.Command{
		Use:   "export --format csv",
		Short: "Write a series as CSV, as Apache Otava's CSV importer reads it",
		Long: `export writes one series (--series, needed when the history has several)
as CSV: a time column, the run's ID, commit, server version and host as
attributes, and one column per operation and figure (post_p99,
post_throughput, post_p99_9...; latencies in µs, throughput in operations
a second, errors in %) that every run of the series has. Otava reads it
with a csv test (time_column: time, attributes: [run, commit,
server_version, host], metrics: the columns); scripts/otava-compare.sh
runs both on the same series.`,
		Example: `  fieldbench history export --format csv --series 3f2a --out series.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "csv" {
				return usagef("--format %q: only csv", format)
			}
			if err := sel.check(); err != nil {
				return err
			}
			if out != "" {
				if err := checkOutput("--out", out, nil); err != nil {
					return err
				}
			}
			return historyUsage(history.Export(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *target, sel.Selection, out))
		},
	}
	sel.bind(c, history.Figures)
	c.Flags().StringVar(&format, "format", "", "csv (what Apache Otava reads)")
	c.Flags().StringVar(&out, "out", "", "file to write (default: standard output)")
	return c
}
