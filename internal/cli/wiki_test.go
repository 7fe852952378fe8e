package cli_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

const (
	wikiDump    = "../../workload/wiki/testdata/sample-pages-articles.xml"
	wikiDumpBz2 = "../../workload/wiki/testdata/sample-pages-articles.xml.bz2"
)

func TestWikiBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	run := func(args ...string) []string {
		return append([]string{"run", "wiki", "--results", res, "--articles", "10"}, args...)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"reads over 100", run("--reads", "120"), "--reads is a percentage: 0 to 100 (got 120)"},
		{"negative reads", run("--reads", "-5"), "--reads is a percentage"},
		{"no threads", run("--threads", "0"), "--threads must be at least 1 (got 0)"},
		{"no sets", run("--sets", "0"), "--sets must be at least 1 (got 0)"},
		{"no repetitions", run("--repeat", "0"), "--repeat must be at least 1"},
		{"fewer requests than threads", run("--requests", "3", "--threads", "4"), "--requests (3) must be at least --threads (4)"},
		{"no requests", run("--requests", "0"), "--requests must be at least 1"},
		{"unknown dist", run("--dist", "pareto"), `unknown --dist "pareto" (known: uniform, zipf)`},
		{"zipf skew 1", run("--dist", "zipf", "--zipf-s", "1"), "--zipf-s must be a number above 1"},
		{"no articles", []string{"run", "wiki", "--results", res, "--articles", "0"}, "--articles must be between 1 and"},
		{"missing dump", []string{"run", "wiki", "--results", res, "--from", filepath.Join(dir, "nope.xml.bz2")}, "no such file"},
		{"dump is a directory", []string{"load", "wiki", "--results", res, "--from", dir}, "is a directory"},
		{"articles and dump", []string{"load", "wiki", "--results", res, "--from", wikiDump, "--articles", "5"}, "--articles and --from exclude each other"},
		{"loop on the default database", run("--loop", "--reads", "100"), "--loop needs --db"},
		{"loop on sqlite", run("--loop", "--reads", "100", "--db", "sqlite://"+filepath.Join(dir, "loop.db")), "--loop: the sqlite adapter has no event-loop connections (postgres and redis have)"},
		{"unknown adapter", run("--db", "nosuchdb://x"), `no adapter for DSN scheme "nosuchdb"`},
		{"bad flag", run("--request", "5"), "unknown flag"},
		{"generate without out", []string{"generate", "wiki"}, "needs --out"},
		{"generate bad format", []string{"generate", "wiki", "--out", dir, "--format", "xml"}, `unknown --format "xml"`},
		{"op without operation", []string{"op", "wiki"}, "needs an operation: read or update"},
		{"op without db", []string{"op", "wiki", "read", "--id", "1"}, "needs --db"},
		{"op without id", []string{"op", "wiki", "read", "--db", "sqlite://" + filepath.Join(dir, "x.db")}, "needs --id"},
		{"op on an empty database", []string{"op", "wiki", "update", "--id", "1", "--db", "sqlite://" + filepath.Join(dir, "empty.db")}, "holds no wiki articles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d (usage); stderr:\n%s", code, cli.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
	// Bad flags are refused before a run directory is made.
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// TestWikiRunEndToEnd runs the real command with small settings and checks
// the result file (request-set points, series, figures), the report, and
// every article against the oracle's replay of the same plan.
func TestWikiRunEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "wiki.db")
	const articles, requests, threads, sets, repeat, seed = 300, 200, 2, 3, 2, 5
	code, out, stderr := execute(context.Background(), "run", "wiki", "--db", dsn, "--results", filepath.Join(dir, "results"),
		"--articles", itoa(articles), "--requests", itoa(requests), "--threads", itoa(threads), "--sets", itoa(sets),
		"--repeat", itoa(repeat), "--seed", itoa(seed), "--reads", "60")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
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
	ctx := context.Background()

	// A second run on the same database uses the loaded articles, and an
	// explicit, different --articles is refused.
	code, _, stderr = execute(ctx, "run", "wiki", "--db", dsn, "--results", filepath.Join(dir, "results2"), "--articles", "99", "--sets", "1", "--repeat", "1", "--requests", "10")
	if code != cli.ExitUsage || !strings.Contains(stderr, "holds 300 articles, not --articles 99") {
		t.Fatalf("mismatched --articles: exit %d\n%s", code, stderr)
	}
}

// TestWikiRunLoopEndToEnd runs reads and updates through the event loop
// (run wiki --loop) on a real PostgreSQL and a real Redis that the CLI
// starts, and checks the run as TestWikiRunEndToEnd does: every article
// what the oracle allows after replaying the plan, the lost updates
// reported being those found.
func TestWikiRunLoopEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and Redis (install with scripts/install-servers.sh)")
	}
	t.Parallel()
	for _, engine := range []string{"postgres", "redis"} {
		t.Run(engine, func(t *testing.T) {
			base, err := os.MkdirTemp("", "fieldbench-cli-loop-")
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(base, 0o755) // PostgreSQL runs as the postgres user
			t.Cleanup(func() { os.RemoveAll(base) })
			dir := filepath.Join(base, engine)
			ctx := context.Background()
			code, out, stderr := execute(ctx, "cluster", "up", engine, "--nodes", "1", "--dir", dir)
			t.Cleanup(func() { execute(ctx, "cluster", "down", "--dir", dir) })
			if code != 0 || !strings.Contains(out, "DSN: ") {
				t.Fatalf("up: exit %d\n%s\n%s", code, out, stderr)
			}
			dsn := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "DSN: ", 2)[1], "\n", 2)[0])
			const articles, requests, threads, sets, repeat, seed = 200, 300, 3, 2, 2, 11
			results := filepath.Join(base, "results")
			code, out, stderr = execute(ctx, "run", "wiki", "--loop", "--db", dsn, "--results", results,
				"--articles", itoa(articles), "--requests", itoa(requests), "--threads", itoa(threads), "--sets", itoa(sets),
				"--repeat", itoa(repeat), "--seed", itoa(seed), "--reads", "60")
			if code != 0 {
				t.Fatalf("run --loop: exit %d\n%s\n%s", code, out, stderr)
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
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "wiki.db")
	code, out, stderr := execute(ctx, "load", "wiki", "--db", dsn, "--from", wikiDumpBz2)
	if code != 0 || !strings.Contains(out, "loaded 5 articles") || !strings.Contains(out, "7 pages; 2 redirects were skipped") {
		t.Fatalf("load: exit %d\n%s\n%s", code, out, stderr)
	}
	opOn := func(dsn string, args ...string) map[string]any {
		t.Helper()
		code, out, stderr := execute(ctx, append([]string{"op", "wiki"}, append(args, "--db", dsn)...)...)
		if code != 0 {
			t.Fatalf("op %v: exit %d\n%s", args, code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("op %v printed %q: %v", args, out, err)
		}
		return m
	}
	op := func(args ...string) map[string]any { t.Helper(); return opOn(dsn, args...) }
	r := op("read", "--id", "3")
	if r["title"] != "Zürich" || r["size"] != 137.0 || !strings.HasPrefix(r["body"].(string), "'''Zürich'''") || r["truncated"] != nil {
		t.Fatalf("read 3: %v", r)
	}
	u := op("update", "--id", "3")
	if u["size_before"] != 137.0 || u["size"] != 138.0 || u["body"] != nil {
		t.Fatalf("update 3: %v", u)
	}
	if r := op("read", "--id", "3", "--full"); !strings.HasSuffix(r["body"].(string), "(Zürichsee).1") {
		t.Fatalf("read after update: %v", r)
	}
	code, _, stderr = execute(ctx, "op", "wiki", "read", "--id", "6", "--db", dsn)
	if code != cli.ExitUsage || !strings.Contains(stderr, "article 6 does not exist (the database has articles 1..5)") {
		t.Fatalf("read of a missing id: exit %d\n%s", code, stderr)
	}

	// Loading again leaves the articles; --reset replaces them.
	code, out, _ = execute(ctx, "load", "wiki", "--db", dsn, "--from", wikiDump)
	if code != 0 || !strings.Contains(out, "already holds 5 articles") {
		t.Fatalf("second load: exit %d\n%s", code, out)
	}
	code, out, stderr = execute(ctx, "load", "wiki", "--db", dsn, "--reset", "--from", wikiDump, "--keep-redirects")
	if code != 0 || !strings.Contains(out, "loaded 7 articles") {
		t.Fatalf("reload with redirects: exit %d\n%s\n%s", code, out, stderr)
	}
	if r := op("read", "--id", "2"); r["title"] != "Einstein" {
		t.Fatalf("redirect kept as article 2: %v", r)
	}

	// A long body is cut in the output unless --full.
	dsn2 := "sqlite://" + filepath.Join(dir, "synthetic.db")
	if code, out, stderr := execute(ctx, "load", "wiki", "--db", dsn2, "--articles", "20", "--seed", "2"); code != 0 {
		t.Fatalf("synthetic load: exit %d\n%s\n%s", code, out, stderr)
	}
	g, _ := wiki.NewGenerator(2, 20)
	short, full := opOn(dsn2, "read", "--id", "7"), g.Article(7)
	if short["truncated"] != true || len(short["body"].(string)) != 300 || short["size"] != float64(len(full.Body)) {
		t.Fatalf("read without --full: %v", short)
	}
	code, out, _ = execute(ctx, "op", "wiki", "read", "--id", "7", "--full", "--db", dsn2)
	var whole wiki.Article
	if code != 0 || json.Unmarshal([]byte(out), &whole) != nil || whole != full {
		t.Fatalf("read --full differs from the generator's article 7")
	}
}

func TestWikiLoadMalformedDump(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
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
	code, _, stderr := execute(ctx, "load", "wiki", "--db", dsn, "--from", bad)
	if code != cli.ExitUsage || !strings.Contains(stderr, "dump "+bad+": malformed") || !strings.Contains(stderr, "nothing was loaded") {
		t.Fatalf("malformed dump: exit %d\n%s", code, stderr)
	}
	// Nothing of the failed load stays: a run would load again.
	code, out, stderr := execute(ctx, "op", "wiki", "read", "--id", "1", "--db", dsn)
	if code != cli.ExitUsage || !strings.Contains(stderr, "holds no wiki articles") {
		t.Fatalf("after a failed load: exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestWikiGenerate(t *testing.T) {
	t.Parallel()
	g, _ := wiki.NewGenerator(4, 50)
	for _, format := range []string{"jsonl", "csv"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, out, stderr := execute(context.Background(), "generate", "wiki", "--articles", "50", "--seed", "4", "--format", format, "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
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

func TestWikiList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	i := strings.Index(out, "wiki —")
	if code != 0 || i < 0 {
		t.Fatalf("list (exit %d) lacks the wiki workload:\n%s", code, out)
	}
	for _, want := range []string{"read, update", "--articles", "--requests", "(default 10000)", "--reads", "(default 80)", "--threads", "--sets", "--repeat", "--dist", "(default uniform)", "--zipf-s", "--from", "--seed", "--db", "--results", "--loop"} {
		if !strings.Contains(out[i:], want) {
			t.Errorf("wiki's list entry lacks %q", want)
		}
	}
}
