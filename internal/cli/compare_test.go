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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := result.Create(dir, result.Header{Workload: "wiki", Adapter: "sqlite", Operations: []string{"read"}, Started: time.Unix(1e9, 0)})
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
