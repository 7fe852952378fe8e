package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func init() { Register(wiki.Name, func() Job { return newWikiJob() }) }

// wikiSeries is the Point series of request-set times.
const wikiSeries = "request-set"

// errEnoughSets ends a run's request sets early when the observer says it
// has what it needs (an experiment that is stable again): not an error of
// the run.
var errEnoughSets = errors.New("wiki: the observer asked for no more request sets")

// wikiJob is the wiki workload (seed 002): its options are its fields.
type wikiJob struct {
	base
	// The dataset and database.
	datasetOpts
	from          string
	keepRedirects bool
	articles      int64
	// generate.
	out, format string
	// load.
	reset bool
	// run's request sets.
	requests, reads, threads int
	sets, repeat             int
	dist                     string
	zipfS                    float64
	loop                     bool
	rate                     float64
	retry                    workload.Retry
	// op.
	id   int64
	full bool
}

func newWikiJob() *wikiJob {
	j := &wikiJob{base: newBase(wiki.Name)}
	o := j.opts
	// --db and --results had a different help on op (--db: "database DSN
	// (required), e.g. sqlite:///tmp/wiki.db") and on load (--results: "where
	// the run directory is created when --db is not given") than on run; one
	// declaration now says both. Defaults and behaviour are unchanged.
	o.String(&j.db, "db", "", "database DSN, e.g. sqlite:///tmp/wiki.db (default: a new SQLite file in the run directory; required by op)", "load", "run", "op")
	o.String(&j.from, "from", "", "load this MediaWiki XML dump (pages-articles.xml, .xml.bz2 or .xml.gz; - for standard input) instead of synthetic articles", "load", "run")
	o.Bool(&j.keepRedirects, "keep-redirects", false, "with --from: load redirect pages too (skipped by default)", "load", "run")
	o.Int64(&j.articles, "articles", wiki.DefaultArticles, "synthetic articles (ids 1..N; heavy-tailed sizes, ~5 KB mean)", "generate", "load", "run")
	o.Int64(&j.seed, "seed", 1, "seed of the synthetic articles and of the requests", "generate", "load", "run")
	o.String(&j.out, "out", "", "directory to write articles.jsonl (or articles.csv) to (required)", "generate")
	o.String(&j.format, "format", "jsonl", "jsonl (one {id,title,body} object a line) or csv (id,title,body with a header)", "generate")
	o.Bool(&j.reset, "reset", false, "remove every article first, then load", "load")
	o.Int(&j.requests, "requests", wiki.DefaultRequests, "requests per request set (R)", "run")
	o.Int(&j.reads, "reads", wiki.DefaultReads, "percentage of read-only requests (r); the others append \"1\" and write back", "run")
	o.Int(&j.threads, "threads", wiki.DefaultThreads, "client threads (T), each doing requests/threads requests sequentially (the study: one per database node)", "run")
	o.Int(&j.sets, "sets", wiki.DefaultSets, "request sets to run back to back", "run")
	o.Int(&j.repeat, "repeat", wiki.DefaultRepeat, "executions of each request set (its point is their mean ± SD)", "run")
	o.String(&j.dist, "dist", string(wiki.Uniform), "how request ids are drawn: uniform (the study) or zipf", "run")
	o.Float64(&j.zipfS, "zipf-s", wiki.DefaultZipfS, "skew s of --dist zipf (> 1; rank k has weight 1/k^s)", "run")
	o.String(&j.results, "results", "results", "directory under which the run directory is created (load: only without --db)", "load", "run")
	o.Bool(&j.loop, "loop", false, "send every thread's requests from one event loop over raw connections, as pgbench and redis-benchmark do, instead of a goroutine per thread (reads and updates; postgres, reading from the primary, and single-server redis; see docs/wiki.md)", "run")
	o.Rate(&j.rate, "rate", "requests per second", "open loop: target requests per second over all threads, inside each request set (request k of a set is due k/rate after the set starts and taken by the next free thread; latency counts from that intended start, so a database slower than the rate shows as growing latency and set time; at most --threads requests in flight); 0 = closed loop, each thread sends its next request when the last returns. Not with --loop, whose event loop is closed-loop", "run")
	declareRetry(o, &j.retry, "request (a retried update reads the article and appends again; not with --loop)", "run")
	j.sharding.declare(o, "the threads and of --rate in run (each request set runs threads [I·T/N, (I+1)·T/N); shard 0 loads the articles, the others wait for them), of the articles in load (in batches of 1000: batch k is ids k·1000+1..(k+1)·1000)", "run", "load")
	j.sharding.declareStart(o, "run")
	o.Int64(&j.id, "id", 0, "article id (1..articles)", "op")
	o.Bool(&j.full, "full", false, "print the whole body (default: its first 300 bytes)", "op read")
	return j
}

func (j *wikiJob) Commands() []Command {
	op := func(name, short string) Command {
		return Command{Verb: "op " + name, Short: short, Run: func(ctx context.Context, env *Env) error { return j.runOp(ctx, env, name) }}
	}
	return []Command{
		{
			Verb:  "generate",
			Short: "Write the synthetic wiki articles as JSON lines or CSV and print their size statistics",
			Example: `  fieldbench generate wiki --articles 10000 --out data/
  fieldbench generate wiki --articles 1000 --format csv --out data/`,
			Run: j.generate,
		},
		{
			Verb:  "load",
			Short: "Populate a database with wiki articles: synthetic, or a MediaWiki XML dump",
			Long: `load writes --articles synthetic articles (ids 1..N, sizes heavy-tailed like
Wikipedia's) into an empty database, or with --from the pages of a MediaWiki
XML dump (pages-articles.xml, .xml.bz2 or .xml.gz, streamed in constant
memory; redirects are skipped unless --keep-redirects), ids 1..n in dump
order. It reports the populate time and the database's size on disk. A
database that already holds articles is left alone unless --reset. Without
--db it creates a SQLite file in a new run directory and prints the DSN to
pass to 'run' and 'op'.`,
			Example: `  fieldbench load wiki --db sqlite:///tmp/wiki.db --articles 100000
  fieldbench load wiki --db sqlite:///tmp/wiki.db --from enwiki-latest-pages-articles.xml.bz2`,
			Run: loadRun(j),
		},
		{
			Verb:  "run",
			Short: "Run wiki request sets (the study's defaults: 10,000 requests, 80 % reads, each set 10 times)",
			Long: `run loads the articles when the database is empty (synthetic, or --from a
MediaWiki dump), then runs --sets request sets back to back. A request set is
--requests requests split over --threads client threads, each doing its share
sequentially; a request reads a random article (uniform over all ids, or
--dist zipf) and, for the (100 - --reads) % that are updates, appends "1" to
it and writes it back. Each request set is executed --repeat times; its point
in the result is the mean time of the repetitions with their standard
deviation, drawn against elapsed time with a ±SD band. Every request's
latency is recorded too (operations read and update). With --rate the
requests of a set are sent open loop at that many per second, each timed
from its intended start.

A run is --sets request sets, not a time: --duration and --warmup do not
apply (an experiment marks its first sets as warm-up: stability.warmup_sets).

Results go to results/<time>-wiki-<adapter>/: result.jsonl and report.html.`,
			Example: `  fieldbench run wiki
  fieldbench run wiki --articles 100000 --threads 4 --sets 30 --repeat 5
  fieldbench run wiki --db sqlite:///tmp/wiki.db --dist zipf --reads 95`,
			Run:      j.run,
			Measured: true,
		},
		{
			Verb:  "op",
			Short: "Run one wiki request and print the article as JSON",
			Example: `  fieldbench op wiki read --db sqlite:///tmp/wiki.db --id 42
  fieldbench op wiki update --db sqlite:///tmp/wiki.db --id 42`,
			// Run is what op wiki does without an operation.
			Run: func(context.Context, *Env) error { return Usagef("op wiki needs an operation: read or update") },
			Subs: []Command{
				op("read", "Read article --id: its id, title, size and body"),
				op("update", `Append "1" to article --id and write it back, as an update request does`),
			},
		},
	}
}

// loading is what the wiki load is made of (see runLoad).
func (j *wikiJob) loading() loading {
	return loading{
		workload: wiki.Name, datasetOpts: &j.datasetOpts, validate: j.validate,
		checkShard: func(shard) error { return j.checkLoadShard() },
	}
}

// validate checks the dataset's options: the articles' count, and a dump
// that exists and does not come with --articles.
func (j *wikiJob) validate() error {
	if j.articles < 1 || j.articles > wiki.MaxArticles {
		return Usagef("--articles must be between 1 and %d (got %d)", wiki.MaxArticles, j.articles)
	}
	if j.from != "" {
		if j.opts.Changed("articles") {
			return Usagef("--articles and --from exclude each other: a dump brings its own articles")
		}
		if j.from != "-" {
			st, err := os.Stat(j.from)
			if err != nil {
				return Usagef("--from %s: %v", j.from, errors.Unwrap(err))
			}
			if st.IsDir() {
				return Usagef("--from %s is a directory, not a dump file", j.from)
			}
		}
	}
	return nil
}

func (j *wikiJob) generate(ctx context.Context, env *Env) error {
	if err := j.validate(); err != nil {
		return err
	}
	if j.out == "" {
		return Usagef("generate wiki needs --out DIR")
	}
	if j.format != "jsonl" && j.format != "csv" {
		return Usagef("unknown --format %q (known: jsonl, csv)", j.format)
	}
	g, err := wiki.NewGenerator(j.seed, j.articles)
	if err != nil {
		return Usage(err)
	}
	if err := os.MkdirAll(j.out, 0o755); err != nil {
		return Usagef("--out %s is not writable: %v", j.out, err)
	}
	path := filepath.Join(j.out, "articles."+j.format)
	stop := heartbeat(env.Stderr, writtenSoFar(path))
	stats, err := g.WriteFile(ctx, path, j.format)
	stop()
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s may hold part of the articles", ErrInterrupted, path)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s\n\n", path)
	return stats.Write(env.Stdout)
}

// wikiLoad is what preparing the database did.
type wikiLoad struct {
	populated
	source    string // what was loaded, for the header
	counts    wiki.Counts
	pages     int64 // dump pages read
	redirects int64 // dump redirects skipped
}

func (l wikiLoad) extra() map[string]float64 {
	m := l.figures(map[string]float64{
		"articles":    float64(l.counts.Articles),
		"total_bytes": float64(l.counts.Bytes),
	})
	if l.pages > 0 {
		m["dump_pages"] = float64(l.pages)
		m["dump_redirects_skipped"] = float64(l.redirects)
	}
	return m
}

// openWikiStore opens dsn and its wiki store; close both with the returned
// function.
func openWikiStore(ctx context.Context, dsn string, open func(context.Context, string) (adapter.Adapter, adapter.DB, error)) (adapter.Adapter, adapter.DB, wiki.Store, func(), error) {
	a, db, err := open(ctx, dsn)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	store, err := wikiStoreOf(ctx, db, dsn)
	if err != nil {
		db.Close()
		return nil, nil, nil, nil, err
	}
	return a, db, store, func() { store.Close(); db.Close() }, nil
}

// wikiStoreOf opens the wiki store of an open database.
func wikiStoreOf(ctx context.Context, db adapter.DB, dsn string) (wiki.Store, error) {
	b, err := adapter.Family[wiki.Backend](db, dsn, wiki.Name)
	if err != nil {
		return nil, Usage(err)
	}
	store, err := b.Wiki(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the wiki store of %s: %w", redact.DSN(dsn), err)
	}
	return store, nil
}

// prepare makes sure the store holds articles, loading them (from --from or
// the generator) when it is empty. A database holding another number of
// articles than an explicit --articles is an error, never silently used.
func (j *wikiJob) prepare(ctx context.Context, db adapter.DB, store wiki.Store, progress io.Writer) (wikiLoad, error) {
	var ld wikiLoad
	counts, err := store.Counts(ctx)
	if err != nil {
		return ld, fmt.Errorf("count stored articles: %w", err)
	}
	switch {
	case counts.Articles == 0:
		if ld, err = j.populate(ctx, store, progress); err != nil {
			return ld, err
		}
		if counts, err = store.Counts(ctx); err != nil {
			return ld, fmt.Errorf("count stored articles: %w", err)
		}
	case j.opts.Changed("articles") && counts.Articles != j.articles:
		return ld, Usagef("the database holds %d articles, not --articles %d: use a fresh database, or 'fieldbench load wiki --reset' to replace them", counts.Articles, j.articles)
	case j.from != "":
		fmt.Fprintf(progress, "the database already holds %d articles: --from %s is not loaded ('fieldbench load wiki --reset --from ...' replaces them)\n", counts.Articles, j.from)
		ld.source = "already in the database"
	default:
		ld.source = "already in the database"
	}
	if counts.MaxID != counts.Articles {
		return ld, fmt.Errorf("the database's article ids are not 1..%d (largest id %d): requests pick ids in [1, articles]; use a fresh database", counts.Articles, counts.MaxID)
	}
	ld.counts = counts
	ld.measureSize(ctx, db)
	return ld, nil
}

// populate populates an empty store. A failed or interrupted load is removed,
// so the database is never left holding part of a dataset.
func (j *wikiJob) populate(ctx context.Context, store wiki.Store, progress io.Writer) (wikiLoad, error) {
	var ld wikiLoad
	var src wiki.Source
	var dump *wiki.Dump
	if j.from != "" {
		// The dump is read in bounded memory whatever its size, and its
		// reading ends with ctx, even inside a read that waits for input.
		d, err := wiki.OpenDumpContext(ctx, j.from, wiki.DumpOptions{KeepRedirects: j.keepRedirects})
		if err != nil {
			if ctx.Err() != nil {
				return ld, ErrInterrupted
			}
			return ld, Usage(err)
		}
		defer d.Close()
		dump, src = d, d
		ld.source = "dump " + j.from
		fmt.Fprintf(progress, "loading articles from %s...\n", j.from)
	} else {
		g, err := wiki.NewGenerator(j.seed, j.articles)
		if err != nil {
			return ld, Usage(err)
		}
		src = g.Source(1, g.Articles)
		ld.source = fmt.Sprintf("synthetic (seed %d)", j.seed)
		fmt.Fprintf(progress, "loading %d synthetic articles...\n", j.articles)
	}
	ps := &progressSource{ctx: ctx, src: src, dump: dump}
	stop := heartbeat(progress, ps.status)
	t0 := time.Now()
	c, err := store.Populate(ctx, ps)
	stop()
	ld.seconds = time.Since(t0).Seconds()
	if err == nil && c.Articles == 0 {
		err = Usagef("%s holds no articles to load", j.from)
	}
	if err != nil {
		dctx, cancel := Detached(ctx, time.Minute)
		defer cancel()
		if rerr := store.Reset(dctx); rerr != nil {
			return ld, errors.Join(fmt.Errorf("populate: %w", err), fmt.Errorf("remove the partial load: %w", rerr))
		}
		var de *wiki.DumpError
		switch {
		case ctx.Err() != nil:
			return ld, ErrInterrupted
		case errors.As(err, &de):
			return ld, Usage(fmt.Errorf("%w (nothing was loaded)", err))
		}
		return ld, fmt.Errorf("populate: %w (the partial load was removed)", err)
	}
	ld.loaded = true
	if dump != nil {
		ld.pages, ld.redirects = dump.Pages, dump.Redirects
	}
	return ld, nil
}

// progressSource counts the articles a load reads, for its heartbeat
// (every 10 s, whether articles come or not: a dump's bytes read are
// shown too), and ends the load when ctx ends.
type progressSource struct {
	ctx      context.Context
	src      wiki.Source
	dump     *wiki.Dump // nil for synthetic articles
	n, bytes atomic.Int64
}

func (p *progressSource) Next() (wiki.Article, error) {
	if err := p.ctx.Err(); err != nil {
		return wiki.Article{}, err
	}
	a, err := p.src.Next()
	if err != nil {
		return a, err
	}
	p.n.Add(1)
	p.bytes.Add(int64(len(a.Body)))
	return a, nil
}

// status is the heartbeat's line.
func (p *progressSource) status() string {
	s := fmt.Sprintf("%d articles, %.0f MB of text", p.n.Load(), float64(p.bytes.Load())/1e6)
	if p.dump != nil {
		s += fmt.Sprintf(" (%.0f MB of the dump read)", float64(p.dump.BytesRead())/1e6)
	}
	return s
}

// loadInto loads the articles (synthetic, or --from a dump) into db,
// emptying it first with --reset, unless it holds articles already
// (prepare).
func (j *wikiJob) loadInto(ctx context.Context, env *Env, db adapter.DB, dsn string) (filled, error) {
	store, err := wikiStoreOf(ctx, db, dsn)
	if err != nil {
		return filled{}, err
	}
	f := filled{close: func() { store.Close() }}
	if j.reset {
		if err := store.Reset(ctx); err != nil {
			return f, fmt.Errorf("reset: %w", err)
		}
	}
	ld, err := j.prepare(ctx, db, store, env.Stderr)
	if err != nil {
		return f, err
	}
	out := env.Stdout
	if !ld.loaded {
		fmt.Fprintf(out, "the database already holds %d articles (%.1f MB); nothing to load (--reset replaces them)\n", ld.counts.Articles, float64(ld.counts.Bytes)/1e6)
		f.held = true
		return f, nil
	}
	fmt.Fprintf(out, "loaded %d articles (%.1f MB of text) from %s into %s in %.2fs%s\n",
		ld.counts.Articles, float64(ld.counts.Bytes)/1e6, ld.source, redact.DSN(dsn), ld.seconds, ld.onDisk(1))
	if ld.pages > 0 {
		fmt.Fprintf(out, "the dump had %d pages; %d redirects were skipped\n", ld.pages, ld.redirects)
	}
	f.options = map[string]any{"articles": ld.counts.Articles, "seed": j.seed, "source": ld.source, "command": "load"}
	f.seconds, f.extra = ld.seconds, ld.extra()
	return f, nil
}

// loadShard loads shard sh's part of the synthetic articles: its share of
// the dataset's batches, so the shards together load every article once.
// It never empties the database (the others are loading into it) and loads
// nothing when its part is already there.
func (j *wikiJob) loadShard(ctx context.Context, env *Env, sh shard) error {
	if err := j.checkLoadShard(); err != nil {
		return err
	}
	lo, hi := sh.loadShare(j.articles, loadBatch)
	if lo == hi {
		fmt.Fprintf(env.Stdout, "shard %d/%d: %d articles leave it no batch; nothing to load\n", sh.i, sh.n, j.articles)
		return nil
	}
	first, last := lo+1, hi // ids are 1-based
	_, _, store, closeAll, err := openWikiStore(ctx, j.db, OpenDB)
	if err != nil {
		return err
	}
	defer closeAll()
	_, e1 := store.Read(ctx, first)
	_, e2 := store.Read(ctx, last)
	switch {
	case e1 == nil && e2 == nil:
		fmt.Fprintf(env.Stdout, "shard %d/%d: articles %d..%d are already in the database; nothing to load\n", sh.i, sh.n, first, last)
		return nil
	case !errors.Is(e1, wiki.ErrNotFound) && e1 != nil:
		return fmt.Errorf("read article %d: %w", first, e1)
	case !errors.Is(e2, wiki.ErrNotFound) && e2 != nil:
		return fmt.Errorf("read article %d: %w", last, e2)
	case (e1 == nil) != (e2 == nil):
		return fmt.Errorf("the database holds part of articles %d..%d (a shard's load cut short): empty it and load again", first, last)
	}
	g, err := wiki.NewGenerator(j.seed, j.articles)
	if err != nil {
		return Usage(err)
	}
	t0 := time.Now()
	c, err := store.Populate(ctx, g.Source(first, last))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: articles %d..%d are partly loaded", ErrInterrupted, first, last)
		}
		return fmt.Errorf("populate articles %d..%d: %w (they are partly loaded: empty the database and load again)", first, last, err)
	}
	d := time.Since(t0).Seconds()
	fmt.Fprintf(env.Stdout, "shard %d/%d: loaded articles %d..%d (%d of %d, %.1f MB of text) into %s in %.2fs\n",
		sh.i, sh.n, first, last, c.Articles, j.articles, float64(c.Bytes)/1e6, redact.DSN(j.db), d)
	return nil
}

// checkLoadShard refuses what a sharded load cannot do.
func (j *wikiJob) checkLoadShard() error {
	switch {
	case j.from != "":
		return Usagef("a dump is read in order and cannot be split: load --from on one machine, then run the shards")
	case j.reset:
		return Usagef("--reset with --shard would delete the other shards' articles: empty the database once before the shards load")
	}
	return nil
}

// waitForArticles waits until shard 0 has loaded every article.
func (j *wikiJob) waitForArticles(ctx context.Context, w io.Writer, store wiki.Store) error {
	return waitFor(ctx, w, shardWaitLimit, "shard 0 to load the articles", func(ctx context.Context) (bool, error) {
		c, err := store.Counts(ctx)
		return err == nil && c.Articles == j.articles && c.MaxID == j.articles, err
	})
}

// plan checks run's request-set options and returns the plan (its Articles
// are set once the database is prepared).
func (j *wikiJob) plan() (wiki.Plan, error) {
	d, err := wiki.ParseDist(j.dist)
	if err != nil {
		return wiki.Plan{}, Usage(err)
	}
	p := wiki.Plan{Requests: j.requests, ReadPct: j.reads, Threads: j.threads, Dist: d, ZipfS: j.zipfS, Seed: j.seed, Articles: 1,
		Retry: j.retry, Tally: new(workload.RetryTally)}
	switch {
	case j.sets < 1:
		return p, Usagef("--sets must be at least 1 (got %d)", j.sets)
	case j.repeat < 1:
		return p, Usagef("--repeat must be at least 1 (got %d)", j.repeat)
	case !(j.rate >= 0) || math.IsInf(j.rate, 0):
		return p, Usagef("--rate must be a number of requests per second, 0 or more (got %g)", j.rate)
	case j.rate > 0 && j.loop:
		return p, Usagef("--rate and --loop exclude each other: the event loop sends a thread's next request when the last is answered (closed loop)")
	case j.loop && (j.retry.Max > 0 || j.retry.Timeout > 0):
		return p, Usagef("--retries and --op-timeout are not for --loop: the event loop sends the requests itself, with no client to retry or bound them")
	}
	if err := p.Validate(); err != nil {
		return p, Usage(err)
	}
	return p, nil
}

// openLoopConns opens the connections of run wiki --loop, one per thread.
func openLoopConns(ctx context.Context, a adapter.Adapter, store wiki.Store, n int) ([]loop.Conn, error) {
	lr, ok := store.(loop.Opener)
	switch {
	case !loop.Supported:
		return nil, Usagef("--loop needs Linux (epoll)")
	case !ok:
		return nil, Usagef("--loop: the %s adapter has no event-loop connections (postgres and redis have)", a.Name())
	}
	return lr.LoopConns(ctx, n)
}

// Traits: request sets bounded by --sets; each scalability step loads its
// own articles (the study doubled the dataset with the cluster).
// A rate-search step is one request set executed once, of as many requests
// as the rate sends in the step.
func (j *wikiJob) Traits() Traits {
	return Traits{SetsOption: "sets", StepLoad: []string{"articles", "seed", "from"},
		SizeStep: func(rate float64, d time.Duration) map[string]string {
			n := workFor(rate, d, int64(max(j.threads, 1)))
			return map[string]string{"sets": "1", "repeat": "1", "requests": strconv.FormatInt(n, 10)}
		}}
}

// CheckRun checks the run's options before anything starts (RunChecker).
func (j *wikiJob) CheckRun() error {
	if err := j.validate(); err != nil {
		return err
	}
	p, err := j.plan()
	if err != nil {
		return err
	}
	_, _, _, _, err = j.runShard(p)
	return err
}

// runShard resolves run's shard options: the shard, the common start and
// the shard's threads [lo, hi) of plan p, refusing a run in which any
// shard would have none.
func (j *wikiJob) runShard(p wiki.Plan) (sh shard, at time.Time, lo, hi int, err error) {
	if sh, at, err = j.sharding.resolve(j.db); err != nil {
		return sh, at, 0, 0, err
	}
	lo, hi, err = sh.everyShare(p.Threads, "threads", "--threads")
	return sh, at, lo, hi, err
}
