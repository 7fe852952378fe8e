package job

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
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Series names of the ingest result points (see result.Point).
const (
	ingestRunSeries   = "ingest-run"
	ingestPointSeries = "ingest-throughput"
)

func init() { Register(ingest.Name, func() Job { return newIngestJob() }) }

// ingestJob is the ingest workload (seed 003): its options are its fields.
type ingestJob struct {
	base
	db      string
	results string
	out     string
	sources int
	records int64
	batch   int
	seed    int64
	timeout time.Duration
	verify  bool
	rate    float64
	// sweep
	from, to, step int64
	runs, warmups  int
	onError        string
	sharding       shardFlags
	// op
	source int
	index  int64
	count  int64
}

// newIngestJob declares every option once. Before the job layer, generate,
// run, sweep and the op operations each declared their own flags; the
// defaults always agreed (8 sources, 10,000 records, seed 1), the help texts
// did not: generate said only "sources" and "seed of the records", op said
// "(required)" per operation. One text per option now covers every command
// that has it.
func newIngestJob() *ingestJob {
	j := &ingestJob{base: newBase(ingest.Name)}
	o := j.opts
	o.String(&j.db, "db", "", "database DSN, e.g. sqlite:///tmp/fb.db (default: a new SQLite file in the run directory; required by op)", "run", "sweep", "op")
	o.String(&j.results, "results", "results", "directory under which the run directory is created", "run", "sweep")
	o.Int(&j.sources, "sources", ingest.DefaultSources, "concurrent sources, each inserting its own records", "generate", "run", "sweep")
	o.Int64(&j.records, "records", ingest.DefaultFrom, "records per source", "generate", "run")
	o.Int(&j.batch, "batch", ingest.DefaultBatch, "records per batch (one transaction on SQL databases)", "run", "sweep")
	o.Int64(&j.seed, "seed", ingest.DefaultSeed, "seed of the records (a record is a function of seed, source and index)", "generate", "run", "sweep", "op insert", "op batch")
	o.Duration(&j.timeout, "timeout", 10*time.Minute, "a run taking longer fails with cause timeout (0 = no limit)", "run", "sweep")
	o.Bool(&j.verify, "verify", true, "count the stored records after each run (untimed); a wrong count fails the run", "run", "sweep")
	o.Float64(&j.rate, "rate", 0, "open loop: target batches per second over all sources, the sources taking turns; a batch's latency runs from its intended start (0 = closed loop: each source sends its next batch when the previous one is acknowledged)", "run", "sweep")
	o.Int64(&j.from, "from", ingest.DefaultFrom, "first load, records per source", "sweep")
	o.Int64(&j.to, "to", ingest.DefaultTo, "last load, records per source", "sweep")
	o.Int64(&j.step, "step", ingest.DefaultStep, "load increment, records per source", "sweep")
	o.Int(&j.runs, "runs", ingest.DefaultRuns, "runs per load, warm-up runs included", "sweep")
	o.Int(&j.warmups, "warmup-runs", ingest.DefaultWarmupRuns, "first runs of each load left out of the statistics", "sweep")
	o.String(&j.onError, "on-error", string(ingest.DefaultOnError), "after a failed run: continue or stop", "sweep")
	j.sharding.declare(o, "the sources (--rate stays the whole run's: each source keeps its turn in the common schedule); shard 0 empties the table before --start-at", "run", "sweep")
	j.sharding.declareStart(o, "run", "sweep")
	j.sharding.declareBarrier(o, "run", "sweep")
	o.String(&j.out, "out", "", "directory to write records.csv to (required)", "generate")
	o.Int(&j.source, "source", 0, "source number, from 0 (required by batch)", "op insert", "op batch")
	o.Int64(&j.index, "index", 0, "index of the record (batch: of its first record) within the source, from 0 (required by batch)", "op insert", "op batch")
	o.Int64(&j.count, "count", 0, "records in the batch (required)", "op batch")
	return j
}

func (j *ingestJob) Commands() []Command {
	return []Command{
		{
			Verb:    "generate",
			Short:   "Write the records a run inserts (sources x records) as records.csv",
			Example: `  fieldbench generate ingest --sources 8 --records 10000 --out data/`,
			Run:     j.generate,
		},
		{
			Verb:  "run",
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

--rate runs open loop: --rate batches per second over all sources, the
sources taking turns (each one every --sources/--rate seconds), none sent
before its intended start and each batch's latency measured from that
start, so a database that falls behind shows its backlog as latency; the
throughput then says whether it kept up. There is no --duration or
--warmup: a run is a fixed number of records and its time is what is
measured; a sweep leaves out whole warm-up runs (--warmup-runs) instead.

Results go to results/<time>-ingest-<adapter>/: result.jsonl and report.html.`,
			Example: `  fieldbench run ingest --sources 8 --records 10000 --batch 1000
  fieldbench run ingest --db sqlite:///tmp/in.db --records 330000 --timeout 5m
  fieldbench run ingest --sources 4 --records 20000 --batch 100 --rate 500`,
			Run:      j.run,
			Measured: true,
		},
		{
			Verb:  "sweep",
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
--rate runs every run open loop (see 'fieldbench run ingest --help').

One result file holds the whole sweep: a point per run (series ingest-run)
and per load (series ingest-throughput); report.html draws throughput
against records per source with error bars. Give several sweeps' directories
to 'fieldbench report' to compare databases on one chart.`,
			Example: `  fieldbench sweep ingest
  fieldbench sweep ingest --from 10000 --to 100000 --step 30000 --runs 5 --warmup-runs 1
  fieldbench sweep ingest --db sqlite:///tmp/in.db --timeout 2m --on-error stop`,
			Run:      j.sweep,
			Measured: true,
		},
		{
			Verb:  "op",
			Short: "Insert one ingest record or one batch of them, or count the stored records",
			Example: `  fieldbench op ingest insert --db sqlite:///tmp/in.db --source 3 --index 42
  fieldbench op ingest batch --db sqlite:///tmp/in.db --source 3 --index 0 --count 1000
  fieldbench op ingest count --db sqlite:///tmp/in.db`,
			// Run answers op without an operation (the CLI's generic
			// message would list the operations without "or").
			Run: func(context.Context, *Env) error {
				return Usagef("op ingest needs an operation: insert, batch or count")
			},
			Subs: []Command{
				{Verb: "op insert", Short: "Insert record --index of source --source (the one a run inserts there) and print it as JSON", Run: j.opInsert},
				{Verb: "op batch", Short: `Insert records --index..--index+--count-1 of --source as one batch (as a run does) and print {"source","from","count","records_stored"}`, Run: j.opBatch},
				{Verb: "op count", Short: `Print the number of stored records as JSON: {"records": N}`, Run: j.opCount},
			},
		},
	}
}

func (j *ingestJob) runConfig(records int64) ingest.RunConfig {
	return ingest.RunConfig{Sources: j.sources, Records: records, Batch: j.batch, Seed: j.seed, Timeout: j.timeout, Verify: j.verify, Rate: j.rate}
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

// ingestDB is what run and sweep open before measuring.
type ingestDB struct {
	a     adapter.Adapter
	db    adapter.DB
	store ingest.Store
	info  adapter.Info
	dsn   string
	dir   string
}

func (e *ingestDB) close() {
	if e.store != nil {
		e.store.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
}

// ingestStore opens the ingest store of an open database.
func ingestStore(ctx context.Context, db adapter.DB, dsn string) (ingest.Store, error) {
	b, err := adapter.Family[ingest.Backend](db, dsn, ingest.Name)
	if err != nil {
		return nil, Usage(err)
	}
	st, err := b.Ingest(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the ingest store: %w", err)
	}
	return st, nil
}

// open makes the run directory, opens the database (a SQLite file in the
// run directory without --db) and its ingest store.
func (j *ingestJob) open(ctx context.Context, dirName string) (*ingestDB, error) {
	dir, dsn, err := runDirFor(j.results, dirName, ingest.Name, j.db)
	if err != nil {
		return nil, err
	}
	e := &ingestDB{dsn: dsn, dir: dir}
	if e.a, e.db, err = OpenDB(ctx, e.dsn); err != nil {
		removeIfEmpty(dir)
		return nil, err
	}
	if err := verifiable(e.a, j.verify); err != nil {
		e.close()
		return nil, err
	}
	if e.store, err = ingestStore(ctx, e.db, e.dsn); err != nil {
		e.close()
		return nil, err
	}
	if e.info, err = e.db.Info(ctx); err != nil {
		e.close()
		return nil, fmt.Errorf("read database version: %w", err)
	}
	return e, nil
}

// ingestHandles returns one recorder handle per source, reused by every run
// so a long sweep does not accumulate handles.
func ingestHandles(s *Session, n int) []ingest.BatchRecorder {
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

// ingestShard resolves the shard options of run and sweep: the shard, the
// common start, and this shard's sources set into rc.
func (j *ingestJob) ingestShard(rc *ingest.RunConfig, sweep bool) (shard, time.Time, error) {
	sh, at, err := j.sharding.resolve(j.db)
	if err != nil || !sh.sharded() {
		return sh, at, err
	}
	lo, hi := sh.share(rc.Sources)
	if lo == hi {
		return sh, at, Usagef("shard %d/%d: %d sources leave it none (give more --sources, or a --split)", sh.i, sh.n, rc.Sources)
	}
	switch {
	case sweep && j.sharding.barrier == "":
		return sh, at, Usagef("a sharded sweep needs --barrier DIR (a directory every shard sees): the shards meet there before every run, so the table is emptied once, after all have finished")
	case !sweep && at.IsZero() && j.sharding.barrier == "":
		return sh, at, Usagef("a sharded ingest run needs --start-at TIME or --barrier DIR: shard 0 empties the table before the others insert")
	}
	rc.Lo, rc.Hi = lo, hi
	return sh, at, nil
}

// ingestBarrier is the shards' meeting point in --barrier (nil without).
func (j *ingestJob) ingestBarrier(sh shard, h result.Header, at time.Time, notice io.Writer) (*dirBarrier, error) {
	if j.sharding.barrier == "" || !sh.sharded() {
		return nil, nil
	}
	key, err := runKey(h, at)
	if err != nil {
		return nil, err
	}
	return newDirBarrier(j.sharding.barrier, "ingest-"+key, sh, shardWaitLimit, notice)
}

// resetShards empties the table once for all shards before the measured
// run: through the barrier when there is one (shard 0 resets once every
// shard has arrived), else by shard 0 alone, which must be done before the
// common start (the others start inserting then).
func resetShards(ctx context.Context, sh shard, b *dirBarrier, at time.Time, store ingest.Store) error {
	if b != nil {
		return b.resetOnce(ctx, "start", store.Reset)
	}
	if sh.i != 0 {
		return nil
	}
	if err := store.Reset(ctx); err != nil {
		return fmt.Errorf("reset before the run: %w", err)
	}
	if late := time.Since(at); late > 0 {
		return fmt.Errorf("shard 0 emptied the table %s after --start-at: the other shards may have inserted before, so the run would not start from an empty table; choose a later --start-at", late.Round(time.Millisecond))
	}
	return nil
}

// noReset is a store whose Reset does nothing: a shard's run, whose table
// was emptied once for all shards before it started.
type noReset struct{ ingest.Store }

func (noReset) Reset(context.Context) error { return nil }

func (j *ingestJob) run(ctx context.Context, env *Env) error {
	rc := j.runConfig(j.records)
	if err := rc.Validate(); err != nil {
		return Usage(err)
	}
	sh, startAt, err := j.ingestShard(&rc, false)
	if err != nil {
		return err
	}
	stderr := env.Stderr
	e, err := j.open(ctx, ingest.Name)
	if err != nil {
		return err
	}
	defer e.close()
	h := newHeader(env, ingest.Name, e.a, e.info, e.dsn, j.seed, ingest.Ops)
	h.Options = map[string]any{
		"command": "run", "sources": rc.Sources, "records": rc.Records, "batch": rc.Batch, "seed": rc.Seed,
		"timeout": rc.Timeout.String(), "verify": rc.Verify, "record_bytes": ingest.RecordBytes,
		"rate": rc.Rate, "loop": loopName(rc.Rate),
	}
	h.Series = ingestSeries(false)
	lo, hi := rc.Span()
	sh.record(&h, "sources", lo, hi)
	store := e.store
	if sh.sharded() {
		b, err := j.ingestBarrier(sh, h, startAt, stderr)
		if err != nil {
			return err
		}
		if err := resetShards(ctx, sh, b, startAt, store); err != nil {
			return err
		}
		store = noReset{store}
	}
	if err := startTogether(ctx, &h, startAt, func(s string) { fmt.Fprint(stderr, s) }); err != nil {
		return err
	}
	s, err := startRun(ctx, env, e.dir, h, e.db)
	if err != nil {
		return err
	}
	markStartLate(s, startAt)
	recs := ingestHandles(s, hi-lo)
	fmt.Fprintf(stderr, "ingest on %s %s: %d sources × %d records, batches of %d, %s\n",
		e.info.Name, e.info.Version, hi-lo, rc.Records, rc.Batch, ingestLoop(rc.Rate))

	res, err := ingestOnce(ctx, store, rc, recs, func() func() error {
		clock, p := s.startClock(0)
		return func() error { return stopClock(clock, p) }
	})
	err = errors.Join(err, env.observer().Ended())
	if res.Interrupted {
		_ = s.Event("interrupted", fmt.Sprintf("after %.1fs", res.Elapsed.Seconds()))
		return errors.Join(err, s.Finish(true), ErrInterrupted)
	}
	err = errors.Join(err, s.Point(ingestRunPoint(res)))
	s.SetExtra("records", float64(hi-lo)*float64(rc.Records))
	s.SetExtra("sources", float64(hi-lo))
	s.SetExtra("batch_size", float64(rc.Batch))
	s.SetExtra("run_seconds", res.Elapsed.Seconds())
	if res.Failed() {
		s.SetExtra("run_failed", 1)
		err = errors.Join(err, s.Event("run failed", res.Cause()))
	} else {
		s.SetExtra("throughput_records_per_s", math.Round(res.Throughput))
		s.SetExtra("throughput_mb_per_s", res.Throughput*ingest.RecordBytes/1e6)
	}
	if err := errors.Join(err, s.Finish(false)); err != nil {
		return err
	}
	if res.Failed() {
		return fmt.Errorf("the run failed: %s", res.Cause())
	}
	return nil
}

// ingestLoop says how the sources are driven, for the start line.
func ingestLoop(rate float64) string {
	if rate > 0 {
		return fmt.Sprintf("open loop at %g batches/s", rate)
	}
	return "closed loop"
}

// ingestOnce empties the store and does one run with the clock ticking:
// startClock starts it and returns its stop, whose error (an interval that
// could not be written to the result file) is returned beside the run's
// result. It used to be assigned to a shadowed err and lost (issue 13,
// point 9), so a run whose intervals were not saved exited 0.
func ingestOnce(ctx context.Context, store ingest.Store, rc ingest.RunConfig, recs []ingest.BatchRecorder, startClock func() (stop func() error)) (ingest.RunResult, error) {
	if err := store.Reset(ctx); err != nil {
		return ingest.RunResult{Records: rc.Records, Run: 1, Err: fmt.Errorf("reset before the run: %w", err), Interrupted: ctx.Err() != nil}, nil
	}
	stop := startClock()
	res := ingest.Run(ctx, store, rc, recs)
	res.Run = 1
	return res, stop()
}

func (j *ingestJob) sweepConfig() ingest.SweepConfig {
	return ingest.SweepConfig{
		Run: j.runConfig(j.from), From: j.from, To: j.to, Step: j.step,
		Runs: j.runs, WarmupRuns: j.warmups, OnError: ingest.OnError(j.onError),
	}
}

func (j *ingestJob) sweep(ctx context.Context, env *Env) error {
	cfg := j.sweepConfig()
	if err := cfg.Validate(); err != nil {
		return Usage(err)
	}
	sh, startAt, err := j.ingestShard(&cfg.Run, true)
	if err != nil {
		return err
	}
	stdout, stderr := env.Stdout, env.Stderr
	e, err := j.open(ctx, ingest.Name+"-sweep")
	if err != nil {
		return err
	}
	defer e.close()
	loads := cfg.Loads()
	h := newHeader(env, ingest.Name, e.a, e.info, e.dsn, j.seed, ingest.Ops)
	h.Options = map[string]any{
		"command": "sweep", "sources": cfg.Run.Sources, "batch": cfg.Run.Batch, "seed": cfg.Run.Seed,
		"timeout": cfg.Run.Timeout.String(), "verify": cfg.Run.Verify, "record_bytes": ingest.RecordBytes,
		"from": cfg.From, "to": cfg.To, "step": cfg.Step, "loads": len(loads),
		"runs": cfg.Runs, "warmup_runs": cfg.WarmupRuns, "on_error": string(cfg.OnError),
		"confidence": ingest.Level, "rate": cfg.Run.Rate, "loop": loopName(cfg.Run.Rate),
	}
	h.Series = ingestSeries(true)
	lo, hi := cfg.Run.Span()
	sh.record(&h, "sources", lo, hi)
	var hooks ingest.SweepHooks
	// A shard that cannot meet the others (one died, or stopped on a
	// failed run) ends the sweep: every later run would wait as long.
	var apart error
	sctx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	if sh.sharded() {
		b, err := j.ingestBarrier(sh, h, startAt, stderr)
		if err != nil {
			return err
		}
		// Every run of the sweep starts from an empty table: the shards
		// meet before each, and shard 0 empties it once all are there.
		hooks.Reset = func(ctx context.Context, records int64, run int) error {
			err := b.resetOnce(ctx, fmt.Sprintf("load-%d-run-%d", records, run), e.store.Reset)
			if err != nil && ctx.Err() == nil {
				apart = fmt.Errorf("load %d, run %d: the shards did not meet: %w", records, run, err)
				stopSweep()
			}
			return err
		}
	}
	if err := startTogether(ctx, &h, startAt, func(s string) { fmt.Fprint(stderr, s) }); err != nil {
		return err
	}
	// The progress line is written from the clock's goroutine and the
	// per-run lines from this one: an *os.File serializes writes itself,
	// anything else (a test's buffer) gets a lock.
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	senv := *env
	senv.Stderr = stderr
	s, err := startRun(ctx, &senv, e.dir, h, e.db)
	if err != nil {
		return err
	}
	markStartLate(s, startAt)
	recs := ingestHandles(s, hi-lo)
	fmt.Fprintf(stderr, "ingest sweep on %s %s: %d loads (%d..%d records per source), %d runs each (%d warm-up), %d sources, batches of %d, %s\n",
		e.info.Name, e.info.Version, len(loads), cfg.From, cfg.To, cfg.Runs, cfg.WarmupRuns, hi-lo, cfg.Run.Batch, ingestLoop(cfg.Run.Rate))

	clock, p := s.startClock(0)
	say := func(format string, a ...any) {
		if p.tty { // set once at creation: reading it does not race with the clock
			fmt.Fprint(stderr, "\r\033[K") // clear the live progress line first
		}
		fmt.Fprintf(stderr, format+"\n", a...)
	}
	var points []ingest.PointStats
	hooks.Run = func(r ingest.RunResult) error {
		kind := ""
		if r.Warmup {
			kind = " (warm-up)"
		}
		if r.Failed() {
			say("load %d, run %d/%d%s: FAILED: %s", r.Records, r.Run, cfg.Runs, kind, r.Cause())
			if err := s.Event("run failed", fmt.Sprintf("load %d run %d: %s", r.Records, r.Run, r.Cause())); err != nil {
				return err
			}
		} else {
			say("load %d, run %d/%d%s: %s records/s in %.2fs", r.Records, r.Run, cfg.Runs, kind, ingestNum(r.Throughput), r.Elapsed.Seconds())
		}
		return s.Point(ingestRunPoint(r))
	}
	hooks.Point = func(ps ingest.PointStats) error {
		points = append(points, ps)
		return s.Point(ingestStatsPoint(ps))
	}
	out, sweepErr := ingest.Sweep(sctx, e.store, cfg, recs, hooks)
	err = errors.Join(sweepErr, stopClock(clock, p), env.observer().Ended())
	if apart != nil {
		err = errors.Join(err, s.Event("shards apart", apart.Error()), apart)
	}

	s.SetExtra("loads", float64(len(points)))
	s.SetExtra("runs", float64(out.Runs))
	s.SetExtra("runs_failed", float64(out.Failed))
	s.SetExtra("sources", float64(hi-lo))
	s.SetExtra("batch_size", float64(cfg.Run.Batch))
	if out.Interrupted {
		err = errors.Join(err, s.Event("interrupted", fmt.Sprintf("after %d runs", out.Runs)))
	}
	if out.StoppedBy != nil {
		err = errors.Join(err, s.Event("sweep stopped", "--on-error stop after a failed run"))
	}
	fmt.Fprintln(stdout)
	if werr := writeIngestTable(stdout, points, cfg); werr != nil {
		err = errors.Join(err, werr)
	}
	if err := errors.Join(err, s.Finish(out.Interrupted)); err != nil {
		return err
	}
	switch {
	case out.Interrupted:
		return ErrInterrupted
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

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
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

// openOp opens --db and its ingest store for an op operation.
// openOp opens --db for an operation; open is OpenDB for the writes (they
// may start a database) and OpenExistingDB for count.
func (j *ingestJob) openOp(ctx context.Context, open func(context.Context, string) (adapter.Adapter, adapter.DB, error)) (adapter.DB, ingest.Store, error) {
	if j.db == "" {
		return nil, nil, Usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
	}
	_, d, err := open(ctx, j.db)
	if err != nil {
		return nil, nil, err
	}
	st, err := ingestStore(ctx, d, j.db)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, st, nil
}

func (j *ingestJob) opInsert(ctx context.Context, env *Env) error {
	if j.source < 0 || j.source > math.MaxInt32 {
		return Usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, j.source)
	}
	if j.index < 0 || j.index >= ingest.MaxRecords {
		return Usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, j.index)
	}
	d, st, err := j.openOp(ctx, OpenDB)
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	r := ingest.Generate(j.seed, j.source, j.index)
	if err := st.InsertBatch(ctx, []ingest.Record{r}); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(r)
}

func (j *ingestJob) opBatch(ctx context.Context, env *Env) error {
	source, index, count := j.source, j.index, j.count
	if j.db == "" {
		return Usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
	}
	if !j.opts.Changed("source") || !j.opts.Changed("index") || !j.opts.Changed("count") {
		return Usagef("op ingest batch needs --source, --index and --count (records --index..--index+--count-1 of source --source)")
	}
	switch {
	case source < 0 || source > math.MaxInt32:
		return Usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, source)
	case index < 0 || index >= ingest.MaxRecords:
		return Usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, index)
	case count < 1:
		return Usagef("--count must be at least 1 (got %d)", count)
	case count > ingest.MaxRecords-index:
		return Usagef("--index %d --count %d goes past the last record index %d of a source: --count must be at most %d",
			index, count, ingest.MaxRecords-1, ingest.MaxRecords-index)
	}
	d, st, err := j.openOp(ctx, OpenDB)
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	recs := make([]ingest.Record, count)
	ingest.Fill(recs, j.seed, source, index)
	if err := st.InsertBatch(ctx, recs); err != nil {
		return fmt.Errorf("insert batch of records %d..%d of source %d: %w", index, index+count-1, source, err)
	}
	n, err := st.Count(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(struct {
		Source        int   `json:"source"`
		From          int64 `json:"from"`
		Count         int64 `json:"count"`
		RecordsStored int64 `json:"records_stored"`
	}{source, index, count, n})
}

func (j *ingestJob) opCount(ctx context.Context, env *Env) error {
	d, st, err := j.openOp(ctx, openExisting(ingest.Name, "ingest records"))
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	n, err := st.Count(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(map[string]int64{"records": n})
}

// generate writes the records a run inserts as CSV, so a native bulk loader
// can load the very same rows (scripts/compare-native.sh).
func (j *ingestJob) generate(ctx context.Context, env *Env) error {
	if j.out == "" {
		return Usagef("generate ingest needs --out DIR")
	}
	if j.sources < 1 || j.records < 1 {
		return Usagef("--sources and --records must be at least 1")
	}
	if err := os.MkdirAll(j.out, 0o755); err != nil {
		return Usagef("output directory %s is not writable: %v", j.out, err)
	}
	path := filepath.Join(j.out, "records.csv")
	f, err := os.Create(path)
	if err != nil {
		return Usagef("cannot write %s: %v", path, err)
	}
	if err := errors.Join(ingest.WriteCSV(f, j.seed, j.sources, j.records), f.Close()); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %d records (%d sources x %d) to %s\n", int64(j.sources)*j.records, j.sources, j.records, path)
	return nil
}

// Traits: a rate-search step inserts, from each source, as many batches as
// its turn at the rate (--rate batches/s over all sources) comes round in
// the step; each run empties the table first, so every step starts alike.
func (j *ingestJob) Traits() Traits {
	return Traits{SizeStep: func(rate float64, d time.Duration) map[string]string {
		sources := int64(max(j.sources, 1))
		batches := (workFor(rate, d, sources) + sources - 1) / sources
		return map[string]string{"records": strconv.FormatInt(batches*int64(max(j.batch, 1)), 10)}
	}}
}

// CheckRun checks the run's options before anything starts (RunChecker).
func (j *ingestJob) CheckRun() error {
	rc := j.runConfig(j.records)
	if err := rc.Validate(); err != nil {
		return Usage(err)
	}
	_, _, err := j.ingestShard(&rc, false)
	return err
}
