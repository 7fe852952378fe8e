package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Series names of the ingest result points (see result.Point).
const (
	ingestRunSeries   = "ingest-run"
	ingestPointSeries = "ingest-throughput"
)

func init() {
	registerWorkloadCmd("generate", newIngestGenerateCmd)
	registerWorkloadCmd("run", newIngestRunCmd)
	registerWorkloadCmd("sweep", newIngestSweepCmd)
	registerWorkloadCmd("op", newIngestOpCmd)
}

// ingestFlags are the options shared by run and sweep.
type ingestFlags struct {
	db      string
	results string
	sources int
	batch   int
	seed    int64
	timeout time.Duration
	verify  bool
}

func (f *ingestFlags) bind(c *cobra.Command) {
	c.Flags().StringVar(&f.db, "db", "", "database DSN, e.g. sqlite:///tmp/fb.db (default: a new SQLite file in the run directory)")
	c.Flags().StringVar(&f.results, "results", "results", "directory under which the run directory is created")
	c.Flags().IntVar(&f.sources, "sources", ingest.DefaultSources, "concurrent sources, each inserting its own records")
	c.Flags().IntVar(&f.batch, "batch", ingest.DefaultBatch, "records per batch (one transaction on SQL databases)")
	c.Flags().Int64Var(&f.seed, "seed", ingest.DefaultSeed, "seed of the records (a record is a function of seed, source and index)")
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "a run taking longer fails with cause timeout (0 = no limit)")
	c.Flags().BoolVar(&f.verify, "verify", true, "count the stored records after each run (untimed); a wrong count fails the run")
}

func (f *ingestFlags) runConfig(records int64) ingest.RunConfig {
	return ingest.RunConfig{Sources: f.sources, Records: records, Batch: f.batch, Seed: f.seed, Timeout: f.timeout, Verify: f.verify}
}

// ingestSeries are the charts of both commands: every run, and per load the
// mean with its confidence interval.
func ingestSeries(withPoints bool) map[string]result.SeriesMeta {
	m := map[string]result.SeriesMeta{
		ingestRunSeries: {
			Title:  "Ingest throughput of every run (warm-up runs hollow, failed runs red)",
			XLabel: "records per source", YLabel: "throughput (records/s)",
		},
	}
	if withPoints {
		m[ingestPointSeries] = result.SeriesMeta{
			Title:  "Ingest throughput per load: mean of the measured runs, 95 % confidence interval (Student t)",
			XLabel: "records per source", YLabel: "throughput (records/s)", Band: "ci",
		}
	}
	return m
}

// ingestEnv is what both commands open before measuring.
type ingestEnv struct {
	a     adapter.Adapter
	db    adapter.DB
	store ingest.Store
	info  adapter.Info
	dsn   string
	dir   string
}

func (e *ingestEnv) close() {
	if e.store != nil {
		e.store.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
}

// openIngest makes the run directory, opens the database (a SQLite file in
// the run directory without --db) and its ingest store.
func openIngest(cmd *cobra.Command, f *ingestFlags, dirName string) (*ingestEnv, error) {
	ctx := cmd.Context()
	dir, dsn, err := runDirFor(f.results, dirName, ingest.Name, f.db)
	if err != nil {
		return nil, err
	}
	e := &ingestEnv{dsn: dsn, dir: dir}
	if e.a, e.db, err = openDB(ctx, e.dsn); err != nil {
		return nil, err
	}
	b, ok := e.db.(ingest.Backend)
	if !ok {
		e.close()
		return nil, usagef("the adapter for %s does not support the ingest workload", adapter.Redact(e.dsn))
	}
	if e.store, err = b.Ingest(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("open the ingest store: %w", err)
	}
	if e.info, err = e.db.Info(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("read database version: %w", err)
	}
	return e, nil
}

// handles returns one recorder handle per source, reused by every run so a
// long sweep does not accumulate handles.
func ingestHandles(s *session, n int) []ingest.BatchRecorder {
	out := make([]ingest.BatchRecorder, n)
	for i := range out {
		out[i] = s.rec.Handle()
	}
	return out
}

func ingestRunPoint(r ingest.RunResult) result.Point {
	return result.Point{
		Series: ingestRunSeries, X: float64(r.Records), Y: r.Throughput,
		Warmup: r.Warmup, Failed: r.Cause(),
		Labels: map[string]string{
			"run":     strconv.Itoa(r.Run),
			"seconds": strconv.FormatFloat(r.Elapsed.Seconds(), 'f', 3, 64),
		},
	}
}

func ingestStatsPoint(p ingest.PointStats) result.Point {
	pt := result.Point{
		Series: ingestPointSeries, X: float64(p.Records), Y: p.Mean,
		SD: p.SD, Lo: p.Lo, Hi: p.Hi, N: p.N,
		Labels: map[string]string{
			"runs":          strconv.Itoa(p.Runs),
			"failed":        strconv.Itoa(p.Failed),
			"warmup_failed": strconv.Itoa(p.WarmupFailed),
		},
	}
	switch {
	case p.N > 0:
	case p.Failed > 0:
		// Nothing measured: the failure is the result at this load.
		pt.Failed = fmt.Sprintf("all %d measured runs failed: %s", p.Failed, p.Cause)
	default:
		// A warm-up run failed and the sweep stopped before measuring.
		pt.Failed = "no run measured: " + p.Cause
	}
	if p.N == 1 {
		pt.Labels["ci"] = "undefined: one measured run"
	}
	if p.Partial {
		pt.Labels["partial"] = "true"
	}
	return pt
}

func newIngestRunCmd() *cobra.Command {
	var f ingestFlags
	var records int64
	c := &cobra.Command{
		Use:   ingest.Name,
		Short: "One ingest run: --sources sources insert --records records each in batches",
		Long: `run empties the ingest table, then --sources sources insert --records
records each, --batch records per batch (one transaction on SQL databases),
all at once and as fast as the database accepts them. Throughput is the
records inserted over the total time, from the common start to the last
batch acknowledged. Each batch's latency is recorded as operation "batch".

Records are 126 bytes by the study's accounting (see docs/ingest.md) and a
function of (--seed, source, index). A run fails on the first failed batch,
on --timeout, or when the stored count differs from what was acknowledged;
the failure is written to the result like any figure, and the exit code is 1.

Results go to results/<time>-ingest-<adapter>/: result.jsonl and report.html.`,
		Example: `  fieldbench run ingest --sources 8 --records 10000 --batch 1000
  fieldbench run ingest --db sqlite:///tmp/in.db --records 330000 --timeout 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc := f.runConfig(records)
			if err := rc.Validate(); err != nil {
				return job.Usage(err)
			}
			return runIngest(cmd, &f, rc)
		},
	}
	f.bind(c)
	c.Flags().Int64Var(&records, "records", ingest.DefaultFrom, "records per source")
	return c
}

func runIngest(cmd *cobra.Command, f *ingestFlags, rc ingest.RunConfig) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	e, err := openIngest(cmd, f, ingest.Name)
	if err != nil {
		return err
	}
	defer e.close()
	h := newHeader(ingest.Name, e.a, e.info, e.dsn, f.seed, ingest.Ops)
	h.Options = map[string]any{
		"command": "run", "sources": rc.Sources, "records": rc.Records, "batch": rc.Batch, "seed": rc.Seed,
		"timeout": rc.Timeout.String(), "verify": rc.Verify, "record_bytes": ingest.RecordBytes,
	}
	h.Series = ingestSeries(false)
	s, es, err := startRun(ctx, e.dir, h, stdout, stderr)
	if err != nil {
		return err
	}
	recs := ingestHandles(s, rc.Sources)
	fmt.Fprintf(stderr, "ingest on %s %s: %d sources × %d records, batches of %d\n",
		e.info.Name, e.info.Version, rc.Sources, rc.Records, rc.Batch)

	var res ingest.RunResult
	if err := e.store.Reset(ctx); err != nil {
		res = ingest.RunResult{Records: rc.Records, Run: 1, Err: fmt.Errorf("reset before the run: %w", err), Interrupted: ctx.Err() != nil}
	} else {
		clock, p := s.startClock(0)
		res = ingest.Run(ctx, e.store, rc, recs)
		res.Run = 1
		err = stopClock(clock, p)
	}
	err = errors.Join(err, es.end())
	if res.Interrupted {
		_ = s.event("interrupted", fmt.Sprintf("after %.1fs", res.Elapsed.Seconds()))
		return errors.Join(err, s.finish(true), errInterrupted)
	}
	err = errors.Join(err, s.point(ingestRunPoint(res)))
	total := float64(rc.Sources) * float64(rc.Records)
	s.extra["records"] = total
	s.extra["sources"] = float64(rc.Sources)
	s.extra["batch_size"] = float64(rc.Batch)
	s.extra["run_seconds"] = res.Elapsed.Seconds()
	if res.Failed() {
		s.extra["run_failed"] = 1
		err = errors.Join(err, s.event("run failed", res.Cause()))
	} else {
		s.extra["throughput_records_per_s"] = math.Round(res.Throughput)
		s.extra["throughput_mb_per_s"] = res.Throughput * ingest.RecordBytes / 1e6
	}
	if err := errors.Join(err, s.finish(false)); err != nil {
		return err
	}
	if res.Failed() {
		return fmt.Errorf("the run failed: %s", res.Cause())
	}
	return nil
}

func newIngestSweepCmd() *cobra.Command {
	var f ingestFlags
	var cfg ingest.SweepConfig
	var onError string
	c := &cobra.Command{
		Use:   ingest.Name,
		Short: "The study's load sweep: --runs runs per load, warm-up runs discarded, 95 % confidence intervals",
		Long: `sweep runs the ingest workload at every load from --from to --to records per
source in steps of --step, --runs times each; before every run the database
is reset to its initial state. The first --warmup-runs runs of each load are
left out; of the others it reports the mean throughput, the standard
deviation and the 95 % confidence interval (Student t, n-1 degrees of
freedom). The defaults are the study's: 10,000 to 330,000 by 10,000, 13 runs
of which 3 warm-up, 8 sources.

A run that fails (an error, --timeout, or a stored count other than what
was acknowledged) is recorded with its cause and left out of the
statistics; the sweep goes on (--on-error continue) or ends there (stop,
exit code 1). Ctrl-C ends it with everything measured so far saved.

One result file holds the whole sweep: a point per run (series ingest-run)
and per load (series ingest-throughput); report.html draws throughput
against records per source with error bars. Give several sweeps' directories
to 'fieldbench report' to compare databases on one chart.`,
		Example: `  fieldbench sweep ingest
  fieldbench sweep ingest --from 10000 --to 100000 --step 30000 --runs 5 --warmup-runs 1
  fieldbench sweep ingest --db sqlite:///tmp/in.db --timeout 2m --on-error stop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Run = f.runConfig(cfg.From)
			cfg.OnError = ingest.OnError(onError)
			if err := cfg.Validate(); err != nil {
				return job.Usage(err)
			}
			return runIngestSweep(cmd, &f, cfg)
		},
	}
	f.bind(c)
	c.Flags().Int64Var(&cfg.From, "from", ingest.DefaultFrom, "first load, records per source")
	c.Flags().Int64Var(&cfg.To, "to", ingest.DefaultTo, "last load, records per source")
	c.Flags().Int64Var(&cfg.Step, "step", ingest.DefaultStep, "load increment, records per source")
	c.Flags().IntVar(&cfg.Runs, "runs", ingest.DefaultRuns, "runs per load, warm-up runs included")
	c.Flags().IntVar(&cfg.WarmupRuns, "warmup-runs", ingest.DefaultWarmupRuns, "first runs of each load left out of the statistics")
	c.Flags().StringVar(&onError, "on-error", string(ingest.DefaultOnError), "after a failed run: continue or stop")
	return c
}

func runIngestSweep(cmd *cobra.Command, f *ingestFlags, cfg ingest.SweepConfig) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	e, err := openIngest(cmd, f, ingest.Name+"-sweep")
	if err != nil {
		return err
	}
	defer e.close()
	loads := cfg.Loads()
	h := newHeader(ingest.Name, e.a, e.info, e.dsn, f.seed, ingest.Ops)
	h.Options = map[string]any{
		"command": "sweep", "sources": cfg.Run.Sources, "batch": cfg.Run.Batch, "seed": cfg.Run.Seed,
		"timeout": cfg.Run.Timeout.String(), "verify": cfg.Run.Verify, "record_bytes": ingest.RecordBytes,
		"from": cfg.From, "to": cfg.To, "step": cfg.Step, "loads": len(loads),
		"runs": cfg.Runs, "warmup_runs": cfg.WarmupRuns, "on_error": string(cfg.OnError),
		"confidence": ingest.Level,
	}
	h.Series = ingestSeries(true)
	// The progress line is written from the clock's goroutine and the
	// per-run lines from this one: an *os.File serializes writes itself,
	// anything else (a test's buffer) gets a lock.
	if _, ok := stderr.(*os.File); !ok {
		stderr = &ingestLockedWriter{w: stderr}
	}
	s, es, err := startRun(ctx, e.dir, h, stdout, stderr)
	if err != nil {
		return err
	}
	recs := ingestHandles(s, cfg.Run.Sources)
	fmt.Fprintf(stderr, "ingest sweep on %s %s: %d loads (%d..%d records per source), %d runs each (%d warm-up), %d sources, batches of %d\n",
		e.info.Name, e.info.Version, len(loads), cfg.From, cfg.To, cfg.Runs, cfg.WarmupRuns, cfg.Run.Sources, cfg.Run.Batch)

	clock, p := s.startClock(0)
	say := func(format string, a ...any) {
		if p.tty { // set once at creation: reading it does not race with the clock
			fmt.Fprint(stderr, "\r\033[K") // clear the live progress line first
		}
		fmt.Fprintf(stderr, format+"\n", a...)
	}
	var points []ingest.PointStats
	out, sweepErr := ingest.Sweep(ctx, e.store, cfg, recs, ingest.SweepHooks{
		Run: func(r ingest.RunResult) error {
			kind := ""
			if r.Warmup {
				kind = " (warm-up)"
			}
			if r.Failed() {
				say("load %d, run %d/%d%s: FAILED: %s", r.Records, r.Run, cfg.Runs, kind, r.Cause())
				if err := s.event("run failed", fmt.Sprintf("load %d run %d: %s", r.Records, r.Run, r.Cause())); err != nil {
					return err
				}
			} else {
				say("load %d, run %d/%d%s: %s records/s in %.2fs", r.Records, r.Run, cfg.Runs, kind, ingestNum(r.Throughput), r.Elapsed.Seconds())
			}
			return s.point(ingestRunPoint(r))
		},
		Point: func(ps ingest.PointStats) error {
			points = append(points, ps)
			return s.point(ingestStatsPoint(ps))
		},
	})
	err = errors.Join(sweepErr, stopClock(clock, p), es.end())

	s.extra["loads"] = float64(len(points))
	s.extra["runs"] = float64(out.Runs)
	s.extra["runs_failed"] = float64(out.Failed)
	s.extra["sources"] = float64(cfg.Run.Sources)
	s.extra["batch_size"] = float64(cfg.Run.Batch)
	if out.Interrupted {
		err = errors.Join(err, s.event("interrupted", fmt.Sprintf("after %d runs", out.Runs)))
	}
	if out.StoppedBy != nil {
		err = errors.Join(err, s.event("sweep stopped", "--on-error stop after a failed run"))
	}
	fmt.Fprintln(stdout)
	if werr := writeIngestTable(stdout, points, cfg); werr != nil {
		err = errors.Join(err, werr)
	}
	if err := errors.Join(err, s.finish(out.Interrupted)); err != nil {
		return err
	}
	switch {
	case out.Interrupted:
		return errInterrupted
	case out.StoppedBy != nil:
		return fmt.Errorf("sweep stopped (--on-error stop) at load %d, run %d: %s", out.StoppedBy.Records, out.StoppedBy.Run, out.StoppedBy.Cause())
	case out.Failed > 0:
		fmt.Fprintf(stderr, "fieldbench: %d of %d runs failed; they are recorded in the result and the report\n", out.Failed, out.Runs)
	}
	return nil
}

// writeIngestTable prints one row per load: the sample size, mean, standard
// deviation, confidence interval (and its half-width relative to the mean,
// the figure the study quotes: ~5 %) and failures.
func writeIngestTable(w io.Writer, points []ingest.PointStats, cfg ingest.SweepConfig) error {
	fmt.Fprintf(w, "ingest throughput (records/s) per load: %d sources, %d runs per load of which %d warm-up, 95 %% CI (Student t)\n",
		cfg.Run.Sources, cfg.Runs, cfg.WarmupRuns)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "records/source\tn\tmean\tsd\t95% CI\t±\tfailed\t")
	for _, p := range points {
		ci, rel, sd := "-", "-", "-"
		if p.CIDefined {
			ci = "[" + ingestNum(p.Lo) + ", " + ingestNum(p.Hi) + "]"
			sd = ingestNum(p.SD)
			if p.Mean > 0 {
				rel = strconv.FormatFloat(100*(p.Hi-p.Mean)/p.Mean, 'f', 1, 64) + "%"
			}
		}
		mean := "-"
		if p.N > 0 {
			mean = ingestNum(p.Mean)
		}
		failed := strconv.Itoa(p.Failed)
		if p.WarmupFailed > 0 {
			failed += fmt.Sprintf(" (+%d warm-up)", p.WarmupFailed)
		}
		if p.Partial {
			failed += " partial"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", ingestNum(float64(p.Records)), p.N, mean, sd, ci, rel, failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var causes []string
	for _, p := range points {
		if p.Cause != "" {
			causes = append(causes, fmt.Sprintf("  load %s: %s", ingestNum(float64(p.Records)), p.Cause))
		}
	}
	if len(causes) > 0 {
		fmt.Fprintf(w, "first failure per load:\n%s\n", strings.Join(causes, "\n"))
	}
	return nil
}

// ingestLockedWriter serializes writes to w.
type ingestLockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *ingestLockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ingestNum formats a figure rounded to an integer with thousands
// separators: 241,433.
func ingestNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func newIngestOpCmd() *cobra.Command {
	var db string
	var source int
	var index int64
	var seed int64
	var count int64
	c := &cobra.Command{
		Use:   ingest.Name,
		Short: "Insert one ingest record or one batch of them, or count the stored records",
		Example: `  fieldbench op ingest insert --db sqlite:///tmp/in.db --source 3 --index 42
  fieldbench op ingest batch --db sqlite:///tmp/in.db --source 3 --index 0 --count 1000
  fieldbench op ingest count --db sqlite:///tmp/in.db`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("op ingest needs an operation: insert, batch or count")
		},
	}
	open := func(cmd *cobra.Command) (adapter.DB, ingest.Store, error) {
		if db == "" {
			return nil, nil, usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
		}
		_, d, err := openDB(cmd.Context(), db)
		if err != nil {
			return nil, nil, err
		}
		b, ok := d.(ingest.Backend)
		if !ok {
			d.Close()
			return nil, nil, usagef("the adapter for %s does not support the ingest workload", adapter.Redact(db))
		}
		st, err := b.Ingest(cmd.Context())
		if err != nil {
			d.Close()
			return nil, nil, fmt.Errorf("open the ingest store: %w", err)
		}
		return d, st, nil
	}
	insert := &cobra.Command{
		Use:   "insert",
		Short: "Insert record --index of source --source (the one a run inserts there) and print it as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if source < 0 || source > math.MaxInt32 {
				return usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, source)
			}
			if index < 0 || index >= ingest.MaxRecords {
				return usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, index)
			}
			d, st, err := open(cmd)
			if err != nil {
				return err
			}
			defer d.Close()
			defer st.Close()
			r := ingest.Generate(seed, source, index)
			if err := st.InsertBatch(cmd.Context(), []ingest.Record{r}); err != nil {
				return fmt.Errorf("insert: %w", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	insert.Flags().IntVar(&source, "source", 0, "source number, from 0")
	insert.Flags().Int64Var(&index, "index", 0, "record index within the source, from 0")
	insert.Flags().Int64Var(&seed, "seed", ingest.DefaultSeed, "seed of the records")
	batch := &cobra.Command{
		Use:   "batch",
		Short: `Insert records --index..--index+--count-1 of --source as one batch (as a run does) and print {"source","from","count","records_stored"}`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if db == "" {
				return usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
			}
			if !fl.Changed("source") || !fl.Changed("index") || !fl.Changed("count") {
				return usagef("op ingest batch needs --source, --index and --count (records --index..--index+--count-1 of source --source)")
			}
			switch {
			case source < 0 || source > math.MaxInt32:
				return usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, source)
			case index < 0 || index >= ingest.MaxRecords:
				return usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, index)
			case count < 1:
				return usagef("--count must be at least 1 (got %d)", count)
			case count > ingest.MaxRecords-index:
				return usagef("--index %d --count %d goes past the last record index %d of a source: --count must be at most %d",
					index, count, ingest.MaxRecords-1, ingest.MaxRecords-index)
			}
			d, st, err := open(cmd)
			if err != nil {
				return err
			}
			defer d.Close()
			defer st.Close()
			recs := make([]ingest.Record, count)
			ingest.Fill(recs, seed, source, index)
			if err := st.InsertBatch(cmd.Context(), recs); err != nil {
				return fmt.Errorf("insert batch of records %d..%d of source %d: %w", index, index+count-1, source, err)
			}
			n, err := st.Count(cmd.Context())
			if err != nil {
				return fmt.Errorf("count: %w", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
				Source        int   `json:"source"`
				From          int64 `json:"from"`
				Count         int64 `json:"count"`
				RecordsStored int64 `json:"records_stored"`
			}{source, index, count, n})
		},
	}
	batch.Flags().IntVar(&source, "source", 0, "source number, from 0 (required)")
	batch.Flags().Int64Var(&index, "index", 0, "index of the first record within the source, from 0 (required)")
	batch.Flags().Int64Var(&count, "count", 0, "records in the batch (required)")
	batch.Flags().Int64Var(&seed, "seed", ingest.DefaultSeed, "seed of the records")
	countCmd := &cobra.Command{
		Use:   "count",
		Short: `Print the number of stored records as JSON: {"records": N}`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, st, err := open(cmd)
			if err != nil {
				return err
			}
			defer d.Close()
			defer st.Close()
			n, err := st.Count(cmd.Context())
			if err != nil {
				return fmt.Errorf("count: %w", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]int64{"records": n})
		},
	}
	for _, sub := range []*cobra.Command{insert, batch, countCmd} {
		sub.Flags().StringVar(&db, "db", "", "database DSN (required), e.g. sqlite:///tmp/in.db")
	}
	c.AddCommand(insert, batch, countCmd)
	return c
}

// newIngestGenerateCmd writes the records a run inserts as CSV, so a native
// bulk loader can load the very same rows (scripts/compare-native.sh).
func newIngestGenerateCmd() *cobra.Command {
	var sources int
	var records, seed int64
	var out string
	c := &cobra.Command{
		Use:     "ingest",
		Short:   "Write the records a run inserts (sources x records) as records.csv",
		Example: `  fieldbench generate ingest --sources 8 --records 10000 --out data/`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("generate ingest needs --out DIR")
			}
			if sources < 1 || records < 1 {
				return usagef("--sources and --records must be at least 1")
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return usagef("output directory %s is not writable: %v", out, err)
			}
			path := filepath.Join(out, "records.csv")
			f, err := os.Create(path)
			if err != nil {
				return usagef("cannot write %s: %v", path, err)
			}
			if err := errors.Join(ingest.WriteCSV(f, seed, sources, records), f.Close()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d records (%d sources x %d) to %s\n", int64(sources)*records, sources, records, path)
			return nil
		},
	}
	c.Flags().IntVar(&sources, "sources", 8, "sources")
	c.Flags().Int64Var(&records, "records", 10000, "records per source")
	c.Flags().Int64Var(&seed, "seed", 1, "seed of the records")
	c.Flags().StringVar(&out, "out", "", "directory to write records.csv to (required)")
	return c
}
