package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// writeRun writes a result file of n one-second intervals whose read
// latencies cycle through lat µs and twice that, 100 reads a second.
func writeRun(t *testing.T, dir string, n int, lat int64) string {
	t.Helper()
	return writeRunWith(t, dir, n, lat, result.Header{Workload: "wiki", Adapter: "sqlite", Operations: []string{"read"}, Started: time.Unix(1e9, 0)})
}

// writeRunWith is writeRun with the header h.
func writeRunWith(t *testing.T, dir string, n int, lat int64, h result.Header) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := result.Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	run := &result.Run{Dir: dir}
	for i := range n {
		h := result.NewHist()
		for k := range 100 {
			v := lat + lat*int64((i+k)%7)/6
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		iv := result.Interval{Start: float64(i), End: float64(i + 1), Ops: map[string]result.OpInterval{"read": {Count: 100, Hist: enc}}}
		run.Intervals = append(run.Intervals, iv)
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := run.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := writeRun(t, filepath.Join(dir, "base"), 30, 1000)
	same := writeRun(t, filepath.Join(dir, "same"), 30, 1000)
	slow := writeRun(t, filepath.Join(dir, "slow"), 30, 1300)
	html := filepath.Join(dir, "c.html")
	code, out, stderr := execute(context.Background(), "compare", base, same, slow, "--fail-on", "p99+10%", "--html", html)
	if code != cli.ExitRegression || !strings.Contains(stderr, "read p99 changed +30") {
		t.Fatalf("exit %d, want %d for a 30 %% slower p99: %s", code, cli.ExitRegression, stderr)
	}
	if !strings.Contains(out, "no significant change") || !strings.Contains(out, "WORSE") {
		t.Errorf("table lacks a verdict:\n%s", out)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "Gates broken") {
		t.Errorf("html page: %v", err)
	}
	if code, _, stderr := execute(context.Background(), "compare", base, same, "--fail-on", "p99+10%"); code != cli.ExitOK {
		t.Errorf("an unchanged run: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"compare", base},
		{"compare", base, same, "--fail-on", "p99-10%"},
		{"compare", base, filepath.Join(dir, "nothing")},
	} {
		if code, _, _ := execute(context.Background(), args...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitUsage)
		}
	}
}

// compare refuses what would make a CI gate pass without measuring
// anything, before printing a table: a gate naming an operation neither
// run has, and runs that measured different things (unless --force). Runs
// too short for the method give the change and no verdict, so a gate
// cannot fire on them; a directory typed with a trailing slash keeps its
// name.
func TestCompareGuardsTheGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := writeRun(t, filepath.Join(dir, "base"), 30, 1000)
	same := writeRun(t, filepath.Join(dir, "same"), 30, 1000)
	hdr := func(w, mix string) result.Header {
		return result.Header{Workload: w, Adapter: "sqlite", Operations: []string{"read"}, Started: time.Unix(1e9, 0), Options: map[string]any{"mix": mix}}
	}
	mixA := writeRunWith(t, filepath.Join(dir, "mix-a"), 30, 1000, hdr("wiki", "read=9,update=1"))
	mixB := writeRunWith(t, filepath.Join(dir, "mix-b"), 30, 1000, hdr("wiki", "read=1,update=1"))
	ingest := writeRunWith(t, filepath.Join(dir, "ingest"), 30, 1000, hdr("ingest", "read=9,update=1"))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"gate on no operation", []string{base, same, "--fail-on", "p99:bogus+10%"}, cli.ExitUsage, `operation "bogus" is in neither`},
		{"second gate on no operation", []string{base, same, "--fail-on", "p99+10%,throughput:reads-5%"}, cli.ExitUsage, `operation "reads"`},
		{"different mixes", []string{mixA, mixB}, cli.ExitUsage, `mix "read=9,update=1" against "read=1,update=1"`},
		{"different workloads", []string{mixA, ingest}, cli.ExitUsage, `workload "wiki" against "ingest"`},
		{"a model or mix only one run records", []string{base, mixA}, cli.ExitUsage, `differ in more than the build: mix (not recorded) against "read=9,update=1"`},
		{"different, forced", []string{mixA, ingest, "--force"}, cli.ExitOK, "warning: "},
	} {
		code, out, stderr := execute(context.Background(), append([]string{"compare"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", tc.name, code, stderr, tc.code, tc.stderr)
		}
		if tc.code == cli.ExitUsage && out != "" {
			t.Errorf("%s: refused after printing:\n%s", tc.name, out)
		}
	}

	// Trailing slashes, as in compare's own --help example.
	code, out, stderr := execute(context.Background(), "compare", base+"/", same+"/")
	if code != cli.ExitOK || !strings.Contains(out, "base: base (wiki") || !strings.Contains(out, "new:  same (wiki") {
		t.Errorf("compare base/ same/: exit %d, %s\n%s", code, stderr, out)
	}

	// 4-second runs, 30 % slower: the change, no verdict.
	short := writeRun(t, filepath.Join(dir, "short"), 4, 1000)
	shortSlow := writeRun(t, filepath.Join(dir, "short-slow"), 4, 1300)
	code, out, stderr = execute(context.Background(), "compare", short, shortSlow)
	if code != cli.ExitOK || !strings.Contains(out, "+30.") || !strings.Contains(out, "too short for a verdict: 4 and 4 measured seconds") || strings.Contains(out, "WORSE") {
		t.Errorf("4-second runs: exit %d, %s\n%s", code, stderr, out)
	}
	// As a gate they cannot pass: the gate was not evaluated, which is
	// said with the runs and why, and is not a pass (exit 2) — one short
	// run is enough, whatever the change.
	for _, pair := range [][2]string{{short, shortSlow}, {short, base}, {base, short}} {
		code, out, stderr = execute(context.Background(), "compare", pair[0], pair[1], "--fail-on", "p99+10%")
		if code != cli.ExitUsage || !strings.Contains(stderr, "NOT evaluated") || !strings.Contains(stderr, "p99+10%") ||
			!strings.Contains(stderr, filepath.Base(pair[0])) || !strings.Contains(stderr, filepath.Base(pair[1])) ||
			!strings.Contains(stderr, "4 measured seconds") || !strings.Contains(stderr, "needs 10") {
			t.Errorf("gate on %s against %s: exit %d, stderr %q; want exit %d saying the gate was NOT evaluated, for which runs and why",
				filepath.Base(pair[0]), filepath.Base(pair[1]), code, stderr, cli.ExitUsage)
		}
		if out != "" {
			t.Errorf("gate on a short run: refused after printing:\n%s", out)
		}
	}
	// Two long runs: the gate is evaluated, and nothing is said of it.
	if code, _, stderr := execute(context.Background(), "compare", base, same, "--fail-on", "p99+10%"); code != cli.ExitOK || stderr != "" {
		t.Errorf("gate on two long runs: exit %d, %s", code, stderr)
	}
}

// Runs of different loads (clients, rate, threads...) are compared, with a
// warning on stderr naming each option that differs: a change between them
// need not be the build's.
func TestCompareWarnsOfDifferentLoads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hdr := func(opts map[string]any) result.Header {
		return result.Header{Workload: "microblog", Adapter: "sqlite", Operations: []string{"read"}, Started: time.Unix(1e9, 0), Options: opts}
	}
	a := writeRunWith(t, filepath.Join(dir, "a"), 30, 1000, hdr(map[string]any{"clients": 8, "rate": 0, "seed": 1}))
	b := writeRunWith(t, filepath.Join(dir, "b"), 30, 1000, hdr(map[string]any{"clients": 16, "rate": 500, "seed": 2}))
	same := writeRunWith(t, filepath.Join(dir, "same"), 30, 1000, hdr(map[string]any{"clients": 8, "rate": 0, "seed": 3}))
	code, out, stderr := execute(context.Background(), "compare", a, b)
	if code != cli.ExitOK || !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "clients 8 against 16") ||
		!strings.Contains(stderr, "rate 0 against 500") || strings.Contains(stderr, "seed") || out == "" {
		t.Errorf("different loads: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := execute(context.Background(), "compare", a, same); code != cli.ExitOK || stderr != "" {
		t.Errorf("the same load: exit %d, stderr %q", code, stderr)
	}
}
