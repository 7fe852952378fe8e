package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/merge"
	"github.com/fieldbench/fieldbench/result"
)

// Each finding of issue 31 (points 2-5, 8) about input refused late, or
// not at all: refused with exit 2 and a message, before any file is made.
func TestBadInputRefusedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// point 2: a panic (time.NewTicker) after the run had started
		{"materializer interval 0", []string{"run", "microblog", "--model", "async", "--materialize-every", "0s", "--duration", "1s"}, "--materialize-every must be positive"},
		{"materializer interval negative", []string{"run", "microblog", "--model", "async", "--materialize-every", "-1s", "--duration", "1s"}, "--materialize-every must be positive"},
		{"materializer interval through findmax", []string{"findmax", "microblog", "--slo", "p99<1s", "--model", "async", "--materialize-every", "0s"}, "--materialize-every must be positive"},
		// point 3: NaN ran a step, then lost the result
		{"confirm-over NaN", []string{"findmax", "microblog", "--slo", "p99<1s", "--confirm-over", "NaN"}, "not a finite number"},
		{"rate NaN", []string{"run", "microblog", "--rate", "NaN"}, "not a finite number"},
		{"min-achieved Inf", []string{"findmax", "microblog", "--slo", "p99<1s", "--min-achieved", "+Inf"}, "not a finite number"},
		// point 8
		{"confirm negative", []string{"findmax", "microblog", "--slo", "p99<1s", "--confirm", "-1s"}, "--confirm must be 0"},
		{"from-rate absurd", []string{"findmax", "microblog", "--slo", "p99<1s", "--from-rate", "1e300"}, "up to 1e+09 ops/s"},
		{"mix weight huge", []string{"run", "microblog", "--mix", "post=1e308,timeline=1", "--duration", "1s"}, "weights are relative"},
		// point 5: exit 1 after the fact
		{"sqlite in a missing directory", []string{"run", "microblog", "--db", "sqlite:///nonexistent-dir/x.db", "--duration", "1s"}, "does not exist"},
		{"report out in /proc", []string{"report", "--out", "/proc/x.html", "RUN"}, "cannot write a file in /proc"},
		{"cluster option unknown", []string{"cluster", "up", "redis", "--opt", "bogus=1", "--dir", "CLUSTER"}, `unknown option "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res := filepath.Join(dir, "results")
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				switch a {
				case "RUN":
					args[i] = fixtureRun(t)
				case "CLUSTER":
					args[i] = filepath.Join(dir, "cluster")
				}
			}
			if args[0] == "run" || args[0] == "findmax" {
				args = append(args, "--results", res)
			}
			code, out, stderr := execute(context.Background(), args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q (stdout %q); want exit 2 saying %q", code, stderr, out, tc.want)
			}
			if entries, _ := os.ReadDir(res); len(entries) > 0 {
				t.Errorf("refused, but left %d entries in the results directory", len(entries))
			}
			if _, err := os.Stat(filepath.Join(dir, "cluster")); err == nil {
				t.Error("refused, but made the cluster directory")
			}
		})
	}
}

// fixtureRun writes a tiny finished run (report reads it).
func fixtureRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := result.Create(dir, result.Header{Workload: "microblog", Adapter: "sqlite"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(result.Summary{Ops: map[string]result.OpSummary{}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A --db without a scheme may be a password put in the wrong place: it is
// not echoed (issue 31, finding 4).
func TestSchemelessDBNotEchoed(t *testing.T) {
	t.Parallel()
	code, out, stderr := execute(context.Background(), "run", "microblog", "--db", "S3CRETpw", "--results", t.TempDir())
	if code != cli.ExitUsage || strings.Contains(stderr+out, "S3CRET") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// A server that does not answer is announced at once and given up on
// within job.ConnectTimeout, leaving no empty run directory (issue 31,
// finding 8: Redis was silent for 13.6 s, MongoDB for 30 s). Port 1 on
// loopback refuses.
func TestUnreachableServerSaysSoAndLeavesNoDirectory(t *testing.T) {
	t.Parallel()
	res := t.TempDir()
	t0 := time.Now()
	code, _, stderr := execute(context.Background(), "run", "microblog", "--db", "redis://127.0.0.1:1", "--duration", "1s", "--results", res)
	took := time.Since(t0)
	if code != cli.ExitFailure || !strings.HasPrefix(stderr, "connecting to redis://127.0.0.1:1 (giving up after 30s)") || !strings.Contains(stderr, "cannot open") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if took > job.ConnectTimeout+30*time.Second { // a wide margin for a loaded machine
		t.Errorf("gave up after %s", took)
	}
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Errorf("a failed connection left %v", entries[0].Name())
	}
}

// Ctrl-C during a merge is exit 130 with no merged result (it was
// ignored: exit 0 and a full result).
func TestMergeInterrupted(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	var dirs []string
	t0 := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	for i := range 2 {
		r := &result.Run{Header: result.Header{Workload: "microblog", Adapter: "redis", Operations: []string{"post"}, Started: t0,
			Options: map[string]any{"clients": 2, "shard": fmt.Sprintf("%d/2", i), "shard_clients": 1}}}
		h := result.NewHist()
		if err := h.RecordValue(1000); err != nil {
			t.Fatal(err)
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		r.Intervals = []result.Interval{{Start: 0, End: 1, Ops: map[string]result.OpInterval{"post": {Count: 1, Hist: enc}}}}
		sum, err := r.Summarize()
		if err != nil {
			t.Fatal(err)
		}
		r.Summary = &sum
		d := filepath.Join(base, fmt.Sprint(i))
		if err := merge.Write(d, r); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	res := filepath.Join(base, "merged")
	if code, _, stderr := execute(context.Background(), append([]string{"merge", "--results", res}, dirs...)...); code != cli.ExitOK {
		t.Fatalf("the shards do not merge: exit %d: %s", code, stderr)
	}
	res = filepath.Join(base, "merged-interrupted")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, out, stderr := execute(ctx, append([]string{"merge", "--results", res}, dirs...)...)
	if code != cli.ExitInterrupted || strings.Contains(out, "result:") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 130 and no result", code, out, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(res, "*", "result.jsonl")); len(m) > 0 {
		t.Errorf("an interrupted merge left %v", m)
	}
}

// A shard's summary counts the shard's own clients (it said "10 clients
// served by 5 connections" for a shard that ran 5).
func TestShardSummaryCountsItsOwnClients(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := execute(context.Background(), "run", "microblog", "--db", "sqlite://"+filepath.Join(dir, "mb.db"), "--users", "20",
		"--clients", "4", "--shard", "0/2", "--duration", "1s", "--results", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*-microblog-sqlite"))
	if len(m) != 1 {
		t.Fatalf("run directories %v", m)
	}
	r, err := result.Read(m[0])
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Summary.Client; c == nil || c.Clients != 2 {
		t.Errorf("client cost %+v: want the shard's 2 clients", c)
	}
	if !strings.Contains(out+stderr, " 2 clients served by") {
		t.Errorf("summary line: %s", out+stderr)
	}
}

// The top-level help names every engine `cluster up` knows (a hand-kept
// list named 8 of 10).
func TestHelpNamesEveryEngine(t *testing.T) {
	t.Parallel()
	_, out, _ := execute(context.Background(), "--help")
	for _, e := range []string{"couchbase", "sqlserver", "postgres", "redis"} {
		if !strings.Contains(out, e) {
			t.Errorf("--help does not name %s", e)
		}
	}
}

// findmax that finds no sustainable rate exits 1 (the work's answer is a
// failure), with its search saved. An objective no step can meet: 1 ns.
func TestFindmaxNoRateExitsOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := execute(context.Background(), "findmax", "microblog", "--users", "20", "--clients", "2", "--slo", "p99<1ns",
		"--from-rate", "20", "--max-rate", "40", "--step-duration", "1s", "--step-warmup", "0s", "--max-steps", "2", "--repeat-close=false", "--results", dir)
	if code != cli.ExitFailure || !strings.Contains(out, "no sustainable rate found") || !strings.Contains(stderr, "no sustainable rate") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1", code, out, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*-findmax-microblog-search", "result.jsonl")); len(m) != 1 {
		t.Errorf("the search is not saved: %v", m)
	}
}

// Bad run options are refused before a server is started for the run: the
// --cluster servers, the --metrics-addr endpoint.
func TestBadInputRefusedBeforeServersStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		started string
	}{
		{[]string{"run", "microblog", "--cluster", "redis:1", "--model", "async", "--materialize-every", "0s"}, "starting redis"},
		{[]string{"findmax", "microblog", "--cluster", "redis:1", "--slo", "p99<1s", "--confirm", "-1s"}, "starting redis"},
		{[]string{"run", "microblog", "--metrics-addr", "127.0.0.1:0", "--clients", "0"}, "metrics:"},
	} {
		res := t.TempDir()
		code, out, stderr := execute(context.Background(), append(tc.args, "--results", res)...)
		if code != cli.ExitUsage || strings.Contains(out+stderr, tc.started) {
			t.Errorf("%v: exit %d, %q; want exit 2 before %q", tc.args, code, stderr, tc.started)
		}
		if entries, _ := os.ReadDir(res); len(entries) > 0 {
			t.Errorf("%v: refused, but left %s", tc.args, entries[0].Name())
		}
	}
}
