package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/microblog"

	_ "github.com/fieldbench/fieldbench/adapter/all"
)

func execute(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Execute(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "results")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown workload", []string{"run", "nosuch"}, `unknown workload "nosuch"`},
		{"no workload", []string{"run"}, "needs a workload"},
		{"unknown model", []string{"run", "microblog", "--model", "columnar", "--results", res}, `unknown microblog model "columnar"`},
		{"malformed mix", []string{"run", "microblog", "--mix", "post", "--results", res}, "malformed --mix"},
		{"mix unknown op", []string{"run", "microblog", "--mix", "follow=1", "--results", res}, `unknown operation "follow"`},
		{"negative clients", []string{"run", "microblog", "--clients", "-3", "--results", res}, "clients must be at least 1"},
		{"warmup too long", []string{"run", "microblog", "--duration", "2s", "--warmup", "5s", "--results", res}, "warmup"},
		{"unwritable results", []string{"run", "microblog", "--duration", "1s", "--results", filepath.Join(file, "sub")}, "not writable"},
		{"unknown adapter", []string{"run", "microblog", "--db", "nosuchdb://127.0.0.1/x", "--results", res}, `no adapter for DSN scheme "nosuchdb"`},
		{"bad flag", []string{"run", "microblog", "--clientz", "3"}, "unknown flag"},
		{"bad duration", []string{"run", "microblog", "--duration", "soon"}, "invalid argument"},
		{"too few users", []string{"generate", "microblog", "--users", "1", "--out", dir}, "--users must be at least 2"},
		{"generate without out", []string{"generate", "microblog"}, "needs --out"},
		{"op without db", []string{"op", "microblog", "timeline", "--user", "1"}, "needs --db"},
		{"op without operation", []string{"op", "microblog"}, "needs an operation"},
		{"report without dirs", []string{"report"}, "at least one run directory"},
		{"report of a non-result", []string{"report", dir}, "read result"},
		{"load into missing dir", []string{"load", "microblog", "--db", "sqlite://" + filepath.Join(dir, "no", "such", "x.db")}, "cannot open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code == cli.ExitOK {
				t.Fatalf("exit 0 for bad input %v", tc.args)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
	// nothing half-made is left for runs refused before they started
	if entries, _ := os.ReadDir(res); len(entries) > 2 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	for _, want := range []string{"microblog", "post, userline, timeline", "denormalized, normalized, async", "--clients", "sqlite", "sqlite://"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("list (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := execute(context.Background(), "generate", "microblog", "--users", "100", "--seed", "3", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
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

func itoa(n int) string { return strconv.Itoa(n) }

// TestRunEveryModelMatchesOracle runs the real command for each data model
// and then checks, for every user, userline and timeline against the
// brute-force oracle fed with the generated data and every post the run
// made.
func TestRunEveryModelMatchesOracle(t *testing.T) {
	t.Parallel()
	for _, model := range microblog.Models {
		t.Run(string(model), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dsn := "sqlite://" + filepath.Join(dir, "mb.db")
			code, out, stderr := execute(context.Background(), "run", "microblog", "--db", dsn, "--users", "60", "--seed", "5",
				"--model", string(model), "--clients", "8", "--duration", "2s", "--results", filepath.Join(dir, "results"))
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
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

func onlyRun(t *testing.T, results string) *result.Run {
	t.Helper()
	entries, err := os.ReadDir(results)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", results, entries, err)
	}
	run, err := result.Read(filepath.Join(results, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return run
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

func TestInterruptSavesResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupted 2.5 s after the clients start, however long the load took.
	var once sync.Once
	errw := &signalWriter{marker: "running microblog", cancel: func() {
		once.Do(func() { time.AfterFunc(2500*time.Millisecond, cancel) })
	}}
	start := time.Now()
	var outb bytes.Buffer
	code := cli.Execute(ctx, []string{"run", "microblog", "--users", "50", "--clients", "4", "--duration", "5m", "--results", dir}, &outb, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, stderr)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("took %s to stop", time.Since(start))
	}
	run := onlyRun(t, dir)
	if run.Summary == nil || !run.Summary.Interrupted || len(run.Intervals) < 2 {
		t.Fatalf("summary %+v, %d intervals", run.Summary, len(run.Intervals))
	}
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report after interrupt:", err)
	}
}

// TestSIGKILLKeepsMeasuredSeconds kills the real binary and reads what it
// left: every completed second must be there, and report must work on it.
func TestSIGKILLKeepsMeasuredSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fieldbench")
	build := exec.Command("go", "build", "-o", bin, "github.com/fieldbench/fieldbench/cmd/fieldbench")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	res := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "run", "microblog", "--users", "50", "--clients", "4", "--duration", "5m", "--results", res)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the result file to have 3 intervals, then kill -9.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if entries, _ := os.ReadDir(res); len(entries) == 1 {
			if run, err := result.Read(filepath.Join(res, entries[0].Name())); err == nil && len(run.Intervals) >= 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no 3 intervals within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	run := onlyRun(t, res)
	if run.Summary != nil || len(run.Intervals) < 3 {
		t.Fatalf("after SIGKILL: summary %v, %d intervals", run.Summary, len(run.Intervals))
	}
	sum, err := run.Summarize()
	if err != nil || sum.Ops["timeline"].Count == 0 {
		t.Fatalf("summary from intervals: %+v %v", sum, err)
	}
	out := filepath.Join(dir, "killed.html")
	if code, _, stderr := execute(context.Background(), "report", run.Dir, "--out", out); code != 0 {
		t.Fatalf("report of a killed run: exit %d %s", code, stderr)
	}
}

func TestLoadThenOp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	ctx := context.Background()
	if code, out, stderr := execute(ctx, "load", "microblog", "--db", dsn, "--users", "40", "--seed", "2", "--model", "normalized"); code != 0 || !strings.Contains(out, "loaded 40 users") {
		t.Fatalf("load: exit %d %s %s", code, out, stderr)
	}
	ds, _ := microblog.Generate(microblog.GenOptions{Users: 40, Seed: 2})
	oracle := microblog.NewOracle(ds)
	user := int64(0)
	for u := int64(1); u <= 40 && user == 0; u++ {
		if len(oracle.Timeline(u, 50)) > 3 {
			user = u
		}
	}
	code, out, stderr := execute(ctx, "op", "microblog", "timeline", "--db", dsn, "--user", itoa(int(user)))
	if code != 0 {
		t.Fatalf("op: exit %d %s", code, stderr)
	}
	if got := decodeLines(t, out); !sameTweets(got, oracle.Timeline(user, 50)) {
		t.Fatalf("op timeline printed %d tweets that differ from the oracle", len(got))
	}
	code, out, _ = execute(ctx, "op", "microblog", "post", "--db", dsn, "--user", "3", "--body", "hello fieldbench")
	if code != 0 {
		t.Fatalf("op post: exit %d", code)
	}
	posted := decodeLines(t, out)
	code, out, _ = execute(ctx, "op", "microblog", "userline", "--db", dsn, "--user", "3")
	if got := decodeLines(t, out); code != 0 || len(got) == 0 || got[0].ID != posted[0].ID || got[0].Body != "hello fieldbench" {
		t.Fatalf("userline after post does not start with it: %+v", got)
	}
	// Wrong model or dataset for a loaded database: a clear error.
	if code, _, stderr := execute(ctx, "run", "microblog", "--db", dsn, "--users", "40", "--seed", "2", "--model", "async", "--duration", "1s", "--results", filepath.Join(dir, "r")); code != cli.ExitUsage || !strings.Contains(stderr, "holds the normalized model") {
		t.Fatalf("model mismatch: exit %d %s", code, stderr)
	}
	if code, _, stderr := execute(ctx, "run", "microblog", "--db", dsn, "--users", "41", "--duration", "1s", "--results", filepath.Join(dir, "r")); code != cli.ExitUsage || !strings.Contains(stderr, "another dataset") {
		t.Fatalf("dataset mismatch: exit %d %s", code, stderr)
	}
	if code, _, stderr := execute(ctx, "op", "microblog", "userline", "--db", dsn, "--user", "999"); code != cli.ExitUsage || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("unknown user: exit %d %s", code, stderr)
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

// Bad input exits 2 wherever it is found: an unknown command, a help topic
// that does not exist, a flag a command lacks or cannot parse, and a job's
// refusal of its options (a few of each workload's: the job's own tests in
// job/ check every message). Refused commands leave no run directory.
func TestBadInputExitsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, ""},
		{[]string{"help", "nosuch"}, ""},
		{[]string{"run", "nosuch"}, ""},
		{[]string{"run", "microblog", "--clientz", "3"}, ""},
		{[]string{"generate", "microblog", "--users", "1", "--out", t.TempDir()}, ""},
		{[]string{"run", "ingest", "--db", "null://", "--results", t.TempDir()}, ""},
		{[]string{"run", "trajectory", "--db", "null://", "--results", t.TempDir()}, ""},
		// wiki
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--request", "5"}, "unknown flag"},
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--reads", "120"}, "--reads is a percentage: 0 to 100 (got 120)"},
		{[]string{"run", "wiki", "--results", res, "--articles", "10", "--db", "nosuchdb://x"}, `no adapter for DSN scheme "nosuchdb"`},
		{[]string{"load", "wiki", "--results", res, "--from", dir}, "is a directory"},
		{[]string{"generate", "wiki"}, "needs --out"},
		{[]string{"op", "wiki"}, "needs an operation: read or update"},
		{[]string{"op", "wiki", "read", "--id", "1"}, "needs --db"},
		// trajectory
		{[]string{"run", "trajectory", "--scale", "big"}, "invalid argument"},
		{[]string{"run", "trajectory", "--mode", "foo", "--results", res}, `unknown trajectory mode "foo"`},
		{[]string{"generate", "trajectory"}, "needs --out"},
		{[]string{"op", "trajectory"}, "needs an operation: write, distance, knn, range, region"},
		{[]string{"op", "trajectory", "write", "--db", "sqlite://" + filepath.Join(dir, "t.db"), "--index", "0", "--count", "many"}, "invalid argument"},
		{[]string{"op", "trajectory", "write", "--db", "sqlite://" + filepath.Join(dir, "t.db"), "--scale", "0.0002", "--index", "-1"}, "--index must be from 0 to 1296"},
		{[]string{"op", "trajectory", "distance", "--x", "1", "--y", "2"}, "needs --db"},
		// ingest
		{[]string{"sweep", "ingest", "--results", res, "--from", "400", "--to", "300"}, "--from (400) must not be greater than --to (300)"},
		{[]string{"run", "ingest", "--results", res, "--records", "0"}, "--records must be at least 1"},
		{[]string{"op", "ingest"}, "needs an operation: insert, batch or count"},
		{[]string{"op", "ingest", "count"}, "needs --db"},
		{[]string{"op", "ingest", "batch", "--db", "sqlite://" + filepath.Join(dir, "in.db"), "--source", "1", "--index", "0"}, "needs --source, --index and --count"},
		{[]string{"op", "ingest", "batch", "--db", "sqlite://" + filepath.Join(dir, "in.db"), "--source", "1", "--index", "0", "--count", "ten"}, "invalid argument"},
	} {
		code, _, stderr := execute(context.Background(), tc.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d saying %q (%s)", tc.args, code, cli.ExitUsage, tc.want, stderr)
		}
	}
	if code, out, _ := execute(context.Background(), "help", "run", "microblog"); code != cli.ExitOK || !strings.Contains(out, "--clients") {
		t.Errorf("help run microblog: exit %d, %q", code, out)
	}
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// signalWriter cancels when what was written contains a marker.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
	}
	return len(p), nil
}

// Ctrl-C during a load exits 130 and says what the database now holds; a
// later run refuses the partial dataset instead of measuring it.
func TestInterruptedLoadSaysPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled as the populate begins: 20,000 users take seconds to load.
	errw := &signalWriter{marker: "loading ", cancel: cancel}
	var out bytes.Buffer
	code := cli.Execute(ctx, []string{"load", "microblog", "--db", dsn, "--users", "20000"}, &out, errw)
	stderr := errw.buf.String()
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, stderr)
	}
	if !strings.Contains(stderr, "cut short") || !(strings.Contains(stderr, "PARTIAL") || strings.Contains(stderr, "untouched")) {
		t.Fatalf("stderr does not say what the database holds: %s", stderr)
	}
	t.Logf("interrupted load: %s", strings.TrimSpace(stderr))
	if strings.Contains(stderr, "PARTIAL") {
		code, _, stderr := execute(context.Background(), "run", "microblog", "--db", dsn, "--users", "20000", "--duration", "1s", "--results", filepath.Join(dir, "r"))
		if code != cli.ExitUsage || !strings.Contains(stderr, "partial load") {
			t.Fatalf("a run on the partial load: exit %d, %s", code, stderr)
		}
	}
}

// Two runs at once on one database: their posts never take each other's
// ids (they once both read max(id) and collided by the thousand).
func TestConcurrentRunsDoNotCollide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "mb.db")
	if code, _, stderr := execute(context.Background(), "load", "microblog", "--db", dsn, "--users", "50"); code != cli.ExitOK {
		t.Fatalf("load: %s", stderr)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, stderr := execute(context.Background(), "run", "microblog", "--db", dsn, "--users", "50", "--clients", "4",
				"--mix", "post=1", "--duration", "2s", "--results", filepath.Join(dir, strconv.Itoa(i)))
			if code != cli.ExitOK {
				t.Errorf("run %d: exit %d: %s", i, code, stderr)
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
