package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func init() { Register(microblog.Name, func() Job { return newMicroblogJob() }) }

// microblogJob is the microblog workload (seed 000): its options are its
// fields.
type microblogJob struct {
	base
	datasetOpts
	out      string
	users    int
	model    string
	reads    string // --timeline-reads
	clients  int
	duration time.Duration
	warmup   time.Duration
	rate     float64
	mix      string
	matEvery time.Duration
	retry    workload.Retry
	user     int64
	body     string
}

func newMicroblogJob() *microblogJob {
	j := &microblogJob{base: newBase(microblog.Name)}
	o := j.opts
	o.String(&j.db, "db", "", "database DSN, e.g. sqlite:///tmp/fb.db (default: a new SQLite file in the run directory; required by op)", "load", "run", "op")
	o.Int(&j.users, "users", microblog.DefaultUsers, "users in the dataset (400 gives ~10,080 follows, ~3,540 tweets)", "generate", "load", "run")
	o.Int64(&j.seed, "seed", 1, "seed of the dataset and of the clients' choices", "generate", "load", "run")
	o.String(&j.model, "model", string(microblog.Denormalized), "data model: denormalized, normalized or async", "load", "run")
	o.String(&j.reads, "timeline-reads", string(microblog.BodyReadsIn), "normalized model: how a userline or timeline fetches its tweets' bodies: in (one multi-key request, WHERE id IN or $in) or separate (one read per tweet, all in flight at once: the study's up to 50 extra reads); Cassandra, MongoDB, HBase and CouchDB (the SQL adapters join)", "run", "op")
	o.Int(&j.clients, "clients", microblog.DefaultClients, "concurrent clients, each simulating one user", "run")
	o.Duration(&j.duration, "duration", 4*time.Minute, "run time, warm-up included", "run")
	o.Duration(&j.warmup, "warmup", 0, "time at the start excluded from the summary (shaded in the report)", "run")
	o.Rate(&j.rate, "rate", "operations per second", "open loop: target operations per second over all clients (0 = closed loop)", "run")
	o.String(&j.mix, "mix", microblog.DefaultMix, "operation weights, e.g. post=1,userline=2,timeline=2", "run")
	o.Duration(&j.matEvery, "materialize-every", 100*time.Millisecond, "async model: pause of the background materializer when it has caught up", "run")
	declareRetry(o, &j.retry, "operation (a post as a new tweet)", "run")
	j.sharding.declare(o, "the clients and of --rate in run (shard 0 loads the dataset, the others wait for it), of the users in generate and load (users I·U/N+1..(I+1)·U/N with the follows of which they are the followee and the tweets they wrote, generated in memory that grows with the part; load: every adapter but null, whose memory no other process shares)", "run", "load", "generate")
	j.sharding.declareStart(o, "run")
	o.String(&j.results, "results", "results", "directory under which the run directory is created (load: only without --db)", "load", "run")
	o.String(&j.out, "out", "", "directory to write the CSV files to (required)", "generate")
	o.Int64(&j.user, "user", 0, "user id (1..users)", "op")
	o.String(&j.body, "body", "", "text of the tweet (at most 140 characters; default: a generated one)", "op post")
	return j
}

func (j *microblogJob) Commands() []Command {
	op := func(name, short string) Command {
		return Command{Verb: "op " + name, Short: short, Run: func(ctx context.Context, env *Env) error { return j.runOp(ctx, env, name) }}
	}
	return []Command{
		{
			Verb:    "generate",
			Short:   "Write the microblog dataset as CSV and print its statistics",
			Example: `  fieldbench generate microblog --users 400 --seed 1 --out data/`,
			Run:     j.generate,
		},
		{
			Verb:  "load",
			Short: "Populate a database with the microblog dataset",
			Long: `load generates the dataset for --users and --seed and writes it into the
database in the chosen data model, reporting the populate time and the
database's size on disk. Without --db it creates a SQLite file in a new run
directory and prints the DSN to pass to 'run' and 'op'.`,
			Example: `  fieldbench load microblog --db sqlite:///tmp/mb.db --model normalized`,
			Run:     loadRun(j),
		},
		{
			Verb:  "run",
			Short: "Run the microblog workload (the study's defaults: 200 clients, 4 minutes, uniform mix)",
			Long: `run loads the dataset when the database is empty, then runs --clients
simulated users for --duration. Closed loop by default (each client issues its
next operation when the previous one returns); --rate runs open loop with
latency measured from each operation's intended start. Each client is one
user: post writes a tweet as that user, timeline reads that user's timeline,
userline reads a user that client follows.

Results go to results/<time>-microblog-<adapter>/: result.jsonl (written every
second) and report.html.`,
			Example: `  fieldbench run microblog --duration 30s
  fieldbench run microblog --model async --clients 50 --duration 1m --warmup 10s
  fieldbench run microblog --db sqlite:///tmp/mb.db --rate 500 --mix post=1,timeline=4`,
			Run:      j.run,
			Measured: true,
		},
		{
			Verb:  "op",
			Short: "Run one microblog operation and print the answer as JSON lines, newest first",
			Example: `  fieldbench op microblog timeline --db sqlite:///tmp/mb.db --user 7
  fieldbench op microblog post --db sqlite:///tmp/mb.db --user 7 --body "hello"`,
			Subs: []Command{
				op("timeline", "The 50 newest tweets by the users --user follows"),
				op("userline", "The 50 newest tweets by --user"),
				op("post", "Post a tweet as --user and print it"),
			},
		},
	}
}

// loading is what the microblog load is made of (see runLoad).
func (j *microblogJob) loading() loading {
	return loading{workload: microblog.Name, datasetOpts: &j.datasetOpts, validate: j.validate, checkShard: j.loadShares}
}

func (j *microblogJob) validate() error {
	if j.users < 2 {
		return Usagef("--users must be at least 2 (got %d)", j.users)
	}
	if _, err := microblog.ParseModel(j.model); err != nil {
		return Usage(err)
	}
	if _, err := microblog.ParseBodyReads(j.reads); err != nil {
		return Usage(err)
	}
	return nil
}

// setReads applies --timeline-reads to store (of model) and reports
// whether the store reads that way: a normalized store that fetches bodies
// by key does; the others (denormalized lines hold the bodies, SQL joins)
// have nothing to choose, which is an error only when the user asked for
// separate reads, so that no result claims reads it did not make.
func (j *microblogJob) setReads(store microblog.Store, model microblog.Model) (bool, error) {
	r, err := microblog.ParseBodyReads(j.reads)
	if err != nil {
		return false, Usage(err)
	}
	br, ok := store.(microblog.BodyReader)
	switch {
	case model == microblog.Normalized && ok:
		br.SetBodyReads(r)
		return true, nil
	case r == microblog.BodyReadsSeparate && model != microblog.Normalized:
		return false, Usagef("--timeline-reads separate applies to the normalized model (this run's: %s)", model)
	case r == microblog.BodyReadsSeparate:
		return false, Usagef("--timeline-reads separate: this adapter's normalized lines fetch the bodies in one statement (a join); only Cassandra, MongoDB, HBase and CouchDB read them by key")
	}
	return false, nil
}

// generateMemoryLimit is the Go heap's soft limit while generate writes
// a part: at 10 M users in 16 parts the live heap peaks near 600 MB.
const generateMemoryLimit = 1 << 30

func (j *microblogJob) generate(ctx context.Context, env *Env) error {
	if err := j.validate(); err != nil {
		return err
	}
	if j.out == "" {
		return Usagef("generate microblog needs --out DIR")
	}
	sh, err := shardOf(j.sharding.shard, j.sharding.shards)
	if err != nil {
		return err
	}
	if sh, err = sh.withSplit(j.sharding.split); err != nil {
		return err
	}
	lo, hi := sh.share(j.users)
	if lo == hi {
		return Usagef("shard %d/%d's share of the %d users is empty: use fewer shards", sh.i, sh.n, j.users)
	}
	// Part I of N: users lo+1..hi, the follows of which they are the
	// followee and the tweets they wrote, in memory that grows with the
	// part; the N parts' files together are the one part's.
	part := microblog.Part{I: sh.i, N: sh.n, First: int64(lo) + 1, Last: int64(hi)}
	// The live heap is tables and the part's follows, allocated once;
	// a soft limit keeps the garbage of writing rows from doubling it
	// (unless GOMEMLIMIT says otherwise).
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(generateMemoryLimit))
	}
	// The generator takes no context: it runs on a goroutine of its own
	// that Ctrl-C leaves behind (interruptible), and says every 10 s how
	// much it has written.
	users, follows, tweets := microblog.PartCSVNames(part)
	stop := heartbeat(env.Stderr, writtenSoFar(filepath.Join(j.out, users), filepath.Join(j.out, follows), filepath.Join(j.out, tweets)))
	var info microblog.PartInfo
	err = interruptible(ctx, func() (err error) {
		info, err = microblog.WritePartCSV(microblog.GenOptions{Users: j.users, Seed: j.seed}, part, j.out)
		return err
	})
	stop()
	switch {
	case errors.Is(err, ErrInterrupted):
		return fmt.Errorf("%w: %s may hold part of the CSV files", ErrInterrupted, j.out)
	case err != nil:
		return Usage(err)
	}
	names := make([]string, len(info.Files))
	for i, f := range info.Files {
		names[i] = filepath.Base(f)
	}
	fmt.Fprintf(env.Stdout, "wrote %s to %s\n\n", strings.Join(names, ", "), j.out)
	if info.Stats != nil {
		return info.Stats.Write(env.Stdout)
	}
	_, err = fmt.Fprintf(env.Stdout, `part             %s (users %d..%d)
users            %d of %d
follows          %d of %d
tweets           %d of %d
generator        microblog v%d
`, part, part.First, part.Last, info.Size.Users, info.Whole.Users, info.Size.Follows, info.Whole.Follows,
		info.Size.Tweets, info.Whole.Tweets, microblog.GeneratorVersion)
	return err
}

// loadInto loads the dataset of --users/--seed into db, in the model of
// --model, unless db holds it already (prepare).
func (j *microblogJob) loadInto(ctx context.Context, env *Env, db adapter.DB, dsn string) (filled, error) {
	store, model, ds, ld, err := j.prepare(ctx, db, dsn, env.Stderr)
	if err != nil {
		return filled{}, err
	}
	f := filled{close: func() { store.Close() }}
	out := env.Stdout
	if !ld.loaded {
		fmt.Fprintf(out, "database already holds this dataset (%s model); nothing to load\n", model)
		f.held = true
		return f, nil
	}
	fmt.Fprintf(out, "loaded %d users, %d follows, %d tweets (%s model) into %s in %.2fs%s\n",
		ds.Users, len(ds.Follows), len(ds.Tweets), model, redact.DSN(dsn), ld.seconds, ld.onDisk(2))
	f.options = map[string]any{"users": j.users, "seed": j.seed, "model": string(model), "command": "load", "generator": microblog.GeneratorVersion}
	f.seconds, f.extra = ld.seconds, ld.extra()
	return f, nil
}

// loadShard loads shard sh's part of the dataset: its share of the users,
// the follows of which they are the followee and the tweets they wrote
// (microblog.Part), beside the other shards loading theirs. The adapter
// must load in parts (microblog.PartLoader); the database is whole when
// the last part is in, which is what the shards of run wait for.
func (j *microblogJob) loadShard(ctx context.Context, env *Env, sh shard) error {
	model, _ := microblog.ParseModel(j.model)
	a, db, err := OpenDB(ctx, j.db)
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := microblogBackend(db, j.db)
	if err != nil {
		return err
	}
	pl, ok := b.(microblog.PartLoader)
	if !ok {
		return Usagef("the %s adapter loads the microblog dataset whole, not in parts: load it once without --shard (the shards of run wait for it)", a.Name())
	}
	if have, err := b.MicroblogModel(ctx); err != nil {
		return fmt.Errorf("read the database's microblog model: %w", err)
	} else if have != "" && have != model {
		return Usagef("the database holds the %s model, not %s: load the parts with --model %s, or use a fresh database", have, model, have)
	}
	if err := j.loadShares(sh); err != nil {
		return err
	}
	lo, hi := sh.share(j.users)
	part := microblog.Part{I: sh.i, N: sh.n, First: int64(lo) + 1, Last: int64(hi)}
	// Only this part is generated: memory grows with the part.
	t0 := time.Now()
	ds, err := generateDataset(ctx, env.Stderr, fmt.Sprintf("shard %s: generating users %d..%d of %d", part, part.First, part.Last, j.users), func() (*microblog.Dataset, error) {
		return microblog.GeneratePart(microblog.GenOptions{Users: j.users, Seed: j.seed}, part)
	})
	if err != nil {
		return err
	}
	if d := time.Since(t0); d > 2*time.Second {
		fmt.Fprintf(env.Stderr, "shard %s: generated its part in %s\n", part, d.Round(time.Millisecond))
	}
	size := ds.PartSize(part)
	fmt.Fprintf(env.Stderr, "shard %s: loading users %d..%d, %d follows, %d tweets (%s model)...\n",
		part, part.First, part.Last, size.Follows, size.Tweets, model)
	t0 = time.Now()
	stop := heartbeat(env.Stderr, func() string { return fmt.Sprintf("shard %s: loading its part (%s model)", part, model) })
	err = pl.PopulatePart(ctx, model, ds, part)
	stop()
	switch {
	case errors.Is(err, microblog.ErrPartLoaded):
		fmt.Fprintf(env.Stdout, "shard %s: users %d..%d are already in the database; nothing to load\n", part, part.First, part.Last)
		return nil
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("%w: shard %s's part (users %d..%d) may be partly loaded: %v", ErrInterrupted, part, part.First, part.Last, err)
	case err != nil:
		return fmt.Errorf("load shard %s (users %d..%d): %w", part, part.First, part.Last, err)
	}
	fmt.Fprintf(env.Stdout, "shard %s: loaded users %d..%d, %d follows, %d tweets (%s model) into %s in %.2fs\n",
		part, part.First, part.Last, size.Follows, size.Tweets, model, redact.DSN(j.db), time.Since(t0).Seconds())
	return nil
}

// CheckRun reports the first bad run option as a usage error, before
// anything is created: run calls it first, and a rate search calls it
// before its first step (RunChecker).
func (j *microblogJob) CheckRun() error {
	if err := j.validate(); err != nil {
		return err
	}
	cfg := runner.Config{Workers: j.clients, Duration: j.duration, Warmup: j.warmup, Rate: j.rate}
	if err := cfg.Validate(); err != nil {
		return Usage(err)
	}
	if j.model == string(microblog.Async) && j.matEvery <= 0 {
		return Usagef("--materialize-every must be positive (got %s)", j.matEvery)
	}
	if _, err := workload.ParseMix(j.mix, microblog.ClientOps); err != nil {
		return Usage(err)
	}
	if err := j.retry.Validate(); err != nil {
		return Usage(err)
	}
	_, _, _, _, err := j.runShard()
	return err
}

// runShard resolves run's shard options: the shard, the common start and
// the shard's clients [lo, hi), refusing a run in which any shard would
// have none.
func (j *microblogJob) runShard() (sh shard, at time.Time, lo, hi int, err error) {
	if sh, at, err = j.sharding.resolve(j.db); err != nil {
		return sh, at, 0, 0, err
	}
	lo, hi, err = sh.everyShare(j.clients, "clients", "--clients")
	return sh, at, lo, hi, err
}

// loadShares refuses a sharded load that leaves a shard no user: that
// shard could not record its part, and the database would never read as
// whole (the part that finds all N recorded marks it so). Every shard
// checks every share, and all refuse before any loads.
func (j *microblogJob) loadShares(sh shard) error {
	for k := range sh.n {
		other := sh
		other.i = k
		if lo, hi := other.share(j.users); lo == hi {
			return Usagef("shard %d/%d's share of the %d users is empty, and a sharded load needs every part: use fewer shards (or a --split that gives each some)", k, sh.n, j.users)
		}
	}
	return nil
}

// waitForDataset waits until shard 0 has loaded the whole dataset.
func (j *microblogJob) waitForDataset(ctx context.Context, w io.Writer, db adapter.DB, dsn string) error {
	b, err := microblogBackend(db, dsn)
	if err != nil {
		return err
	}
	// The whole dataset's counts, without building its graph.
	want, err := microblog.Size(microblog.GenOptions{Users: j.users, Seed: j.seed})
	if err != nil {
		return Usage(err)
	}
	return waitFor(ctx, w, shardWaitLimit, "shard 0 to load the dataset", func(ctx context.Context) (bool, error) {
		model, err := b.MicroblogModel(ctx)
		if err != nil || model == "" {
			return false, err
		}
		st, err := b.Microblog(ctx, model)
		if err != nil {
			return false, err
		}
		defer st.Close()
		c, err := st.Counts(ctx)
		return err == nil && c.Users == want.Users && c.Follows == want.Follows && c.Tweets >= want.Tweets, err
	})
}

// mbLoad is what prepare did to the database.
type mbLoad struct {
	populated
	counts microblog.Counts
	reads  bool // the store applied --timeline-reads (recorded then)
}

func (l mbLoad) extra() map[string]float64 {
	return l.figures(map[string]float64{
		"users":   float64(l.counts.Users),
		"follows": float64(l.counts.Follows),
		"tweets":  float64(l.counts.Tweets),
	})
}

func microblogBackend(db adapter.DB, dsn string) (microblog.Backend, error) {
	b, err := adapter.Family[microblog.Backend](db, dsn, microblog.Name)
	return b, Usage(err)
}

// prepare opens the store for the model and makes sure it holds the dataset
// of --users/--seed, loading it when the database is empty. A database loaded
// with another model or dataset is an error, never silently mixed.
func (j *microblogJob) prepare(ctx context.Context, db adapter.DB, dsn string, progress io.Writer) (microblog.Store, microblog.Model, *microblog.Dataset, mbLoad, error) {
	var ld mbLoad
	b, err := microblogBackend(db, dsn)
	if err != nil {
		return nil, "", nil, ld, err
	}
	model, _ := microblog.ParseModel(j.model)
	have, err := b.MicroblogModel(ctx)
	if err != nil {
		return nil, "", nil, ld, fmt.Errorf("read the database's microblog model: %w", err)
	}
	if have != "" && have != model {
		if j.opts.Changed("model") {
			return nil, "", nil, ld, Usagef("the database holds the %s model, not %s: use a fresh database for another model", have, model)
		}
		model = have
	}
	store, err := b.Microblog(ctx, model)
	if err != nil {
		return nil, "", nil, ld, err
	}
	fail := func(err error) (microblog.Store, microblog.Model, *microblog.Dataset, mbLoad, error) {
		store.Close()
		return nil, "", nil, ld, err
	}
	if ld.reads, err = j.setReads(store, model); err != nil {
		return fail(err)
	}
	t0 := time.Now()
	ds, err := generateDataset(ctx, progress, fmt.Sprintf("generating %d users", j.users), func() (*microblog.Dataset, error) {
		return microblog.Generate(microblog.GenOptions{Users: j.users, Seed: j.seed})
	})
	if err != nil {
		return fail(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		fmt.Fprintf(progress, "generated %d users in %s\n", j.users, d.Round(time.Millisecond))
	}
	counts, err := store.Counts(ctx)
	if err != nil {
		return fail(fmt.Errorf("count stored data: %w", err))
	}
	if counts.Users == 0 {
		fmt.Fprintf(progress, "loading %d users, %d follows, %d tweets (%s model)...\n", ds.Users, len(ds.Follows), len(ds.Tweets), model)
		t0 := time.Now()
		stop := heartbeat(progress, func() string {
			return fmt.Sprintf("loading %d users, %d follows, %d tweets (%s model)", ds.Users, len(ds.Follows), len(ds.Tweets), model)
		})
		err := store.Populate(ctx, ds)
		stop()
		if err != nil {
			return fail(partialLoad(ctx, store, ds, err))
		}
		ld.loaded = true
		ld.seconds = time.Since(t0).Seconds()
		if counts, err = store.Counts(ctx); err != nil {
			return fail(fmt.Errorf("count stored data: %w", err))
		}
	} else if counts.Users != int64(ds.Users) || counts.Follows != int64(len(ds.Follows)) || counts.Tweets < int64(len(ds.Tweets)) {
		return fail(Usagef("the database holds another dataset, or a partial load, (%d users, %d follows) than --users %d --seed %d (%d users, %d follows): pass the options it was loaded with, or use a fresh database",
			counts.Users, counts.Follows, j.users, j.seed, ds.Users, len(ds.Follows)))
	}
	ld.counts = counts
	ld.measureSize(ctx, db)
	return store, model, ds, ld, nil
}

// generateDataset generates a microblog dataset (or part) with gen, which
// takes no context: Ctrl-C ends the wait at once (the generator is left to
// finish on its goroutine), and every 10 s a line says it is still at it.
func generateDataset(ctx context.Context, progress io.Writer, what string, gen func() (*microblog.Dataset, error)) (*microblog.Dataset, error) {
	stop := heartbeat(progress, func() string { return what })
	defer stop()
	var ds *microblog.Dataset
	err := interruptible(ctx, func() (err error) {
		ds, err = gen()
		return err
	})
	switch {
	case errors.Is(err, ErrInterrupted):
		return nil, fmt.Errorf("%w while %s: nothing was loaded", ErrInterrupted, what)
	case err != nil:
		return nil, Usage(err)
	}
	return ds, nil
}

// partialLoad says what a failed or interrupted populate left behind: the
// stores have no reset, so the database holds part of the dataset and a
// later run refuses it; the message says so and how much is there.
func partialLoad(ctx context.Context, store microblog.Store, ds *microblog.Dataset, err error) error {
	dctx, cancel := Detached(ctx, 30*time.Second)
	defer cancel()
	held := "an unknown part"
	if c, cerr := store.Counts(dctx); cerr == nil {
		if c.Users == 0 && c.Follows == 0 && c.Tweets == 0 {
			held = ""
		} else {
			held = fmt.Sprintf("%d of %d users, %d of %d follows, %d of %d tweets", c.Users, ds.Users, c.Follows, len(ds.Follows), c.Tweets, len(ds.Tweets))
		}
	}
	state := "the database is untouched"
	if held != "" {
		state = "the database now holds a PARTIAL microblog dataset (" + held + "): load into a fresh database"
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: the load was cut short; %s", ErrInterrupted, state)
	}
	return fmt.Errorf("populate: %w; %s", err, state)
}

// Traits: every post and the store are offered to an observer that is a
// PostAuditor, for the durability audit.
func (j *microblogJob) Traits() Traits { return Traits{Audit: true, Stoppable: true} }
