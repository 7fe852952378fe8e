package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// wikiSeries is the Point series of request-set times.
const wikiSeries = "request-set"

// wikiData are the flags that identify a wiki dataset and database.
type wikiData struct {
	db            string
	results       string
	from          string
	keepRedirects bool
	articles      int64
	seed          int64
	// articlesGiven is set when --articles was on the command line: a
	// database holding another number of articles is then an error.
	articlesGiven bool
}

func (f *wikiData) bind(c *cobra.Command, withDB bool) {
	if withDB {
		c.Flags().StringVar(&f.db, "db", "", "database DSN, e.g. sqlite:///tmp/wiki.db (default: a new SQLite file in the run directory)")
		c.Flags().StringVar(&f.from, "from", "", "load this MediaWiki XML dump (pages-articles.xml, .xml.bz2 or .xml.gz; - for standard input) instead of synthetic articles")
		c.Flags().BoolVar(&f.keepRedirects, "keep-redirects", false, "with --from: load redirect pages too (skipped by default)")
	}
	c.Flags().Int64Var(&f.articles, "articles", wiki.DefaultArticles, "synthetic articles (ids 1..N; heavy-tailed sizes, ~5 KB mean)")
	c.Flags().Int64Var(&f.seed, "seed", 1, "seed of the synthetic articles and of the requests")
}

func (f *wikiData) validate(cmd *cobra.Command) error {
	f.articlesGiven = cmd.Flags().Changed("articles")
	if f.articles < 1 || f.articles > wiki.MaxArticles {
		return usagef("--articles must be between 1 and %d (got %d)", wiki.MaxArticles, f.articles)
	}
	if f.from != "" {
		if f.articlesGiven {
			return usagef("--articles and --from exclude each other: a dump brings its own articles")
		}
		if f.from != "-" {
			st, err := os.Stat(f.from)
			if err != nil {
				return usagef("--from %s: %v", f.from, errors.Unwrap(err))
			}
			if st.IsDir() {
				return usagef("--from %s is a directory, not a dump file", f.from)
			}
		}
	}
	return nil
}

func init() {
	registerWorkloadCmd("generate", newWikiGenerateCmd)
	registerWorkloadCmd("load", newWikiLoadCmd)
	registerWorkloadCmd("run", newWikiRunCmd)
	registerWorkloadCmd("op", newWikiOpCmd)
}

func newWikiGenerateCmd() *cobra.Command {
	var f wikiData
	var out, format string
	c := &cobra.Command{
		Use:   "wiki",
		Short: "Write the synthetic wiki articles as JSON lines or CSV and print their size statistics",
		Example: `  fieldbench generate wiki --articles 10000 --out data/
  fieldbench generate wiki --articles 1000 --format csv --out data/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(cmd); err != nil {
				return err
			}
			if out == "" {
				return usagef("generate wiki needs --out DIR")
			}
			if format != "jsonl" && format != "csv" {
				return usagef("unknown --format %q (known: jsonl, csv)", format)
			}
			g, err := wiki.NewGenerator(f.seed, f.articles)
			if err != nil {
				return job.Usage(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return usagef("--out %s is not writable: %v", out, err)
			}
			path := filepath.Join(out, "articles."+format)
			stats, err := writeWikiArticles(cmd.Context(), path, format, g)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n\n", path)
			return stats.Write(cmd.OutOrStdout())
		},
	}
	f.bind(c, false)
	c.Flags().StringVar(&out, "out", "", "directory to write articles.jsonl (or articles.csv) to (required)")
	c.Flags().StringVar(&format, "format", "jsonl", "jsonl (one {id,title,body} object a line) or csv (id,title,body with a header)")
	return c
}

// writeWikiArticles streams every article of g to path and returns their
// size statistics (sizes are kept, 8 bytes an article, for the percentiles).
func writeWikiArticles(ctx context.Context, path, format string, g *wiki.Generator) (wiki.SizeStats, error) {
	file, err := os.Create(path)
	if err != nil {
		return wiki.SizeStats{}, fmt.Errorf("create %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(file, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	cw := csv.NewWriter(bw)
	if format == "csv" {
		err = cw.Write([]string{"id", "title", "body"})
	}
	sizes := make([]int, 0, g.Articles)
	for id := int64(1); id <= g.Articles && err == nil; id++ {
		if id%4096 == 0 && ctx.Err() != nil {
			err = errInterrupted
			break
		}
		a := g.Article(id)
		sizes = append(sizes, len(a.Body))
		if format == "csv" {
			err = cw.Write([]string{strconv.FormatInt(a.ID, 10), a.Title, a.Body})
		} else {
			err = enc.Encode(a)
		}
	}
	cw.Flush()
	err = errors.Join(err, cw.Error(), bw.Flush(), file.Close())
	if err != nil {
		return wiki.SizeStats{}, fmt.Errorf("write %s: %w", path, err)
	}
	return wiki.NewSizeStats(sizes), nil
}

// wikiLoad is what preparing the database did.
type wikiLoad struct {
	loaded    bool
	seconds   float64
	source    string // what was loaded, for the header
	counts    wiki.Counts
	sizeBytes int64
	pages     int64 // dump pages read
	redirects int64 // dump redirects skipped
}

func (l wikiLoad) extra() map[string]float64 {
	m := map[string]float64{
		"articles":    float64(l.counts.Articles),
		"total_bytes": float64(l.counts.Bytes),
	}
	if l.loaded {
		m["populate_seconds"] = l.seconds
	}
	if l.sizeBytes > 0 {
		m["db_size_bytes"] = float64(l.sizeBytes)
	}
	if l.pages > 0 {
		m["dump_pages"] = float64(l.pages)
		m["dump_redirects_skipped"] = float64(l.redirects)
	}
	return m
}

func wikiBackendOf(db adapter.DB, dsn string) (wiki.Backend, error) {
	b, ok := db.(wiki.Backend)
	if !ok {
		return nil, usagef("the adapter for %s does not support the wiki workload", adapter.Redact(dsn))
	}
	return b, nil
}

// openWikiStore opens dsn and its wiki store; close both with the returned
// function.
func openWikiStore(ctx context.Context, dsn string) (adapter.Adapter, adapter.DB, wiki.Store, func(), error) {
	a, db, err := openDB(ctx, dsn)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	b, err := wikiBackendOf(db, dsn)
	if err != nil {
		db.Close()
		return nil, nil, nil, nil, err
	}
	store, err := b.Wiki(ctx)
	if err != nil {
		db.Close()
		return nil, nil, nil, nil, fmt.Errorf("open the wiki store of %s: %w", adapter.Redact(dsn), err)
	}
	return a, db, store, func() { store.Close(); db.Close() }, nil
}

// prepare makes sure the store holds articles, loading them (from --from or
// the generator) when it is empty. A database holding another number of
// articles than an explicit --articles is an error, never silently used.
func (f *wikiData) prepare(ctx context.Context, db adapter.DB, store wiki.Store, progress io.Writer) (wikiLoad, error) {
	var ld wikiLoad
	counts, err := store.Counts(ctx)
	if err != nil {
		return ld, fmt.Errorf("count stored articles: %w", err)
	}
	switch {
	case counts.Articles == 0:
		if ld, err = f.load(ctx, store, progress); err != nil {
			return ld, err
		}
		if counts, err = store.Counts(ctx); err != nil {
			return ld, fmt.Errorf("count stored articles: %w", err)
		}
	case f.articlesGiven && counts.Articles != f.articles:
		return ld, usagef("the database holds %d articles, not --articles %d: use a fresh database, or 'fieldbench load wiki --reset' to replace them", counts.Articles, f.articles)
	case f.from != "":
		fmt.Fprintf(progress, "the database already holds %d articles: --from %s is not loaded ('fieldbench load wiki --reset --from ...' replaces them)\n", counts.Articles, f.from)
		ld.source = "already in the database"
	default:
		ld.source = "already in the database"
	}
	if counts.MaxID != counts.Articles {
		return ld, fmt.Errorf("the database's article ids are not 1..%d (largest id %d): requests pick ids in [1, articles]; use a fresh database", counts.Articles, counts.MaxID)
	}
	ld.counts = counts
	if sz, ok := db.(adapter.Sizer); ok {
		if n, err := sz.SizeBytes(ctx); err == nil {
			ld.sizeBytes = n
		}
	}
	return ld, nil
}

// load populates an empty store. A failed or interrupted load is removed,
// so the database is never left holding part of a dataset.
func (f *wikiData) load(ctx context.Context, store wiki.Store, progress io.Writer) (wikiLoad, error) {
	var ld wikiLoad
	var src wiki.Source
	var dump *wiki.Dump
	if f.from != "" {
		d, err := wiki.OpenDump(f.from, wiki.DumpOptions{KeepRedirects: f.keepRedirects})
		if err != nil {
			return ld, job.Usage(err)
		}
		defer d.Close()
		dump, src = d, d
		ld.source = "dump " + f.from
		fmt.Fprintf(progress, "loading articles from %s...\n", f.from)
	} else {
		g, err := wiki.NewGenerator(f.seed, f.articles)
		if err != nil {
			return ld, job.Usage(err)
		}
		src = g.Source(1, g.Articles)
		ld.source = fmt.Sprintf("synthetic (seed %d)", f.seed)
		fmt.Fprintf(progress, "loading %d synthetic articles...\n", f.articles)
	}
	ps := &progressSource{src: src, w: progress, start: time.Now(), last: time.Now()}
	t0 := time.Now()
	c, err := store.Populate(ctx, ps)
	ld.seconds = time.Since(t0).Seconds()
	if err == nil && c.Articles == 0 {
		err = usagef("%s holds no articles to load", f.from)
	}
	if err != nil {
		dctx, cancel := detached(ctx, time.Minute)
		defer cancel()
		if rerr := store.Reset(dctx); rerr != nil {
			return ld, errors.Join(fmt.Errorf("populate: %w", err), fmt.Errorf("remove the partial load: %w", rerr))
		}
		var de *wiki.DumpError
		switch {
		case ctx.Err() != nil:
			return ld, errInterrupted
		case errors.As(err, &de):
			return ld, job.Usage(fmt.Errorf("%w (nothing was loaded)", err))
		}
		return ld, fmt.Errorf("populate: %w (the partial load was removed)", err)
	}
	ld.loaded = true
	if dump != nil {
		ld.pages, ld.redirects = dump.Pages, dump.Redirects
	}
	return ld, nil
}

// progressSource reports a long load's progress every 10 seconds.
type progressSource struct {
	src         wiki.Source
	w           io.Writer
	n, bytes    int64
	start, last time.Time
}

func (p *progressSource) Next() (wiki.Article, error) {
	a, err := p.src.Next()
	if err != nil {
		return a, err
	}
	p.n++
	p.bytes += int64(len(a.Body))
	if p.n%1024 == 0 && time.Since(p.last) >= 10*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "  %d articles, %.0f MB, %s\n", p.n, float64(p.bytes)/1e6, time.Since(p.start).Round(time.Second))
	}
	return a, nil
}

func newWikiLoadCmd() *cobra.Command {
	var f wikiData
	var reset bool
	c := &cobra.Command{
		Use:   "wiki",
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(cmd); err != nil {
				return err
			}
			dsn, dir := f.db, ""
			if dsn == "" {
				var err error
				if dir, err = newRunDir(f.results, wiki.Name+"-load", "sqlite", time.Now()); err != nil {
					return err
				}
				dsn = defaultSQLite(dir, wiki.Name)
			}
			ctx := cmd.Context()
			a, db, store, closeAll, err := openWikiStore(ctx, dsn)
			if err != nil {
				return err
			}
			defer closeAll()
			if reset {
				if err := store.Reset(ctx); err != nil {
					return fmt.Errorf("reset: %w", err)
				}
			}
			ld, err := f.prepare(ctx, db, store, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !ld.loaded {
				fmt.Fprintf(out, "the database already holds %d articles (%.1f MB); nothing to load (--reset replaces them)\n", ld.counts.Articles, float64(ld.counts.Bytes)/1e6)
				return nil
			}
			fmt.Fprintf(out, "loaded %d articles (%.1f MB of text) from %s into %s in %.2fs", ld.counts.Articles, float64(ld.counts.Bytes)/1e6, ld.source, adapter.Redact(dsn), ld.seconds)
			if ld.sizeBytes > 0 {
				fmt.Fprintf(out, "; %.1f MB on disk", float64(ld.sizeBytes)/1e6)
			}
			fmt.Fprintln(out)
			if ld.pages > 0 {
				fmt.Fprintf(out, "the dump had %d pages; %d redirects were skipped\n", ld.pages, ld.redirects)
			}
			if dir != "" {
				info, _ := db.Info(ctx)
				if err := writeWikiLoadResult(dir, a, info, dsn, f, ld); err != nil {
					return err
				}
				fmt.Fprintf(out, "run it with: fieldbench run wiki --db %s\n", dsn)
			}
			return nil
		},
	}
	f.bind(c, true)
	c.Flags().BoolVar(&reset, "reset", false, "remove every article first, then load")
	c.Flags().StringVar(&f.results, "results", "results", "where the run directory is created when --db is not given")
	return c
}

// writeWikiLoadResult leaves a self-describing record of a load done into a
// new run directory (populate time and size are figures of the study).
func writeWikiLoadResult(dir string, a adapter.Adapter, info adapter.Info, dsn string, f wikiData, ld wikiLoad) error {
	h := newHeader(wiki.Name, a, info, dsn, f.seed, nil)
	h.Started = time.Now().UTC()
	h.Options = map[string]any{"articles": ld.counts.Articles, "seed": f.seed, "source": ld.source, "command": "load"}
	w, err := result.Create(dir, h)
	if err != nil {
		return err
	}
	err = errors.Join(
		w.Event(result.Event{At: 0, Name: "populate", Detail: fmt.Sprintf("%.2fs", ld.seconds)}),
		w.Summary(result.Summary{Ops: map[string]result.OpSummary{}, Extra: ld.extra()}),
	)
	return errors.Join(err, w.Close())
}

// wikiRunFlags are run's request-set flags.
type wikiRunFlags struct {
	requests, reads, threads int
	sets, repeat             int
	dist                     string
	zipfS                    float64
	loop                     bool
}

func (r wikiRunFlags) plan(seed int64) (wiki.Plan, error) {
	d, err := wiki.ParseDist(r.dist)
	if err != nil {
		return wiki.Plan{}, job.Usage(err)
	}
	p := wiki.Plan{Requests: r.requests, ReadPct: r.reads, Threads: r.threads, Dist: d, ZipfS: r.zipfS, Seed: seed, Articles: 1}
	switch {
	case r.sets < 1:
		return p, usagef("--sets must be at least 1 (got %d)", r.sets)
	case r.repeat < 1:
		return p, usagef("--repeat must be at least 1 (got %d)", r.repeat)
	case r.loop && r.reads != 100:
		return p, usagef("--loop sends read requests only: give --reads 100 (got %d)", r.reads)
	}
	if err := p.Validate(); err != nil {
		return p, job.Usage(err)
	}
	return p, nil
}

func newWikiRunCmd() *cobra.Command {
	var f wikiData
	var r wikiRunFlags
	c := &cobra.Command{
		Use:   "wiki",
		Short: "Run wiki request sets (the study's defaults: 10,000 requests, 80 % reads, each set 10 times)",
		Long: `run loads the articles when the database is empty (synthetic, or --from a
MediaWiki dump), then runs --sets request sets back to back. A request set is
--requests requests split over --threads client threads, each doing its share
sequentially; a request reads a random article (uniform over all ids, or
--dist zipf) and, for the (100 - --reads) % that are updates, appends "1" to
it and writes it back. Each request set is executed --repeat times; its point
in the result is the mean time of the repetitions with their standard
deviation, drawn against elapsed time with a ±SD band. Every request's
latency is recorded too (operations read and update).

Results go to results/<time>-wiki-<adapter>/: result.jsonl and report.html.`,
		Example: `  fieldbench run wiki
  fieldbench run wiki --articles 100000 --threads 4 --sets 30 --repeat 5
  fieldbench run wiki --db sqlite:///tmp/wiki.db --dist zipf --reads 95`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(cmd); err != nil {
				return err
			}
			p, err := r.plan(f.seed)
			if err != nil {
				return err
			}
			return runWiki(cmd, f, p, r.sets, r.repeat, r.loop)
		},
	}
	f.bind(c, true)
	c.Flags().IntVar(&r.requests, "requests", wiki.DefaultRequests, "requests per request set (R)")
	c.Flags().IntVar(&r.reads, "reads", wiki.DefaultReads, "percentage of read-only requests (r); the others append \"1\" and write back")
	c.Flags().IntVar(&r.threads, "threads", wiki.DefaultThreads, "client threads (T), each doing requests/threads requests sequentially (the study: one per database node)")
	c.Flags().IntVar(&r.sets, "sets", wiki.DefaultSets, "request sets to run back to back")
	c.Flags().IntVar(&r.repeat, "repeat", wiki.DefaultRepeat, "executions of each request set (its point is their mean ± SD)")
	c.Flags().StringVar(&r.dist, "dist", string(wiki.Uniform), "how request ids are drawn: uniform (the study) or zipf")
	c.Flags().Float64Var(&r.zipfS, "zipf-s", wiki.DefaultZipfS, "skew s of --dist zipf (> 1; rank k has weight 1/k^s)")
	c.Flags().StringVar(&f.results, "results", "results", "directory under which the run directory is created")
	c.Flags().BoolVar(&r.loop, "loop", false, "send every thread's requests from one event loop over raw connections, as pgbench and redis-benchmark do, instead of a goroutine per thread (read-only: --reads 100; postgres and single-server redis; see docs/wiki.md)")
	return c
}

func runWiki(cmd *cobra.Command, f wikiData, p wiki.Plan, sets, repeat int, useLoop bool) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if useLoop && f.db == "" {
		return usagef("--loop needs --db: a postgres or redis DSN (the default SQLite file has no event-loop reads)")
	}
	dir, dsn, err := runDirFor(f.results, wiki.Name, wiki.Name, f.db)
	if err != nil {
		return err
	}
	a, db, store, closeAll, err := openWikiStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer closeAll()
	// The event loop's connections are opened before a load, so that a
	// store without them is refused at once.
	var loopConns []loop.Conn
	if useLoop {
		if loopConns, err = openLoopConns(ctx, a, store, p.Threads); err != nil {
			os.Remove(dir) // still empty: the run did not start
			return err
		}
		defer func() {
			for _, c := range loopConns {
				c.Close()
			}
		}()
	}
	ld, err := f.prepare(ctx, db, store, stderr)
	if err != nil {
		return err
	}
	p.Articles = ld.counts.Articles
	if err := p.Validate(); err != nil {
		return err
	}
	info, err := db.Info(ctx)
	if err != nil {
		return fmt.Errorf("read database version: %w", err)
	}

	h := newHeader(wiki.Name, a, info, dsn, f.seed, wiki.Ops)
	h.Series = map[string]result.SeriesMeta{wikiSeries: {
		Title:   fmt.Sprintf("Request-set time (%d requests, %d%% reads, %s; mean ± SD of %s)", p.PerThread()*int64(p.Threads), p.ReadPct, wikiPlural(p.Threads, "thread"), wikiPlural(repeat, "execution")),
		XLabel:  "elapsed (s)",
		YLabel:  "request-set time (s)",
		XIsTime: true,
		Band:    "sd",
	}}
	h.Options = map[string]any{
		"articles": ld.counts.Articles, "seed": f.seed, "source": ld.source,
		"requests": p.Requests, "requests_per_thread": p.PerThread(), "reads": p.ReadPct, "threads": p.Threads,
		"sets": sets, "repeat": repeat, "dist": string(p.Dist),
	}
	if p.Dist == wiki.Zipf {
		h.Options["zipf_s"] = p.ZipfS
	}
	if f.keepRedirects {
		h.Options["keep_redirects"] = true
	}
	if useLoop {
		h.Options["client"] = "event loop (runner/loop: one goroutine, epoll)"
	}
	s, es, err := startRun(ctx, dir, h, stdout, stderr)
	if err != nil {
		return err
	}
	for k, v := range ld.extra() {
		s.extra[k] = v
	}
	if rest := p.Requests % p.Threads; rest != 0 {
		fmt.Fprintf(stderr, "note: %d requests over %d threads: each thread does %d, so a request set has %d requests\n",
			p.Requests, p.Threads, p.PerThread(), p.PerThread()*int64(p.Threads))
	}
	fmt.Fprintf(stderr, "running wiki on %s %s: %s × %s of %d requests (%d%% reads, %s ids over %d articles) on %s\n",
		info.Name, info.Version, wikiPlural(sets, "request set"), wikiPlural(repeat, "execution"), p.PerThread()*int64(p.Threads), p.ReadPct, p.Dist, p.Articles, wikiPlural(p.Threads, "thread"))

	handles := make([]*recorder.Handle, p.Threads)
	for i := range handles {
		handles[i] = s.rec.Handle()
	}
	workers := make([]runner.Worker, p.Threads)
	loopClients := make([]loop.Client, p.Threads)
	var loopErr error
	batch := func(ctx context.Context, clients []*wiki.Client, per int64) bool {
		if useLoop {
			for i, c := range clients {
				loopClients[i] = c
			}
			stopped, err := loop.Run(ctx, loopConns, loopClients, handles, per, loop.DefaultTimeout)
			if err != nil {
				loopErr = err // the connections are unusable: no further set
				return true
			}
			return stopped
		}
		for i, c := range clients {
			workers[i] = c
		}
		return runner.Batch(ctx, workers, handles, per)
	}
	var means []float64
	clock, prog := s.startClock(0)
	tot, runErr := wiki.RunSets(ctx, store, p, sets, repeat, batch, func(r wiki.SetResult) error {
		mean, sd := r.MeanSD()
		means = append(means, mean)
		pt := result.Point{
			Series: wikiSeries, X: r.End.Sub(s.header.Started).Seconds(), Y: mean, SD: sd, N: len(r.Seconds),
			Labels: map[string]string{"set": strconv.Itoa(r.Set)},
		}
		if r.Partial {
			pt.Labels["partial"] = "true"
		}
		if prog.tty {
			fmt.Fprint(stderr, "\r\033[K")
		}
		fmt.Fprintf(stderr, "request set %d/%d: %.3fs ± %.3fs (%s)\n", r.Set, sets, mean, sd, wikiPlural(len(r.Seconds), "execution"))
		stop := es.wikiSet(&pt)
		return errors.Join(s.point(pt), stop)
	})
	if errors.Is(runErr, errStopSets) {
		runErr = nil
	}
	runErr = errors.Join(runErr, loopErr)
	runErr = errors.Join(runErr, stopClock(clock, prog), es.end())
	interrupted := tot.Interrupted

	s.extra["request_sets"] = float64(len(means))
	s.extra["updates_acknowledged"] = float64(tot.Updated)
	// Every acknowledged update appended one byte, so the growth of the
	// stored text tells how many were lost (see docs/wiki.md).
	dctx, cancel := detached(ctx, 5*time.Minute)
	if after, err := store.Counts(dctx); err == nil {
		s.extra["lost_updates"] = float64(tot.Updated - (after.Bytes - ld.counts.Bytes))
		s.extra["final_total_bytes"] = float64(after.Bytes)
	} else {
		fmt.Fprintf(stderr, "fieldbench: count articles after the run: %v\n", err)
	}
	cancel()
	if len(means) > 0 {
		m, sd := wiki.MeanSD(means)
		s.extra["request_set_mean_ms"] = m * 1e3
		s.extra["request_set_sd_ms"] = sd * 1e3
		s.extra["request_set_median_delta_ms"] = wiki.MedianDelta(means) * 1e3
	}
	if interrupted {
		_ = s.event("interrupted", fmt.Sprintf("%d request sets recorded (the last may be partial)", len(means)))
	}
	if err := errors.Join(runErr, s.finish(interrupted)); err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	return nil
}

// openLoopConns opens the connections of run wiki --loop, one per thread.
func openLoopConns(ctx context.Context, a adapter.Adapter, store wiki.Store, n int) ([]loop.Conn, error) {
	lr, ok := store.(loop.Opener)
	switch {
	case !loop.Supported:
		return nil, usagef("--loop needs Linux (epoll)")
	case !ok:
		return nil, usagef("--loop: the %s adapter has no event-loop reads (postgres and redis have)", a.Name())
	}
	return lr.LoopConns(ctx, n)
}

// wikiPlural is "1 thread" or "4 threads".
func wikiPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func newWikiOpCmd() *cobra.Command {
	var db string
	var id int64
	var full bool
	mk := func(name, short string) *cobra.Command {
		c := &cobra.Command{
			Use:   name,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runWikiOp(cmd, db, name, id, full)
			},
		}
		c.Flags().StringVar(&db, "db", "", "database DSN (required), e.g. sqlite:///tmp/wiki.db")
		c.Flags().Int64Var(&id, "id", 0, "article id (1..articles)")
		if name == "read" {
			c.Flags().BoolVar(&full, "full", false, "print the whole body (default: its first 300 bytes)")
		}
		return c
	}
	c := &cobra.Command{
		Use:   "wiki",
		Short: "Run one wiki request and print the article as JSON",
		Example: `  fieldbench op wiki read --db sqlite:///tmp/wiki.db --id 42
  fieldbench op wiki update --db sqlite:///tmp/wiki.db --id 42`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("op wiki needs an operation: read or update")
		},
	}
	c.AddCommand(
		mk("read", "Read article --id: its id, title, size and body"),
		mk("update", `Append "1" to article --id and write it back, as an update request does`),
	)
	return c
}

// wikiOpOutput is what op wiki prints: sizes in bytes; body only for read.
type wikiOpOutput struct {
	ID         int64   `json:"id"`
	Title      string  `json:"title"`
	SizeBefore *int    `json:"size_before,omitempty"`
	Size       int     `json:"size"`
	Truncated  bool    `json:"truncated,omitempty"`
	Body       *string `json:"body,omitempty"`
}

// opPreview is how much of a body op wiki read prints without --full.
const opPreview = 300

func runWikiOp(cmd *cobra.Command, dsn, op string, id int64, full bool) error {
	if dsn == "" {
		return usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/wiki.db")
	}
	if id < 1 {
		return usagef("op wiki %s needs --id (an article id from 1)", op)
	}
	ctx := cmd.Context()
	_, _, store, closeAll, err := openWikiStore(ctx, dsn)
	if err != nil {
		return err
	}
	defer closeAll()
	a, err := store.Read(ctx, id)
	if errors.Is(err, wiki.ErrNotFound) {
		c, cerr := store.Counts(ctx)
		if cerr != nil || c.Articles == 0 {
			return usagef("%s holds no wiki articles: load them first with 'fieldbench load wiki --db %s'", adapter.Redact(dsn), adapter.Redact(dsn))
		}
		return usagef("article %d does not exist (the database has articles 1..%d)", id, c.MaxID)
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	out := wikiOpOutput{ID: a.ID, Title: a.Title, Size: len(a.Body)}
	switch op {
	case "read":
		body := a.Body
		if !full && len(body) > opPreview {
			cut := opPreview
			for cut > 0 && !utf8.RuneStart(body[cut]) {
				cut--
			}
			body = body[:cut]
			out.Truncated = true
		}
		out.Body = &body
	case "update":
		if err := store.Update(ctx, id, a.Body+"1"); err != nil {
			return fmt.Errorf("update: %w", err)
		}
		before := len(a.Body)
		out.SizeBefore, out.Size = &before, before+1
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
