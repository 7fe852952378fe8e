package job_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func TestMicroblogBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "results")
	run := func(kv ...string) map[string]string { return with(map[string]string{"results": res}, kv...) }
	checkBadInput(t, microblog.Name, []badInput{
		{"unknown model", "run", run("model", "columnar"), `unknown microblog model "columnar"`},
		{"malformed mix", "run", run("mix", "post"), "malformed --mix"},
		{"unknown timeline reads", "run", run("timeline-reads", "batched"), `unknown timeline reads "batched"`},
		{"mix unknown op", "run", run("mix", "follow=1"), `unknown operation "follow"`},
		{"negative clients", "run", run("clients", "-3"), "clients must be at least 1"},
		{"warmup too long", "run", run("duration", "2s", "warmup", "5s"), "warmup"},
		{"unwritable results", "run", map[string]string{"duration": "1s", "results": filepath.Join(file, "sub")}, "not writable"},
		{"unknown adapter", "run", run("db", "nosuchdb://127.0.0.1/x"), `no adapter for DSN scheme "nosuchdb"`},
		{"too few users", "generate", map[string]string{"users": "1", "out": dir}, "--users must be at least 2"},
		{"generate without out", "generate", nil, "needs --out"},
		{"op without db", "op timeline", map[string]string{"user": "1"}, "needs --db"},
		{"load into missing dir", "load", map[string]string{"db": "sqlite://" + filepath.Join(dir, "no", "such", "x.db")}, "cannot open"},
	})
	// nothing half-made is left for runs refused before they started
	if entries, _ := os.ReadDir(res); len(entries) > 2 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

func TestMicroblogGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := runJob(t, microblog.Name, "generate", map[string]string{"users": "100", "seed": "3", "out": dir})
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	for _, f := range []string{"users.csv", "follows.csv", "tweets.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	ds, _ := microblog.Generate(microblog.GenOptions{Users: 100, Seed: 3})
	if !strings.Contains(out, "R^2") || !strings.Contains(out, itoa(len(ds.Follows))) {
		t.Fatalf("statistics missing or wrong:\n%s", out)
	}
}

// TestRunEveryModelMatchesOracle runs the job for each data model and then
// checks, for every user, userline and timeline against the brute-force
// oracle fed with the generated data and every post the run made.
func TestRunEveryModelMatchesOracle(t *testing.T) {
	t.Parallel()
	for _, model := range microblog.Models {
		t.Run(string(model), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dsn := "sqlite://" + filepath.Join(dir, "mb.db")
			out, stderr, err := runJob(t, microblog.Name, "run", map[string]string{"db": dsn, "users": "60", "seed": "5",
				"model": string(model), "clients": "8", "duration": "2s", "results": filepath.Join(dir, "results")})
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, out, stderr)
			}
			run := onlyRun(t, filepath.Join(dir, "results"))
			if run.Summary == nil || run.Summary.Ops["post"].Count == 0 {
				t.Fatalf("no summary or no posts: %+v", run.Summary)
			}
			if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
				t.Fatal("run wrote no report:", err)
			}
			if model == microblog.Async && run.Summary.Ops["async-lag"].Count != run.Summary.Ops["post"].Count {
				t.Fatalf("async-lag measured %d tweets, %d were posted", run.Summary.Ops["async-lag"].Count, run.Summary.Ops["post"].Count)
			}
			checkOracle(t, dsn, 60, 5, run.Summary.Ops["post"].Count)
		})
	}
}

func checkOracle(t *testing.T, dsn string, users int, seed int64, posted int64) {
	t.Helper()
	ctx := context.Background()
	_, db, err := adapter.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.(microblog.Backend)
	model, err := b.MicroblogModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	store, err := b.Microblog(ctx, model)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ds, _ := microblog.Generate(microblog.GenOptions{Users: users, Seed: seed})
	oracle := microblog.NewOracle(ds)
	// Recover the run's posts from the userlines: their count must equal the
	// successful posts the result file recorded.
	var found int64
	for u := int64(1); u <= int64(users); u++ {
		all, err := store.Userline(ctx, u, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, tw := range all {
			if tw.ID > int64(len(ds.Tweets)) {
				oracle.Post(tw)
				found++
			}
		}
	}
	if found != posted {
		t.Fatalf("database holds %d new tweets, the result file recorded %d successful posts", found, posted)
	}
	for u := int64(1); u <= int64(users); u++ {
		for name, pair := range map[string][2]func(int64, int) ([]microblog.Tweet, error){
			"userline": {func(u int64, l int) ([]microblog.Tweet, error) { return store.Userline(ctx, u, l) }, func(u int64, l int) ([]microblog.Tweet, error) { return oracle.Userline(u, l), nil }},
			"timeline": {func(u int64, l int) ([]microblog.Tweet, error) { return store.Timeline(ctx, u, l) }, func(u int64, l int) ([]microblog.Tweet, error) { return oracle.Timeline(u, l), nil }},
		} {
			got, err := pair[0](u, microblog.Limit)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := pair[1](u, microblog.Limit)
			if !sameTweets(got, want) {
				t.Fatalf("%s of user %d: %d tweets differ from the oracle's %d", name, u, len(got), len(want))
			}
		}
	}
}

func sameTweets(a, b []microblog.Tweet) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Author != b[i].Author || a[i].Body != b[i].Body || a[i].Time.UnixMicro() != b[i].Time.UnixMicro() {
			return false
		}
	}
	return true
}

func TestMicroblogLoadThenOp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	if out, stderr, err := runJob(t, microblog.Name, "load", map[string]string{"db": dsn, "users": "40", "seed": "2", "model": "normalized"}); err != nil || !strings.Contains(out, "loaded 40 users") {
		t.Fatalf("load: %v %s %s", err, out, stderr)
	}
	ds, _ := microblog.Generate(microblog.GenOptions{Users: 40, Seed: 2})
	oracle := microblog.NewOracle(ds)
	user := int64(0)
	for u := int64(1); u <= 40 && user == 0; u++ {
		if len(oracle.Timeline(u, 50)) > 3 {
			user = u
		}
	}
	out, stderr, err := runJob(t, microblog.Name, "op timeline", map[string]string{"db": dsn, "user": itoa(int(user))})
	if err != nil {
		t.Fatalf("op: %v %s", err, stderr)
	}
	if got := decodeLines(t, out); !sameTweets(got, oracle.Timeline(user, 50)) {
		t.Fatalf("op timeline printed %d tweets that differ from the oracle", len(got))
	}
	out, _, err = runJob(t, microblog.Name, "op post", map[string]string{"db": dsn, "user": "3", "body": "hello fieldbench"})
	if err != nil {
		t.Fatalf("op post: %v", err)
	}
	posted := decodeLines(t, out)
	out, _, err = runJob(t, microblog.Name, "op userline", map[string]string{"db": dsn, "user": "3"})
	if got := decodeLines(t, out); err != nil || len(got) == 0 || got[0].ID != posted[0].ID || got[0].Body != "hello fieldbench" {
		t.Fatalf("userline after post does not start with it: %+v", got)
	}
	// Wrong model or dataset for a loaded database: a clear error.
	if _, _, err := runJob(t, microblog.Name, "run", map[string]string{"db": dsn, "users": "40", "seed": "2", "model": "async", "duration": "1s", "results": filepath.Join(dir, "r")}); !isUsage(err) || !strings.Contains(err.Error(), "holds the normalized model") {
		t.Fatalf("model mismatch: %v", err)
	}
	if _, _, err := runJob(t, microblog.Name, "run", map[string]string{"db": dsn, "users": "41", "duration": "1s", "results": filepath.Join(dir, "r")}); !isUsage(err) || !strings.Contains(err.Error(), "another dataset") {
		t.Fatalf("dataset mismatch: %v", err)
	}
	if _, _, err := runJob(t, microblog.Name, "op userline", map[string]string{"db": dsn, "user": "999"}); !isUsage(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("unknown user: %v", err)
	}
	// SQLite joins the bodies in: no separate reads to make, and no
	// result may claim them.
	if _, _, err := runJob(t, microblog.Name, "op timeline", map[string]string{"db": dsn, "user": "3", "timeline-reads": "separate"}); !isUsage(err) || !strings.Contains(err.Error(), "one statement") {
		t.Fatalf("--timeline-reads separate on SQLite: %v", err)
	}
	if _, _, err := runJob(t, microblog.Name, "op timeline", map[string]string{"db": dsn, "user": "3", "timeline-reads": "in"}); err != nil {
		t.Fatalf("--timeline-reads in (the default) on SQLite: %v", err)
	}
}

func decodeLines(t *testing.T, out string) []microblog.Tweet {
	t.Helper()
	var ts []microblog.Tweet
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var tw microblog.Tweet
		if err := dec.Decode(&tw); err != nil {
			t.Fatalf("not JSON lines: %v\n%s", err, out)
		}
		ts = append(ts, tw)
	}
	return ts
}

// Two runs at once on one database: their posts never take each other's
// ids (they once both read max(id) and collided by the thousand).
func TestConcurrentRunsDoNotCollide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	if _, stderr, err := runJob(t, microblog.Name, "load", map[string]string{"db": dsn, "users": "50"}); err != nil {
		t.Fatalf("load: %v %s", err, stderr)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, err := runJob(t, microblog.Name, "run", map[string]string{"db": dsn, "users": "50", "clients": "4",
				"mix": "post=1", "duration": "2s", "results": filepath.Join(dir, strconv.Itoa(i))})
			if err != nil {
				t.Errorf("run %d: %v: %s", i, err, stderr)
			}
		}()
	}
	wg.Wait()
	for i := range 2 {
		run := onlyRun(t, filepath.Join(dir, strconv.Itoa(i)))
		post := run.Summary.Ops["post"]
		for kind := range post.Errors {
			if strings.Contains(strings.ToLower(kind), "unique") {
				t.Errorf("run %d: %d posts failed on a duplicate id: %s", i, post.Errors[kind], kind)
			}
		}
		if post.Count == 0 {
			t.Errorf("run %d posted nothing", i)
		}
	}
}
