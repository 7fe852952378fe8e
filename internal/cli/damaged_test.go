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
	"github.com/fieldbench/fieldbench/result"
)

// writeShard writes shard i of n of one run (see writeRun): the header
// says which, so merge takes the files for the shards of one run.
func writeShard(t *testing.T, dir string, i, n int) string {
	t.Helper()
	h := result.Header{Workload: "wiki", Adapter: "sqlite", Operations: []string{"read"},
		Started: time.Unix(1e9, 0), Options: map[string]any{"shard": fmt.Sprintf("%d/%d", i, n)}}
	w, err := result.Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	run := &result.Run{Header: h}
	for s := range 8 {
		hist := result.NewHist()
		for k := range 50 {
			if err := hist.RecordValue(int64(100 + k)); err != nil {
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(hist)
		if err != nil {
			t.Fatal(err)
		}
		iv := result.Interval{Start: float64(s), End: float64(s + 1), Ops: map[string]result.OpInterval{"read": {Count: 50, Hist: enc}}}
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
		run.Intervals = append(run.Intervals, iv)
	}
	// A finished shard's summary (merge refuses a shard without one).
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

// spoil replaces line n (1-based) of dir's result file with garbage, or,
// when n is 0, cuts the last line in half without its newline (a kill
// mid-write). It returns the file's path.
func spoil(t *testing.T, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, result.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var out string
	if n == 0 {
		last := lines[len(lines)-1]
		lines[len(lines)-1] = last[:len(last)/2]
		out = strings.Join(lines, "\n")
	} else {
		lines[n-1] = `{"kind":"interval","interval":{"start":3,` + "\x00garbage"
		out = strings.Join(lines, "\n") + "\n"
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// One garbage line in the middle of a result file costs that line, not
// the file: report, compare, scores and merge read the rest, succeed, and
// say on stderr which line they skipped (FILE:LINE). A file whose last
// line was cut off by a kill says so on the terminal too, and in the
// report.
func TestDamagedResultFilesReadAsFarAsTheyGo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := writeRun(t, filepath.Join(dir, "base"), 10, 1000)
	next := writeRun(t, filepath.Join(dir, "next"), 10, 1000)
	cut := writeRun(t, filepath.Join(dir, "cut"), 10, 1000)
	s0 := writeShard(t, filepath.Join(dir, "s0"), 0, 2)
	s1 := writeShard(t, filepath.Join(dir, "s1"), 1, 2)
	baseFile := spoil(t, base, 4)
	s1File := spoil(t, s1, 5)
	cutFile := spoil(t, cut, 0) // the summary, line 12, cut in half
	html := filepath.Join(dir, "cut.html")
	for _, tc := range []struct {
		name string
		args []string
		want []string // on stderr
	}{
		{"report", []string{"report", base, "--out", filepath.Join(dir, "r.html")}, []string{baseFile + ":4:"}},
		{"compare", []string{"compare", base, next}, []string{baseFile + ":4:"}},
		{"compare, damaged second", []string{"compare", next, base}, []string{baseFile + ":4:"}},
		{"scores", []string{"scores", base}, []string{baseFile + ":4:"}},
		{"scores of the file", []string{"scores", baseFile}, []string{baseFile + ":4:"}},
		{"merge", []string{"merge", "--results", filepath.Join(dir, "merged"), s0, s1}, []string{s1File + ":5:"}},
		{"report of a cut file", []string{"report", cut, "--out", html}, []string{cutFile + ":12:", "cut off"}},
		{"compare with a cut file", []string{"compare", cut, next}, []string{cutFile + ":12:", "cut off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d, want %d (the rest of the file read): %s", code, cli.ExitOK, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "last line was cut off and skipped (line 12)") {
		t.Errorf("the report of a cut file does not say which line it skipped")
	}
}
