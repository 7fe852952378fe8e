package job_test

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

const (
	wikiDump    = "../workload/wiki/testdata/sample-pages-articles.xml"
	wikiDumpBz2 = "../workload/wiki/testdata/sample-pages-articles.xml.bz2"
)

// runWiki runs `run wiki` through the job with options given as on the
// command line, on a new SQLite database, and returns its result.
func runWiki(t *testing.T, opts map[string]string) (*result.Run, error) {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"results": filepath.Join(dir, "results"), "db": "sqlite://" + filepath.Join(dir, "wiki.db")}
	for k, v := range opts {
		all[k] = v
	}
	if _, stderr, err := runJob(t, wiki.Name, "run", all); err != nil {
		return nil, err
	} else if runs, _ := filepath.Glob(filepath.Join(dir, "results", "*", result.FileName)); len(runs) != 1 {
		t.Fatalf("result files %v\n%s", runs, stderr)
	}
	return onlyRun(t, filepath.Join(dir, "results")), nil
}

// TestWikiRateOpenLoop runs request sets open loop: 200 requests at
// 2,000/s cannot finish before the last one's intended start, 99.5 ms after
// the set began (a lower bound, whatever the machine), every request is
// still made (the updates are those the oracle replays from the seeds), and
// the header records the rate. A closed-loop run's header stays as before.
func TestWikiRateOpenLoop(t *testing.T) {
	t.Parallel()
	const articles, requests, threads, sets, rate = 100, 200, 2, 2, 2000.0
	for _, tc := range []struct {
		name string
		rate float64
	}{
		{"open", rate},
		{"closed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, err := runWiki(t, map[string]string{
				"articles": strconv.Itoa(articles), "requests": strconv.Itoa(requests), "threads": strconv.Itoa(threads),
				"sets": strconv.Itoa(sets), "repeat": "1", "reads": "50", "seed": "3", "rate": strconv.FormatFloat(tc.rate, 'g', -1, 64),
			})
			if err != nil {
				t.Fatal(err)
			}
			// SQLite's pools (one writer connection, a few readers) report
			// how many connections served the threads.
			if c := run.Summary.Client; c == nil || c.Connections == nil || c.Connections.PeakOpen < 1 || c.Connections.Max < 2 {
				t.Fatalf("client cost %+v: want the connections that served the threads", c)
			}
			opts := run.Header.Options
			if tc.rate == 0 {
				if _, has := opts["rate"]; has {
					t.Fatalf("a closed-loop run records a rate: %v", opts)
				}
				return
			}
			if opts["rate"] != rate || opts["loop"] != "open" || !strings.Contains(run.Header.Series["request-set"].Title, "open loop at 2000 requests/s") {
				t.Fatalf("header options %v, series %v", opts, run.Header.Series)
			}
			if len(run.Points) != sets {
				t.Fatalf("%d request sets, want %d", len(run.Points), sets)
			}
			for _, p := range run.Points {
				if p.Y < (requests-1)/rate {
					t.Errorf("request set %s took %.4fs, less than the %.4fs of its last request's intended start", p.Labels["set"], p.Y, (requests-1)/rate)
				}
			}
			reads, updates := run.Summary.Ops["read"].Count, run.Summary.Ops["update"].Count
			if reads+updates != sets*requests {
				t.Fatalf("%d reads + %d updates, want %d requests", reads, updates, sets*requests)
			}
			g, _ := wiki.NewGenerator(3, articles)
			o, err := wiki.NewOracle(g.Source(1, articles))
			if err != nil {
				t.Fatal(err)
			}
			plan := wiki.Plan{Requests: requests, ReadPct: 50, Threads: threads, Dist: wiki.Uniform, Seed: 3, Articles: articles}
			if n := o.Replay(plan, sets, 1); n != updates {
				t.Fatalf("the oracle replays %d updates, the open-loop run made %d", n, updates)
			}
		})
	}
}

func TestWikiRateBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts map[string]string
		want string
	}{
		{"negative", map[string]string{"rate": "-1"}, "--rate must be a number of requests per second, 0 or more (got -1)"},
		{"with --loop", map[string]string{"rate": "100", "loop": "true", "reads": "100"}, "--rate and --loop exclude each other"},
		{"retries with --loop", map[string]string{"retries": "2", "loop": "true", "reads": "100"}, "--retries and --op-timeout are not for --loop"},
		{"negative --op-timeout", map[string]string{"op-timeout": "-1s"}, "--op-timeout must not be negative (got -1s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := runWiki(t, tc.opts)
			if !job.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error saying %q", err, tc.want)
			}
		})
	}
}

// TestWikiOpTimeout: with another connection holding SQLite's write
// lock, every update waits for it (SQLite's busy timeout is 10 s); with
// --op-timeout each attempt gives up after 100 ms, counted as an error of
// kind timeout and retried once, so the run ends in about a second instead
// of 100 s, and the header and summary say what the policy did.
func TestWikiOpTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "wiki.db")
	opts := map[string]string{"db": "sqlite://" + path, "articles": "20", "results": filepath.Join(dir, "results")}
	if _, stderr, err := runJob(t, wiki.Name, "load", opts); err != nil {
		t.Fatalf("load: %v\n%s", err, stderr)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer lock.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck // the test's end
	for k, v := range map[string]string{"requests": "10", "threads": "2", "sets": "1", "repeat": "1", "reads": "0",
		"op-timeout": "100ms", "retries": "1", "retry-backoff": "10ms"} {
		opts[k] = v
	}
	t0 := time.Now()
	if _, stderr, err := runJob(t, wiki.Name, "run", opts); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if took := time.Since(t0); took > 30*time.Second {
		t.Fatalf("the run took %s: the attempts were not bounded", took)
	}
	run := onlyRun(t, filepath.Join(dir, "results"))
	up := run.Summary.Ops["update"]
	if up.Count != 0 || up.Errors["timeout"] != 10 {
		t.Fatalf("updates: %d acknowledged, errors %v; want 0 and 10 timeouts", up.Count, up.Errors)
	}
	if ex := run.Summary.Extra; ex["retries"] != 10 || ex["retry_exhausted"] != 10 || ex["updates_acknowledged"] != 0 {
		t.Fatalf("summary extras %v: want 10 retries, 10 exhausted, no update acknowledged", ex)
	}
	if o := run.Header.Options; o["op_timeout"] == nil || o["retries"] == nil {
		t.Fatalf("header options %v: want op-timeout and retries", o)
	}
}

func TestWikiBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	run := func(kv ...string) map[string]string {
		return with(map[string]string{"results": res, "articles": "10"}, kv...)
	}
	checkBadInput(t, wiki.Name, []badInput{
		{"reads over 100", "run", run("reads", "120"), "--reads is a percentage: 0 to 100 (got 120)"},
		{"negative reads", "run", run("reads", "-5"), "--reads is a percentage"},
		{"no threads", "run", run("threads", "0"), "--threads must be at least 1 (got 0)"},
		{"no sets", "run", run("sets", "0"), "--sets must be at least 1 (got 0)"},
		{"no repetitions", "run", run("repeat", "0"), "--repeat must be at least 1"},
		{"fewer requests than threads", "run", run("requests", "3", "threads", "4"), "--requests (3) must be at least --threads (4)"},
		{"no requests", "run", run("requests", "0"), "--requests must be at least 1"},
		{"unknown dist", "run", run("dist", "pareto"), `unknown --dist "pareto" (known: uniform, zipf)`},
		{"zipf skew 1", "run", run("dist", "zipf", "zipf-s", "1"), "--zipf-s must be a number above 1"},
		{"no articles", "run", map[string]string{"results": res, "articles": "0"}, "--articles must be between 1 and"},
		{"missing dump", "run", map[string]string{"results": res, "from": filepath.Join(dir, "nope.xml.bz2")}, "no such file"},
		{"dump is a directory", "load", map[string]string{"results": res, "from": dir}, "is a directory"},
		{"articles and dump", "load", map[string]string{"results": res, "from": wikiDump, "articles": "5"}, "--articles and --from exclude each other"},
		{"loop on the default database", "run", run("loop", "true", "reads", "100"), "--loop needs --db"},
		{"loop on sqlite", "run", run("loop", "true", "reads", "100", "db", "sqlite://"+filepath.Join(dir, "loop.db")), "--loop: the sqlite adapter has no event-loop connections (postgres and redis have)"},
		{"unknown adapter", "run", run("db", "nosuchdb://x"), `no adapter for DSN scheme "nosuchdb"`},
		{"generate without out", "generate", nil, "needs --out"},
		{"generate bad format", "generate", map[string]string{"out": dir, "format": "xml"}, `unknown --format "xml"`},
		{"op without operation", "op", nil, "needs an operation: read or update"},
		{"op without db", "op read", map[string]string{"id": "1"}, "needs --db"},
		{"op without id", "op read", map[string]string{"db": "sqlite://" + filepath.Join(dir, "x.db")}, "needs --id"},
		{"op on an empty database", "op update", map[string]string{"id": "1", "db": "sqlite://" + filepath.Join(dir, "empty.db")}, "holds no wiki articles"},
	})
	// Bad options are refused before a run directory is made.
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// TestWikiRunEndToEnd runs the job with small settings and checks the
// result file (request-set points, series, figures), the report, and
// every article against the oracle's replay of the same plan.
func TestWikiRunEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "wiki.db")
	const articles, requests, threads, sets, repeat, seed = 300, 200, 2, 3, 2, 5
	out, stderr, err := runJob(t, wiki.Name, "run", map[string]string{"db": dsn, "results": filepath.Join(dir, "results"),
		"articles": itoa(articles), "requests": itoa(requests), "threads": itoa(threads), "sets": itoa(sets),
		"repeat": itoa(repeat), "seed": itoa(seed), "reads": "60"})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	run := onlyRun(t, filepath.Join(dir, "results"))
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report:", err)
	}
	meta, ok := run.Header.Series["request-set"]
	if !ok || meta.XLabel != "elapsed (s)" || meta.YLabel != "request-set time (s)" || !meta.XIsTime || meta.Band != "sd" || meta.Title == "" {
		t.Fatalf("series meta %+v", run.Header.Series)
	}
	if len(run.Points) != sets {
		t.Fatalf("%d points, want %d", len(run.Points), sets)
	}
	prevX := 0.0
	for i, p := range run.Points {
		if p.Series != "request-set" || p.N != repeat || p.Labels["set"] != itoa(i+1) || p.Y <= 0 || p.SD < 0 || p.X <= prevX {
			t.Errorf("point %d: %+v", i, p)
		}
		prevX = p.X
	}
	checkWikiRun(t, run.Summary, dsn, wiki.Plan{Requests: requests, ReadPct: 60, Threads: threads, Dist: wiki.Uniform, Seed: seed, Articles: articles}, sets, repeat)

	// A second run on the same database uses the loaded articles, and an
	// explicit, different --articles is refused.
	_, _, err = runJob(t, wiki.Name, "run", map[string]string{"db": dsn, "results": filepath.Join(dir, "results2"), "articles": "99", "sets": "1", "repeat": "1", "requests": "10"})
	if !isUsage(err) || !strings.Contains(err.Error(), "holds 300 articles, not --articles 99") {
		t.Fatalf("mismatched --articles: %v", err)
	}
}

// TestWikiRunLoopEndToEnd runs reads and updates through the event loop
// (run wiki --loop) on a real PostgreSQL and a real Redis that the
// adapter tests' OwnCluster starts, and checks the run as TestWikiRunEndToEnd does: every
// article what the oracle allows after replaying the plan, the lost updates
// reported being those found.
func TestWikiRunLoopEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and Redis (install with scripts/install-servers.sh)")
	}
	t.Parallel()
	for _, engine := range []string{"postgres", "redis"} {
		t.Run(engine, func(t *testing.T) {
			_, c := clustertest.OwnCluster(t, engine, cluster.Options{Nodes: 1}, 5*time.Minute)
			dsn, base := c.DSN, t.TempDir()
			const articles, requests, threads, sets, repeat, seed = 200, 300, 3, 2, 2, 11
			results := filepath.Join(base, "results")
			out, stderr, err := runJob(t, wiki.Name, "run", map[string]string{"loop": "true", "db": dsn, "results": results,
				"articles": itoa(articles), "requests": itoa(requests), "threads": itoa(threads), "sets": itoa(sets),
				"repeat": itoa(repeat), "seed": itoa(seed), "reads": "60"})
			if err != nil {
				t.Fatalf("run --loop: %v\n%s\n%s", err, out, stderr)
			}
			run := onlyRun(t, results)
			if c, _ := run.Header.Options["client"].(string); !strings.Contains(c, "event loop") {
				t.Errorf("the result does not say the event loop sent the requests: options %v", run.Header.Options)
			}
			if run.Summary == nil || run.Summary.Ops["update"].Count == 0 {
				t.Fatalf("no updates recorded: %+v", run.Summary)
			}
			checkWikiRun(t, run.Summary, dsn, wiki.Plan{Requests: requests, ReadPct: 60, Threads: threads, Dist: wiki.Uniform, Seed: seed, Articles: articles}, sets, repeat)
		})
	}
}

// checkWikiRun checks a wiki run's summary against the database at dsn:
// every request recorded without error, the figures the summary must have,
// and every stored article what the oracle allows after replaying the
// run's plan p (sets × repeat), the lost updates reported being those found.
func checkWikiRun(t *testing.T, sum *result.Summary, dsn string, p wiki.Plan, sets, repeat int) {
	t.Helper()
	if sum == nil {
		t.Fatal("no summary")
	}
	articles, seed, total := p.Articles, p.Seed, int64(sets*repeat*p.Requests)
	reads, updates := sum.Ops["read"].Count, sum.Ops["update"].Count
	if reads+updates != total || len(sum.Ops["read"].Errors)+len(sum.Ops["update"].Errors) > 0 {
		t.Fatalf("ops %+v, want %d requests without errors", sum.Ops, total)
	}
	for _, k := range []string{"articles", "total_bytes", "populate_seconds", "db_size_bytes", "request_set_mean_ms", "request_set_sd_ms", "lost_updates"} {
		if _, ok := sum.Extra[k]; !ok {
			t.Errorf("summary lacks %s: %v", k, sum.Extra)
		}
	}
	g, _ := wiki.NewGenerator(seed, articles)
	var genBytes int64
	for id := int64(1); id <= articles; id++ {
		genBytes += int64(g.Size(id))
	}
	if sum.Extra["articles"] != float64(articles) || sum.Extra["total_bytes"] != float64(genBytes) || sum.Extra["updates_acknowledged"] != float64(updates) {
		t.Errorf("figures %v: want %d articles, %d bytes, %d updates", sum.Extra, articles, genBytes, updates)
	}
	o, err := wiki.NewOracle(g.Source(1, articles))
	if err != nil {
		t.Fatal(err)
	}
	if n := o.Replay(p, sets, repeat); n != updates {
		t.Fatalf("replay made %d updates, the run recorded %d", n, updates)
	}
	ctx := context.Background()
	_, db, err := adapter.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := db.(wiki.Backend).Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var lost int64
	for id := int64(1); id <= articles; id++ {
		a, err := store.Read(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Check(a); err != nil {
			t.Fatal(err)
		}
		lost += o.Expect(id).Max - int64(len(a.Body)-g.Size(id))
	}
	if sum.Extra["lost_updates"] != float64(lost) {
		t.Errorf("run reported %v lost updates, the database shows %d", sum.Extra["lost_updates"], lost)
	}
}

func TestWikiLoadDumpThenOp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "wiki.db")
	out, stderr, err := runJob(t, wiki.Name, "load", map[string]string{"db": dsn, "from": wikiDumpBz2})
	if err != nil || !strings.Contains(out, "loaded 5 articles") || !strings.Contains(out, "7 pages; 2 redirects were skipped") {
		t.Fatalf("load: %v\n%s\n%s", err, out, stderr)
	}
	opOn := func(dsn, verb string, kv ...string) map[string]any {
		t.Helper()
		out, _, err := runJob(t, wiki.Name, "op "+verb, with(map[string]string{"db": dsn}, kv...))
		if err != nil {
			t.Fatalf("op %s %v: %v", verb, kv, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("op %s %v printed %q: %v", verb, kv, out, err)
		}
		return m
	}
	op := func(verb string, kv ...string) map[string]any { t.Helper(); return opOn(dsn, verb, kv...) }
	r := op("read", "id", "3")
	if r["title"] != "Zürich" || r["size"] != 137.0 || !strings.HasPrefix(r["body"].(string), "'''Zürich'''") || r["truncated"] != nil {
		t.Fatalf("read 3: %v", r)
	}
	u := op("update", "id", "3")
	if u["size_before"] != 137.0 || u["size"] != 138.0 || u["body"] != nil {
		t.Fatalf("update 3: %v", u)
	}
	if r := op("read", "id", "3", "full", "true"); !strings.HasSuffix(r["body"].(string), "(Zürichsee).1") {
		t.Fatalf("read after update: %v", r)
	}
	_, _, err = runJob(t, wiki.Name, "op read", map[string]string{"id": "6", "db": dsn})
	if !isUsage(err) || !strings.Contains(err.Error(), "article 6 does not exist (the database has articles 1..5)") {
		t.Fatalf("read of a missing id: %v", err)
	}

	// Loading again leaves the articles; --reset replaces them.
	out, _, err = runJob(t, wiki.Name, "load", map[string]string{"db": dsn, "from": wikiDump})
	if err != nil || !strings.Contains(out, "already holds 5 articles") {
		t.Fatalf("second load: %v\n%s", err, out)
	}
	out, stderr, err = runJob(t, wiki.Name, "load", map[string]string{"db": dsn, "reset": "true", "from": wikiDump, "keep-redirects": "true"})
	if err != nil || !strings.Contains(out, "loaded 7 articles") {
		t.Fatalf("reload with redirects: %v\n%s\n%s", err, out, stderr)
	}
	if r := op("read", "id", "2"); r["title"] != "Einstein" {
		t.Fatalf("redirect kept as article 2: %v", r)
	}

	// A long body is cut in the output unless --full.
	dsn2 := "sqlite://" + filepath.Join(dir, "synthetic.db")
	if out, stderr, err := runJob(t, wiki.Name, "load", map[string]string{"db": dsn2, "articles": "20", "seed": "2"}); err != nil {
		t.Fatalf("synthetic load: %v\n%s\n%s", err, out, stderr)
	}
	g, _ := wiki.NewGenerator(2, 20)
	short, full := opOn(dsn2, "read", "id", "7"), g.Article(7)
	if short["truncated"] != true || len(short["body"].(string)) != 300 || short["size"] != float64(len(full.Body)) {
		t.Fatalf("read without --full: %v", short)
	}
	out, _, err = runJob(t, wiki.Name, "op read", map[string]string{"id": "7", "full": "true", "db": dsn2})
	var whole wiki.Article
	if err != nil || json.Unmarshal([]byte(out), &whole) != nil || whole != full {
		t.Fatalf("read --full differs from the generator's article 7")
	}
}

func TestWikiLoadMalformedDump(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, err := os.ReadFile(wikiDump)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.xml")
	// Three complete pages, then the input stops.
	if err := os.WriteFile(bad, good[:strings.Index(string(good), "<title>Zürich")], 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite://" + filepath.Join(dir, "wiki.db")
	_, _, err = runJob(t, wiki.Name, "load", map[string]string{"db": dsn, "from": bad})
	if !isUsage(err) || !strings.Contains(err.Error(), "dump "+bad+": malformed") || !strings.Contains(err.Error(), "nothing was loaded") {
		t.Fatalf("malformed dump: %v", err)
	}
	// Nothing of the failed load stays: a run would load again.
	out, stderr, err := runJob(t, wiki.Name, "op read", map[string]string{"id": "1", "db": dsn})
	if !isUsage(err) || !strings.Contains(err.Error(), "holds no wiki articles") {
		t.Fatalf("after a failed load: %v\n%s\n%s", err, out, stderr)
	}
}

func TestWikiGenerate(t *testing.T) {
	t.Parallel()
	g, _ := wiki.NewGenerator(4, 50)
	for _, format := range []string{"jsonl", "csv"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, stderr, err := runJob(t, wiki.Name, "generate", map[string]string{"articles": "50", "seed": "4", "format": format, "out": dir})
			if err != nil {
				t.Fatalf("%v: %s", err, stderr)
			}
			for _, want := range []string{"articles     50", "median bytes", "p99 bytes", "max bytes"} {
				if !strings.Contains(out, want) {
					t.Fatalf("statistics lack %q:\n%s", want, out)
				}
			}
			f, err := os.Open(filepath.Join(dir, "articles."+format))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []wiki.Article
			if format == "jsonl" {
				dec := json.NewDecoder(f)
				for dec.More() {
					var a wiki.Article
					if err := dec.Decode(&a); err != nil {
						t.Fatal(err)
					}
					got = append(got, a)
				}
			} else {
				recs, err := csv.NewReader(f).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(recs[0], ",") != "id,title,body" {
					t.Fatalf("csv header %v", recs[0])
				}
				for _, r := range recs[1:] {
					id, _ := strconv.ParseInt(r[0], 10, 64)
					got = append(got, wiki.Article{ID: id, Title: r[1], Body: r[2]})
				}
			}
			if len(got) != 50 {
				t.Fatalf("%d articles written, want 50", len(got))
			}
			for i, a := range got {
				if a != g.Article(int64(i+1)) {
					t.Fatalf("article %d differs from the generator's", i+1)
				}
			}
		})
	}
}
