package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// Three shards of one microblog run against a real Redis, started together
// by --start-at, merge into one result whose histogram is the exact HDR
// sum of theirs and whose posts never collided.
func TestShardsRunAndMerge(t *testing.T) {
	base, dsn, startAt := onRedis(t)
	ctx := context.Background()
	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, stderr := execute(ctx, "run", "microblog", "--db", dsn, "--users", "60", "--clients", "7", "--rate", "150",
				"--duration", "3s", "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", startAt, "--hdr-log",
				"--results", filepath.Join(base, fmt.Sprint(i)))
			if code != cli.ExitOK {
				t.Errorf("shard %d: exit %d: %s", i, code, stderr)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var dirs []string
	var clients int64
	for i := range n {
		m, _ := filepath.Glob(filepath.Join(base, fmt.Sprint(i), "*-microblog-redis"))
		if len(m) != 1 {
			t.Fatalf("shard %d: run directories %v", i, m)
		}
		dirs = append(dirs, m[0])
		r, err := result.Read(m[0])
		if err != nil {
			t.Fatal(err)
		}
		clients += int64(r.Header.Options["shard_clients"].(float64))
		if late := r.Summary.Extra["start_late_ms"]; late < 0 || late > 2000 {
			t.Errorf("shard %d started %v ms after --start-at", i, late)
		}
	}
	if clients != 7 {
		t.Errorf("the shards ran %d clients, want the run's 7", clients)
	}
	mergeShards(t, base, dirs) // the exact HDR sum; no post failed
	res := filepath.Join(base, "merged")
	// A shard given twice, or one missing, is refused.
	if code, _, stderr := execute(ctx, "merge", "--results", res, dirs[0], dirs[0], dirs[1]); code != cli.ExitUsage || !strings.Contains(stderr, "given twice") {
		t.Errorf("a shard twice: exit %d %s", code, stderr)
	}
	if code, _, stderr := execute(ctx, "merge", "--results", res, dirs[0], dirs[2]); code != cli.ExitUsage || !strings.Contains(stderr, "missing") {
		t.Errorf("a shard missing: exit %d %s", code, stderr)
	}
}

// onRedis prepares a shard test (skipped with -short, parallel): its
// directory, a Redis of its own, and a --start-at 4 s ahead.
func onRedis(t *testing.T) (base, dsn, startAt string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	t.Parallel()
	base = t.TempDir()
	dsn = upRedis(t, base)
	return base, dsn, time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
}

// upRedis starts a one-node Redis with the project's own cluster command
// and returns its DSN.
func upRedis(t *testing.T, base string) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(base, "redis")
	code, out, stderr := execute(ctx, "cluster", "up", "redis", "--nodes", "1", "--dir", dir)
	t.Cleanup(func() { execute(ctx, "cluster", "down", "--dir", dir) })
	if code != 0 {
		t.Fatalf("up: exit %d\n%s\n%s", code, out, stderr)
	}
	return strings.TrimSpace(strings.SplitN(strings.SplitN(out, "DSN: ", 2)[1], "\n", 2)[0])
}

// shardProcesses runs n fieldbench processes as the pods of an Indexed Job
// run them: the same arguments (with --shards n), the index in
// JOB_COMPLETION_INDEX, each writing under base/<index>. It returns each
// shard's run directory, found by pattern ("": none, for commands that
// write no run directory).
func shardProcesses(t *testing.T, base, pattern string, n int, args ...string) []string {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a := append(append([]string{}, args...), "--shards", fmt.Sprint(n), "--results", filepath.Join(base, fmt.Sprint(i)))
			cmd := exec.CommandContext(ctx, os.Args[0], a...)
			cmd.Env = append(os.Environ(), asFieldbench+"=1", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("shard %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var dirs []string
	if pattern == "" {
		return nil
	}
	for i := range n {
		m, _ := filepath.Glob(filepath.Join(base, fmt.Sprint(i), pattern))
		if len(m) != 1 {
			t.Fatalf("shard %d: run directories %v", i, m)
		}
		dirs = append(dirs, m[0])
	}
	return dirs
}

// mergeShards merges dirs with the merge command, checks that every
// operation's merged histogram is the HDR sum of the shards' bit for bit
// and its count their sum, and returns the merged run.
func mergeShards(t *testing.T, base string, dirs []string) *result.Run {
	t.Helper()
	want := map[string]*hdrhistogram.Histogram{}
	counts := map[string]int64{}
	for i, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		h, err := r.Merged(true)
		if err != nil {
			t.Fatal(err)
		}
		for op, hist := range h {
			if want[op] == nil {
				want[op] = result.NewHist()
			}
			want[op].Merge(hist)
		}
		for op, o := range r.Summary.Ops {
			counts[op] += o.Count
			for kind := range o.Errors {
				t.Errorf("shard %d: %s error %s", i, op, kind)
			}
		}
	}
	res := filepath.Join(base, "merged")
	code, out, stderr := execute(context.Background(), append([]string{"merge", "--results", res}, dirs...)...)
	if code != cli.ExitOK {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(res, "*-merged-*"))
	if len(m) != 1 {
		t.Fatalf("merged directories %v", m)
	}
	merged, err := result.Read(m[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := merged.Merged(true)
	if err != nil {
		t.Fatal(err)
	}
	for op, w := range want {
		we, _ := result.EncodeHist(w)
		ge, _ := result.EncodeHist(got[op])
		if we != ge || merged.Summary.Ops[op].Count != counts[op] {
			t.Errorf("merged %s histogram is not the HDR sum of the shards' (count %d, want %d)", op, merged.Summary.Ops[op].Count, counts[op])
		}
	}
	if _, err := os.Stat(filepath.Join(m[0], "report.html")); err != nil {
		t.Error(err)
	}
	if code, _, stderr := execute(context.Background(), "report", m[0], "--out", filepath.Join(base, "again.html")); code != cli.ExitOK {
		t.Errorf("report of the merged run: exit %d %s", code, stderr)
	}
	return merged
}

// The ingest study's setup: 8 sources over two load machines as 5 + 3, as
// two processes of an Indexed Job (JOB_COMPLETION_INDEX, --shards 2,
// --split 5,3, one --start-at) against a real Redis; merged, the run is
// exactly the unsharded plan: 8 × 1,500 records in 8 × 8 batches, each
// record once.
func TestIngestShardProcesses(t *testing.T) {
	base, dsn, startAt := onRedis(t)
	const sources, records, batch = 8, 1500, 200
	dirs := shardProcesses(t, base, "*-ingest-redis", 2, "run", "ingest", "--db", dsn, "--sources", fmt.Sprint(sources),
		"--records", fmt.Sprint(records), "--batch", fmt.Sprint(batch), "--split", "5,3", "--start-at", startAt, "--hdr-log")
	var shares []float64
	for _, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		shares = append(shares, r.Header.Options["shard_sources"].(float64))
		if late := r.Summary.Extra["start_late_ms"]; late < 0 || late > 2000 {
			t.Errorf("%s started %v ms after --start-at", d, late)
		}
		if _, err := os.Stat(filepath.Join(d, "hdr", "batch.hlog")); err != nil {
			t.Error(err)
		}
	}
	if shares[0] != 5 || shares[1] != 3 {
		t.Errorf("the shards drove %v sources, want 5 and 3", shares)
	}
	merged := mergeShards(t, base, dirs)
	// The unsharded plan: every source sends ceil(records/batch) batches.
	if got, want := merged.Summary.Ops["batch"].Count, int64(sources*((records+batch-1)/batch)); got != want {
		t.Errorf("merged: %d batches, the unsharded run sends %d", got, want)
	}
	code, out, stderr := execute(context.Background(), "op", "ingest", "count", "--db", dsn)
	if code != cli.ExitOK || strings.TrimSpace(out) != fmt.Sprintf(`{"records":%d}`, sources*records) {
		t.Errorf("stored after the shards: exit %d %s %s, want %d records (ids never collide)", code, out, stderr, sources*records)
	}
}

// The trajectory study's random load: four load generators, here four
// processes of one Job (--shards 4, one random client each) on Redis. Each
// writes its quarter of the dataset, waits for the others' before querying,
// and the merged run holds exactly the unsharded run's requests.
func TestTrajectoryShardProcesses(t *testing.T) {
	base, dsn, startAt := onRedis(t)
	const clients, batch, queries, repeat = 4, 500, 3, 2
	dirs := shardProcesses(t, base, "*-trajectory-redis", clients, "run", "trajectory", "--db", dsn, "--scale", "0.0005",
		"--mode", "random", "--clients", fmt.Sprint(clients), "--batch", fmt.Sprint(batch), "--queries", fmt.Sprint(queries),
		"--repeat", fmt.Sprint(repeat), "--reset", "--start-at", startAt)
	r0, err := result.Read(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	records := int64(r0.Header.Options["records"].(float64))
	merged := mergeShards(t, base, dirs)
	// The unsharded plan: client k writes records [k·n/4, (k+1)·n/4) in
	// requests of batch, and each query type is sent queries × repeat times.
	var writes int64
	for k := range int64(clients) {
		share := records*(k+1)/clients - records*k/clients
		writes += (share + batch - 1) / batch
	}
	if got := merged.Summary.Ops["write"].Count; got != writes {
		t.Errorf("merged: %d write requests, the unsharded run sends %d", got, writes)
	}
	for _, op := range []string{"distance", "knn", "range", "region"} {
		if got := merged.Summary.Ops[op].Count; got != queries*repeat {
			t.Errorf("merged: %d %s requests, the unsharded run sends %d", got, op, queries*repeat)
		}
	}
	if got := merged.Summary.Extra["shards"]; got != clients {
		t.Errorf("merged %v shards", got)
	}
}

// A sharded ingest sweep: the shards meet in a --barrier directory before
// every run, so the table is emptied once per run, after all finished; the
// merged sweep holds every run's batches of all sources, and each shard's
// verify saw exactly the whole run's records (else its runs fail).
func TestIngestSweepShardProcesses(t *testing.T) {
	base, dsn, _ := onRedis(t)
	dirs := shardProcesses(t, base, "*-ingest-sweep-redis", 2, "sweep", "ingest", "--db", dsn, "--sources", "4",
		"--from", "300", "--to", "600", "--step", "300", "--runs", "2", "--warmup-runs", "1", "--batch", "100",
		"--barrier", filepath.Join(base, "barrier"))
	for _, d := range dirs {
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.Summary.Extra["runs_failed"]; f != 0 || r.Summary.Extra["runs"] != 4 {
			t.Errorf("%s: %v of %v runs failed", d, f, r.Summary.Extra["runs"])
		}
	}
	merged := mergeShards(t, base, dirs)
	// 2 loads × 2 runs × 4 sources × (300 or 600)/100 batches.
	if got, want := merged.Summary.Ops["batch"].Count, int64(2*4*(3+6)); got != want {
		t.Errorf("merged sweep: %d batches, the unsharded sweep sends %d", got, want)
	}
}

// kube job prints the Job of any sharded command: the ingest study's 5 + 3
// run, and a sweep; a command that cannot run as shards is refused. (A
// common start must be ahead: the pods check it.)
func TestKubeJobOfEveryShardedCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"ingest", "--shards", "2", "--", "--sources", "8", "--split", "5,3", "--start-at", later}, `- run - ingest - --sources - "8" - --split - 5,3`, cli.ExitOK},
		{[]string{"ingest", "--command", "sweep", "--shards", "2", "--", "--barrier", "/results/barrier"}, "- sweep - ingest", cli.ExitOK},
		{[]string{"trajectory", "--shards", "4", "--start-at", later, "--", "--mode", "random", "--clients", "4", "--reset"}, "completionMode: Indexed", cli.ExitOK},
		{[]string{"wiki", "--shards", "3", "--", "--threads", "6"}, "parallelism: 3", cli.ExitOK},
		{[]string{"microblog", "--command", "load", "--shards", "4", "--", "--users", "4000"}, "- load - microblog - --users", cli.ExitOK},
		{[]string{"microblog", "--command", "sweep"}, "cannot run as shards", cli.ExitUsage},
		{[]string{"ingest", "--shards", "2", "--", "--split", "5,x"}, "not a whole number", cli.ExitUsage},
		{[]string{"ingest", "--shards", "3", "--", "--split", "5,3"}, "2 weights for --shards 3", cli.ExitUsage},
	} {
		args := append([]string{"kube", "job", tc.args[0], "--image", "reg/fb:dev", "--secret", "fb-db/dsn"}, tc.args[1:]...)
		code, out, stderr := execute(ctx, args...)
		if code != tc.code || !strings.Contains(strings.Join(strings.Fields(out+stderr), " "), tc.want) {
			t.Errorf("%v: exit %d\n%s%s\nwant exit %d and %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}

// A wiki run as two processes of a Job: shard 0 loads the articles, shard 1
// waits for them; merged, the requests are the unsharded run's (sets ×
// repeat × threads × requests per thread), each thread run once.
func TestWikiShardProcesses(t *testing.T) {
	base, dsn, startAt := onRedis(t)
	const sets, repeat, threads, requests = 2, 2, 4, 400
	dirs := shardProcesses(t, base, "*-wiki-redis", 2, "run", "wiki", "--db", dsn, "--articles", "300",
		"--threads", fmt.Sprint(threads), "--requests", fmt.Sprint(requests), "--sets", fmt.Sprint(sets),
		"--repeat", fmt.Sprint(repeat), "--start-at", startAt)
	merged := mergeShards(t, base, dirs)
	got := merged.Summary.Ops["read"].Count + merged.Summary.Ops["update"].Count
	if want := int64(sets * repeat * requests); got != want {
		t.Errorf("merged: %d requests, the unsharded run makes %d", got, want)
	}
	if n := len(merged.Points); n != 2*sets {
		t.Errorf("merged: %d request-set points, want %d per shard", n, sets)
	}
}

// The microblog dataset loaded by three processes of a Job at once, each
// its share of the users: the database then holds exactly the unsharded
// dataset (an unsharded load finds nothing to load), a shard loaded again
// loads nothing, a load in another number of parts is refused. SQLite
// loads in parts as well, from processes on one machine; an adapter that
// loads whole says so.
func TestMicroblogLoadShardProcesses(t *testing.T) {
	base, dsn, _ := onRedis(t)
	ctx := context.Background()
	args := []string{"microblog", "--db", dsn, "--users", "90", "--model", "normalized"}
	shardProcesses(t, base, "", 3, append([]string{"load"}, args...)...)
	for _, tc := range []struct {
		extra []string
		code  int
		want  string
	}{
		{nil, cli.ExitOK, "already holds this dataset (normalized model); nothing to load"},
		{[]string{"--shard", "1/3"}, cli.ExitOK, "users 31..60 are already in the database; nothing to load"},
		{[]string{"--shard", "0/2"}, cli.ExitFailure, "another number of parts"},
		{[]string{"--shard", "1/3", "--model", "denormalized"}, cli.ExitUsage, "holds the normalized model"},
	} {
		code, out, stderr := execute(ctx, append(append([]string{"load"}, args...), tc.extra...)...)
		if code != tc.code || !strings.Contains(out+stderr, tc.want) {
			t.Errorf("load %v: exit %d\n%s%s\nwant exit %d and %q", tc.extra, code, out, stderr, tc.code, tc.want)
		}
	}
	// SQLite loads in parts too: two processes on one file at once (SQLite
	// runs their parts one after the other) make the whole dataset, which
	// an unsharded load then finds.
	sqlite := []string{"microblog", "--db", "sqlite://" + filepath.Join(base, "mb.db"), "--users", "90", "--model", "normalized"}
	shardProcesses(t, filepath.Join(base, "sqlite"), "", 2, append([]string{"load"}, sqlite...)...)
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--shard", "1/2"}, "users 46..90 are already in the database; nothing to load"},
		{nil, "already holds this dataset (normalized model); nothing to load"},
	} {
		code, out, stderr := execute(ctx, append(append([]string{"load"}, sqlite...), tc.extra...)...)
		if code != cli.ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("load on SQLite %v: exit %d\n%s%s\nwant exit 0 and %q", tc.extra, code, out, stderr, tc.want)
		}
	}
	// null:// (no database) lives in one process: shards of it are refused.
	if code, _, stderr := execute(ctx, "load", "microblog", "--db", "null://", "--shard", "0/2"); code != cli.ExitUsage || !strings.Contains(stderr, "cannot be shared by shards") {
		t.Errorf("a sharded load on null://: exit %d %s", code, stderr)
	}
	// A split that leaves one shard no user is refused by every shard,
	// the ones with users included, before any loads: the empty part could
	// never be recorded, and the database would never read as whole.
	empty := []string{"load", "microblog", "--db", "sqlite://" + filepath.Join(base, "empty.db"), "--users", "10", "--split", "1,30"}
	for _, s := range []string{"0/2", "1/2"} {
		code, out, stderr := execute(ctx, append(empty, "--shard", s)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "shard 0/2's share of the 10 users is empty") || strings.Contains(out, "loaded") {
			t.Errorf("load --shard %s with an empty share: exit %d\n%s%s", s, code, out, stderr)
		}
	}
}
