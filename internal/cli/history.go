package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/history"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
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
	path, err := history.SQLitePath(h.target)
	if err != nil {
		return err
	}
	if path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			dir := filepath.Dir(path)
			for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
				if _, err := os.Stat(dir); err == nil {
					break
				}
			}
			if err := checkWritable("--history", filepath.Join(dir, "x")); err != nil {
				return usagef("--history %s: cannot make it: %v", path, err)
			}
			return nil
		}
	}
	s, err := openHistory(context.Background(), h.target, false)
	if err != nil {
		return err
	}
	return s.Close()
}

// watch makes env's observer note the directory of every run it sees
// start: the runs to record once the command ends.
func (h *historyFlags) watch(env *job.Env) *[]string {
	dirs := &[]string{}
	if h.target != "" {
		inner := env.Observer
		if inner == nil {
			inner = job.NopObserver{}
		}
		env.Observer = dirWatcher{Observer: inner, dirs: dirs}
	}
	return dirs
}

// dirWatcher is an observer that notes run directories.
type dirWatcher struct {
	job.Observer
	dirs *[]string
}

func (d dirWatcher) Started(ctx context.Context, s *job.Session) {
	*d.dirs = append(*d.dirs, s.Dir())
	d.Observer.Started(ctx, s)
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
	st, rerr := addToHistory(ctx, stderr, h.target, h.commit, paths)
	if rerr != nil {
		return errors.Join(err, fmt.Errorf("history: %w", rerr))
	}
	fmt.Fprintf(stderr, "history: %s\n", st)
	return err
}

// openHistory opens the history, its refusals made bad input (exit 2).
func openHistory(ctx context.Context, target string, create bool) (*history.Store, error) {
	s, err := history.Open(ctx, target, create)
	if errors.Is(err, history.ErrNewerSchema) || errors.Is(err, history.ErrNoHistory) {
		return nil, usageError{Err: err}
	}
	return s, err
}

// addStats is what adding did.
type addStats struct {
	where                 string
	added, known, skipped int
	series                map[string]bool
	argsWithNothing       []string
}

func (a addStats) String() string {
	return fmt.Sprintf("%d run(s) added to %s, %d already there, %d skipped (%d series)", a.added, a.where, a.known, a.skipped, len(a.series))
}

// addBatch bounds the runs held in memory (each with its histograms)
// before they are written in one transaction.
const addBatch = 100

// addToHistory records every run found under paths (history.Source):
// a file that cannot be read, a shard, a run that did not finish is
// skipped with its reason on stderr; damaged lines are warned of as every
// reader of result files does. argsWithNothing are the paths that gave
// no run at all.
func addToHistory(ctx context.Context, stderr io.Writer, target, commit string, paths []string) (addStats, error) {
	self, err := history.SQLitePath(target)
	if err != nil {
		return addStats{}, err
	}
	where := self
	if where == "" {
		where = redact.DSN(target)
	}
	// The history is opened once there is a run to add: an add that finds
	// nothing leaves no new file.
	var s *history.Store
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	st := addStats{where: where, series: map[string]bool{}}
	var batch []history.Run
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if s == nil {
			if s, err = openHistory(ctx, target, true); err != nil {
				return err
			}
			st.where = s.Where
		}
		got, err := s.Add(ctx, batch)
		if err != nil {
			return err
		}
		for _, a := range got {
			if a.New {
				st.added++
			} else {
				st.known++
			}
		}
		batch = batch[:0]
		return nil
	}
	skip := func(path, reason string) {
		st.skipped++
		fmt.Fprintf(stderr, "fieldbench: skipped %s: %s\n", path, reason)
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		files, skipped, err := history.Source(p, self)
		if err != nil {
			skip(p, err.Error())
			st.argsWithNothing = append(st.argsWithNothing, p)
			continue
		}
		for _, sk := range skipped {
			if sk.Reason == "the history database itself" {
				continue
			}
			skip(sk.Path, sk.Reason)
		}
		if len(files) == 0 && len(skipped) == 0 {
			skip(p, "no "+result.FileName+" in it or under it (not a run directory, or runs stopped before they measured)")
		}
		recorded := 0
		for _, f := range files {
			r, err := result.Read(f)
			if err != nil {
				skip(f, strings.TrimPrefix(err.Error(), "read result "+f+": "))
				continue
			}
			warnSkipped(stderr, r)
			rec, err := history.FromRun(r, commit)
			if err != nil {
				skip(f, err.Error())
				continue
			}
			recorded++
			st.series[rec.Series] = true
			batch = append(batch, rec)
			if len(batch) >= addBatch {
				if err := flush(); err != nil {
					return st, err
				}
			}
		}
		if recorded == 0 && !onlySelf(skipped) {
			st.argsWithNothing = append(st.argsWithNothing, p)
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	return st, ctx.Err()
}

// onlySelf: the path was the history's own file (results/* names it).
func onlySelf(skipped []history.Skip) bool {
	return len(skipped) > 0 && skipped[0].Reason == "the history database itself"
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

// selection is which series, operations and figures a command shows.
type selection struct {
	series, op string
	figures    []string
}

// bindSeries binds --series alone.
func (sel *selection) bindSeries(cmd *cobra.Command) {
	cmd.Flags().StringVar(&sel.series, "series", "", "only this series (its ID or a unique prefix, as 'history list' shows)")
}

func (sel *selection) bind(cmd *cobra.Command, figures []string) {
	sel.bindSeries(cmd)
	f := cmd.Flags()
	f.StringVar(&sel.op, "op", "", "only this operation")
	f.StringSliceVar(&sel.figures, "figure", figures, "figures, comma-separated: "+strings.Join(history.Figures, ", "))
}

func (sel *selection) check() error {
	for _, f := range sel.figures {
		if !history.KnownFigure(f) {
			return usagef("--figure %q: unknown (known: %s)", f, strings.Join(history.Figures, ", "))
		}
	}
	return nil
}

// chosen is a series with its runs.
type chosen struct {
	s    history.Series
	runs []history.Run
}

// load reads the selected series and their runs.
func (sel *selection) load(ctx context.Context, s *history.Store) ([]chosen, error) {
	all, err := s.SeriesList(ctx)
	if err != nil {
		return nil, err
	}
	if sel.series != "" {
		one, err := history.FindSeries(all, sel.series)
		if err != nil {
			return nil, usageError{Err: err}
		}
		all = []history.Series{one}
	}
	var out []chosen
	for _, x := range all {
		runs, err := s.Runs(ctx, x.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, chosen{x, runs})
	}
	if sel.op != "" {
		found := false
		for _, c := range out {
			for _, op := range history.Ops(c.runs) {
				found = found || op == sel.op
			}
		}
		if !found {
			return nil, usagef("--op %s: no run of the series shown has it", sel.op)
		}
	}
	return out, nil
}

func (sel *selection) ops(runs []history.Run) []string {
	if sel.op != "" {
		return []string{sel.op}
	}
	return history.Ops(runs)
}

func newHistoryCmd() *cobra.Command {
	var target string
	c := &cobra.Command{
		Use:   "history",
		Short: "Keep every run in a results database: series of runs that compare, trends, change points, a CI gate",
		Long: `history keeps runs in a results database — an SQLite file (results/history.db
by default) or a team's PostgreSQL (--history postgres://...) — and reads
them back as series: runs grouped by what must be equal to compare them
(workload, model, mix, adapter, server, the options that change the work,
the cluster, the class of machine). A change of server version, host or
fieldbench version inside a series is shown, never silently mixed.

  add DIR...     record the runs under DIR (runs, experiments, sweeps,
                 studies, merged shards; a run already there is kept once)
  list           the series and their runs
  show RUN       one run, any percentile recomputed from its histogram
  trend          each operation's figures over a series' runs, with each
                 run's interval and the change points (terminal, --html)
  changes        the change points (e-divisive means, as Apache Otava);
                 --fail-on exits 3 when a series' newest segment is a
                 regression beyond the gate
  export         a series as CSV, as Apache Otava reads it

run, sweep, experiment and study record their runs as they finish with
--history. The grouping rule and the method: docs/history.md.`,
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
			st, err := addToHistory(cmd.Context(), cmd.ErrOrStderr(), *target, commit, args)
			if err != nil {
				if cmd.Context().Err() != nil {
					return errInterrupted
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "history: "+st.String())
			if st.added+st.known == 0 {
				return usagef("nothing recorded: %s held no run that could be (see above)", strings.Join(st.argsWithNothing, ", "))
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
			ctx := cmd.Context()
			s, err := openHistory(ctx, *target, false)
			if err != nil {
				return err
			}
			defer s.Close()
			sets, err := sel.load(ctx, s)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			total := 0
			for _, c := range sets {
				total += len(c.runs)
			}
			fmt.Fprintf(w, "history %s: %d run(s) in %d series\n", s.Where, total, len(sets))
			for _, c := range sets {
				listSeries(w, c, last)
			}
			return nil
		},
	}
	sel.bindSeries(c)
	c.Flags().IntVar(&last, "runs", 20, "show each series' last N runs (0: all)")
	return c
}

func listSeries(w io.Writer, c chosen, last int) {
	fmt.Fprintf(w, "\nseries %s: %s — %d run(s), %s to %s\n", c.s.ID, c.s.Label, c.s.Runs,
		time.Unix(0, c.s.First).UTC().Format("2006-01-02 15:04"), time.Unix(0, c.s.Last).UTC().Format("2006-01-02 15:04"))
	for _, d := range c.s.Describe() {
		fmt.Fprintf(w, "  %s\n", d)
	}
	first := 0
	if last > 0 && len(c.runs) > last {
		first = len(c.runs) - last
		fmt.Fprintf(w, "  (%d earlier runs not shown; --runs 0 shows all)\n", first)
	}
	marks := map[int][]string{}
	for _, m := range history.Marks(c.runs) {
		marks[m.Index] = append(marks[m.Index], m.String())
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tstarted\trun\tcommit\tserver\tfieldbench\thost\tmeasured\t")
	for i := first; i < len(c.runs); i++ {
		r := c.runs[i]
		for _, m := range marks[i] {
			fmt.Fprintf(tw, "  ·····\t%s\t\t\t\t\t\t\t\n", m)
		}
		note := ""
		if r.Interrupted {
			note = " (interrupted)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s %s\t%s\t%s\t%.1f s%s\t\n", i+1, r.Started.Format("2006-01-02 15:04:05"), r.Short(), dash(r.Commit),
			r.Server, r.ServerVersion, r.Version, r.Host, r.Duration, note)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
			ctx := cmd.Context()
			s, err := openHistory(ctx, *target, false)
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := s.Run(ctx, args[0])
			if err != nil {
				return usageError{Err: err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "run %s\n  series %s, started %s, %s on %s %s (%s adapter), fieldbench %s\n  host %s (%s), measured %.1f s, commit %s, read from %s\n",
				r.ID, r.Series, r.Started.Format(time.RFC3339), r.Workload, r.Server, r.ServerVersion, r.Adapter, r.Version, r.Host, r.Machine, r.Duration, dash(r.Commit), r.Dir)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			head := "  operation\tcount\terrors\tops/s"
			for _, p := range percentiles {
				head += "\tp" + strconv.FormatFloat(p, 'f', -1, 64)
			}
			fmt.Fprintln(tw, head+"\t")
			for _, o := range r.Ops {
				line := fmt.Sprintf("  %s\t%d\t%d\t%.1f", o.Name, o.Count, o.Errors, o.Rate)
				b, err := s.Histogram(ctx, r.ID, o.Name)
				if err != nil {
					return err
				}
				h, err := history.DecodeHist(b)
				if err != nil {
					return err
				}
				for _, p := range percentiles {
					v := "-"
					if h.TotalCount() > 0 {
						v = history.FormatFigure("p", float64(h.ValueAtQuantile(p)))
					}
					line += "\t" + v
				}
				fmt.Fprintln(tw, line+"\t")
			}
			return tw.Flush()
		},
	}
	c.Flags().Float64SliceVar(&percentiles, "percentiles", []float64{50, 90, 99, 99.9, 99.99}, "percentiles to compute from the stored histograms")
	return c
}

// trendOf is the report's trend of the chosen series: every operation's
// figure, its points and change points.
func trendOf(sets []chosen, sel selection, o history.Options) (report.Trend, []analysed, error) {
	t := report.Trend{Title: "fieldbench history: trends", Notes: []string{
		"Each point is a run's whole-run figure; its bar, the 95 % interval from the run's per-second figures (autocorrelation-corrected, on the log scale; runs of fewer than 10 measured seconds have none).",
		fmt.Sprintf("Change points: e-divisive means as Apache Otava computes them (%s, p ≤ %g, window %d); a dashed line is the mean of a segment between change points (docs/history.md).", o.MethodName(), o.PValue, o.Window),
	}}
	var all []analysed
	for _, c := range sets {
		ts := report.TrendSeries{ID: c.s.ID, Label: c.s.Label, About: c.s.Describe()}
		for _, r := range c.runs {
			tr := report.TrendRun{ID: r.ID, Commit: r.Commit, Server: r.Server + " " + r.ServerVersion, Started: r.Started}
			if r.Interrupted {
				tr.Note = "interrupted"
			}
			ts.Runs = append(ts.Runs, tr)
		}
		for _, m := range history.Marks(c.runs) {
			ts.Marks = append(ts.Marks, report.TrendMark{Run: m.Index, Text: m.String()})
		}
		for _, op := range sel.ops(c.runs) {
			for _, fig := range sel.figures {
				a, err := history.Analyze(c.runs, op, fig, o)
				if err != nil {
					return t, nil, fmt.Errorf("series %s, %s %s: %w", c.s.ID, op, fig, err)
				}
				if len(a.Points) == 0 {
					continue
				}
				all = append(all, analysed{c.s, a})
				tc := report.TrendChart{Op: op, Figure: fig}
				for _, p := range a.Points {
					tc.Points = append(tc.Points, report.TrendPoint{Run: p.Index, Value: p.Value, Lo: p.Lo, Hi: p.Hi})
				}
				for _, cp := range a.Changes {
					tc.Changes = append(tc.Changes, report.TrendChange{Run: a.Points[cp.Index].Index, Before: cp.Before, After: cp.After, P: cp.P,
						NBefore: cp.NBefore, NAfter: cp.NAfter, Worse: a.Worse(cp) > 0})
				}
				ts.Charts = append(ts.Charts, tc)
			}
		}
		t.Series = append(t.Series, ts)
	}
	return t, all, nil
}

// analysed is one figure's analysis in its series.
type analysed struct {
	s history.Series
	a history.Analysis
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
			ctx := cmd.Context()
			s, err := openHistory(ctx, *target, false)
			if err != nil {
				return err
			}
			defer s.Close()
			sets, err := sel.load(ctx, s)
			if err != nil {
				return err
			}
			t, _, err := trendOf(sets, sel, det.o)
			if err != nil {
				return err
			}
			if err := report.TrendTerminal(cmd.OutOrStdout(), t, last); err != nil {
				return err
			}
			if out == "" {
				return nil
			}
			if err := writeTrendHTML(out, t); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", out)
			return nil
		},
	}
	sel.bind(c, history.TrendFigures)
	det.bind(c)
	c.Flags().StringVar(&out, "html", "", "also write the trends as an offline HTML page to FILE")
	c.Flags().IntVar(&last, "last", 20, "terminal: each figure's last N runs (0: all; the page has all)")
	return c
}

// writeTrendHTML writes the page through a temporary file, so a failure
// leaves no half page.
func writeTrendHTML(path string, t report.Trend) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".trend-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_ = tmp.Chmod(0o644)
	if err := report.TrendHTML(tmp, t); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// changeJSON is one change point in `history changes --json`.
type changeJSON struct {
	Series  string  `json:"series"`
	Op      string  `json:"op"`
	Figure  string  `json:"figure"`
	Index   int     `json:"index"` // among the runs that have the figure
	Run     string  `json:"run"`
	Time    string  `json:"time"`
	Commit  string  `json:"commit,omitempty"`
	Before  float64 `json:"before"`
	After   float64 `json:"after"`
	Change  float64 `json:"change"`
	P       float64 `json:"p"`
	NBefore int     `json:"runs_before"`
	NAfter  int     `json:"runs_after"`
	Worse   bool    `json:"worse"`
}

func historyChangesCmd(target *string) *cobra.Command {
	var sel selection
	var det detectFlags
	var failOn string
	var asJSON bool
	c := &cobra.Command{
		Use:   "changes",
		Short: "Change points of every series' figures; --fail-on exits 3 when the newest segment is a regression",
		Long: `changes finds where each series' figures change: e-divisive means with
Student's t-test as Apache Otava computes them (or its permutation test,
--method permutation), in both directions, each with the means before and
after, the relative change, its p-value and the runs on each side.

--fail-on makes it a CI gate with compare's grammar (FIGURE[:OP]+N% for a
latency, throughput[:OP]-N%): it exits 3 when the newest segment of a
series (the runs since its last change point) is worse than the segment
before it by more than the limit. A change within the noise is no change
point, so it never fails; an improvement never does. A gate naming an
operation no run has is bad input (exit 2).`,
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
			ctx := cmd.Context()
			s, err := openHistory(ctx, *target, false)
			if err != nil {
				return err
			}
			defer s.Close()
			sets, err := sel.load(ctx, s)
			if err != nil {
				return err
			}
			byID := map[string][]history.Run{}
			var series []history.Series
			for _, c := range sets {
				byID[c.s.ID] = c.runs
				series = append(series, c.s)
			}
			if err := history.CheckGates(gates, series, byID); err != nil {
				return usageError{Err: err}
			}
			_, all, err := trendOf(sets, sel, det.o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				out := []changeJSON{}
				for _, x := range all {
					for _, cp := range x.a.Changes {
						r := x.a.At(cp)
						out = append(out, changeJSON{Series: x.s.ID, Op: x.a.Op, Figure: x.a.Figure, Index: cp.Index, Run: r.ID, Time: r.Started.Format(time.RFC3339Nano),
							Commit: r.Commit, Before: cp.Before, After: cp.After, Change: finiteOr0(cp.Change()), P: cp.P, NBefore: cp.NBefore, NAfter: cp.NAfter, Worse: x.a.Worse(cp) > 0})
					}
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", " ")
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				printChanges(w, sets, all, det.o)
			}
			var broken []string
			for _, c := range sets {
				v, err := history.Regressions(c.s, c.runs, gates, det.o)
				if err != nil {
					return err
				}
				for _, x := range v {
					broken = append(broken, x.String())
				}
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

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// printChanges lists each series' change points, and the figures without
// any in one line.
func printChanges(w io.Writer, sets []chosen, all []analysed, o history.Options) {
	fmt.Fprintf(w, "change points: e-divisive means (%s, p ≤ %g, window %d, magnitude ≥ %g)\n", o.MethodName(), o.PValue, o.Window, o.Magnitude)
	for _, c := range sets {
		fmt.Fprintf(w, "\nseries %s: %s (%d runs)\n", c.s.ID, c.s.Label, len(c.runs))
		marks := map[int][]string{}
		for _, m := range history.Marks(c.runs) {
			marks[m.Index] = append(marks[m.Index], m.String())
		}
		var none []string
		for _, x := range all {
			if x.s.ID != c.s.ID {
				continue
			}
			if len(x.a.Changes) == 0 {
				none = append(none, x.a.Op+" "+x.a.Figure)
				continue
			}
			for _, cp := range x.a.Changes {
				r := x.a.At(cp)
				verdict := "better"
				if x.a.Worse(cp) > 0 {
					verdict = "WORSE"
				}
				commit := ""
				if r.Commit != "" {
					commit = ", commit " + r.Commit
				}
				fmt.Fprintf(w, "  %s %s: %s %+.1f%% from run %d (%s, %s%s): %s → %s, magnitude %.3g, p %.2g, %d run(s) before, %d after\n",
					x.a.Op, x.a.Figure, verdict, 100*cp.Change(), x.a.Points[cp.Index].Index+1, r.Started.Format("2006-01-02 15:04"), r.Short(), commit,
					history.FormatFigure(x.a.Figure, cp.Before), history.FormatFigure(x.a.Figure, cp.After), cp.Magnitude(), cp.P, cp.NBefore, cp.NAfter)
				if m := marks[x.a.Points[cp.Index].Index]; len(m) > 0 {
					fmt.Fprintf(w, "      at the same run: %s\n", strings.Join(m, "; "))
				}
			}
		}
		if len(none) > 0 {
			fmt.Fprintf(w, "  no change point: %s\n", strings.Join(none, ", "))
		}
	}
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
			ctx := cmd.Context()
			s, err := openHistory(ctx, *target, false)
			if err != nil {
				return err
			}
			defer s.Close()
			sets, err := sel.load(ctx, s)
			if err != nil {
				return err
			}
			if len(sets) != 1 {
				ids := make([]string, len(sets))
				for i, c := range sets {
					ids[i] = c.s.ID
				}
				return usagef("export writes one series: give --series (the history has %d: %s)", len(sets), strings.Join(ids, ", "))
			}
			runs := sets[0].runs
			if sel.op != "" {
				runs = onlyOp(runs, sel.op)
			}
			var w io.Writer = cmd.OutOrStdout()
			var f *os.File
			if out != "" {
				if f, err = os.Create(out); err != nil {
					return err
				}
				w = f
			}
			written, omitted, err := history.WriteCSV(w, runs, sel.figures)
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return err
			}
			if len(omitted) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "fieldbench: columns left out (not in every run of the series): %s\n", strings.Join(omitted, ", "))
			}
			if out != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%d run(s), %d column(s): %s\n", len(runs), len(written), out)
			}
			return nil
		},
	}
	sel.bind(c, history.Figures)
	c.Flags().StringVar(&format, "format", "", "csv (what Apache Otava reads)")
	c.Flags().StringVar(&out, "out", "", "file to write (default: standard output)")
	return c
}

// onlyOp keeps each run's operation op alone.
func onlyOp(runs []history.Run, op string) []history.Run {
	out := make([]history.Run, 0, len(runs))
	for _, r := range runs {
		if o, ok := r.Op(op); ok {
			r.Ops = []history.Op{o}
			out = append(out, r)
		}
	}
	return out
}

// entries are the names in dir (none when it cannot be read).
func entries(dir string) map[string]bool {
	out := map[string]bool{}
	list, _ := os.ReadDir(dir)
	for _, e := range list {
		out[e.Name()] = true
	}
	return out
}

// newEntries are the directories of dir, named with part, that were not
// in before: what a command made there.
func newEntries(dir string, before map[string]bool, part string) []string {
	var out []string
	list, _ := os.ReadDir(dir)
	for _, e := range list {
		if e.IsDir() && !before[e.Name()] && strings.Contains(e.Name(), part) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
