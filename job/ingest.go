package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload"
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
	retry   workload.Retry
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
	o.Rate(&j.rate, "rate", "batches per second", "open loop: target batches per second over all sources, the sources taking turns; a batch's latency runs from its intended start (0 = closed loop: each source sends its next batch when the previous one is acknowledged)", "run", "sweep")
	o.Int64(&j.from, "from", ingest.DefaultFrom, "first load, records per source", "sweep")
	o.Int64(&j.to, "to", ingest.DefaultTo, "last load, records per source", "sweep")
	o.Int64(&j.step, "step", ingest.DefaultStep, "load increment, records per source", "sweep")
	o.Int(&j.runs, "runs", ingest.DefaultRuns, "runs per load, warm-up runs included", "sweep")
	o.Int(&j.warmups, "warmup-runs", ingest.DefaultWarmupRuns, "first runs of each load left out of the statistics", "sweep")
	o.String(&j.onError, "on-error", string(ingest.DefaultOnError), "after a failed run: continue or stop", "sweep")
	declareRetry(o, &j.retry, "batch (the same records: harmless where an insert overwrites, refused on its keys where a batch that landed is sent again)", "run", "sweep")
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
	return ingest.RunConfig{Sources: j.sources, Records: records, Batch: j.batch, Seed: j.seed, Timeout: j.timeout, Verify: j.verify, Rate: j.rate, Retry: j.retry}
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
	p := result.Point{
		Series: ingestRunSeries, X: float64(r.Records), Y: r.Throughput,
		Warmup: r.Warmup, Failed: r.Cause(),
		Labels: map[string]string{
			"run":     strconv.Itoa(r.Run),
			"seconds": strconv.FormatFloat(r.Elapsed.Seconds(), 'f', 3, 64),
		},
	}
	if r.Retries > 0 {
		p.Labels["retries"] = strconv.FormatInt(r.Retries, 10)
		p.Labels["recovered"] = strconv.FormatInt(r.Recovered, 10)
	}
	return p
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
	lo, hi, err := sh.everyShare(rc.Sources, "sources", "--sources")
	if err != nil {
		return sh, at, err
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
	stop := heartbeat(env.Stderr, writtenSoFar(path))
	st, err := ingest.WriteCSV(ctx, f, j.seed, j.sources, j.records)
	err = errors.Join(err, f.Close())
	stop()
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s may hold part of the records", ErrInterrupted, path)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s\n\n", path)
	return st.Write(env.Stdout)
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

// check checks the options of run and sweep (commandChecker).
func (j *ingestJob) check(verb string) error {
	switch verb {
	case "run":
		return j.CheckRun()
	case "sweep":
		return j.CheckSweep()
	}
	return nil
}
