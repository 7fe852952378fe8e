package history

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/analysis/compare"
)

// readbackHistory is an SQLite history of two series: three runs of 10
// clients and one of 20 (options that change the work); runs are the
// first series' runs.
func readbackHistory(t *testing.T) (target string, runs []Run) {
	t.Helper()
	ctx := context.Background()
	target = filepath.Join(t.TempDir(), "history.db")
	s, err := Open(ctx, target, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var recs []Run
	for i, clients := range []int{10, 10, 10, 20} {
		f := fakeRun{started: t0.Add(time.Duration(i) * time.Hour), ops: []string{"post", "timeline"}, seconds: 12, rate: 100, latencyUS: 1000, seed: uint64(i + 1),
			options: map[string]any{"clients": clients, "model": "denormalized", "mix": "post=1,timeline=1", "duration": "12s"}}
		recs = append(recs, f.record(t, filepath.Join(t.TempDir(), "run")))
	}
	if _, err := s.Add(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return target, recs[:3]
}

// What `history list`, `show`, `trend`, `changes` and `export` print,
// and their refusals: no history (ErrNoHistory, and no file made), a
// series, run or operation that nothing answers, a gate on an operation
// no run has and an export of several series (ErrSelection), each with
// the message the CLI prints.
func TestReadback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	target, runs := readbackHistory(t)
	series := runs[0].Series
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	page := filepath.Join(dir, "trend.html")
	csv := filepath.Join(dir, "series.csv")
	gate, err := compare.ParseGates("p99:nosuchop+10%")
	if err != nil {
		t.Fatal(err)
	}
	figures := []string{"p99", "throughput"}
	for _, c := range []struct {
		name         string
		do           func(stdout, stderr *bytes.Buffer) error
		wantErr      error  // nil: succeeds
		want, stderr string // in its output, or its error's message
	}{
		{"list", func(o, _ *bytes.Buffer) error { return List(ctx, o, target, Selection{}, 0) }, nil,
			"history " + target + ": 4 run(s) in 2 series\n", ""},
		{"list one series, its last run", func(o, _ *bytes.Buffer) error { return List(ctx, o, target, Selection{Series: series}, 1) }, nil,
			": 3 run(s) in 1 series\n\nseries " + series, ""},
		{"list no history", func(o, _ *bytes.Buffer) error { return List(ctx, o, missing, Selection{}, 0) }, ErrNoHistory,
			"no history database at " + missing, ""},
		{"list no such series", func(o, _ *bytes.Buffer) error { return List(ctx, o, target, Selection{Series: "zzzz"}, 0) }, ErrSelection, "zzzz", ""},
		{"list no such op", func(o, _ *bytes.Buffer) error { return List(ctx, o, target, Selection{Op: "nosuchop"}, 0) }, ErrSelection,
			"--op nosuchop: no run of the series shown has it", ""},
		{"show", func(o, _ *bytes.Buffer) error { return Show(ctx, o, target, runs[1].ID[:10], []float64{99}) }, nil, "run " + runs[1].ID + "\n", ""},
		{"show no such run", func(o, _ *bytes.Buffer) error { return Show(ctx, o, target, "zzzz", []float64{99}) }, ErrSelection, "zzzz", ""},
		{"show no history", func(o, _ *bytes.Buffer) error { return Show(ctx, o, missing, runs[0].ID, nil) }, ErrNoHistory, "no history database", ""},
		{"trend with a page", func(o, _ *bytes.Buffer) error {
			return TrendReport(ctx, o, target, Selection{Series: series, Figures: figures}, DefaultOptions, 0, page)
		}, nil, "\nreport: " + page + "\n", ""},
		{"trend no such op", func(o, _ *bytes.Buffer) error {
			return TrendReport(ctx, o, target, Selection{Op: "nosuchop", Figures: figures}, DefaultOptions, 0, "")
		}, ErrSelection, "--op nosuchop", ""},
		{"changes", func(o, _ *bytes.Buffer) error {
			_, err := Changes(ctx, o, target, Selection{Figures: figures}, DefaultOptions, nil, false)
			return err
		}, nil, "change points: e-divisive means", ""},
		{"changes as JSON", func(o, _ *bytes.Buffer) error {
			_, err := Changes(ctx, o, target, Selection{Figures: figures}, DefaultOptions, nil, true)
			return err
		}, nil, "[]\n", ""},
		{"changes with a gate on no run's operation", func(o, _ *bytes.Buffer) error {
			_, err := Changes(ctx, o, target, Selection{Figures: figures}, DefaultOptions, gate, false)
			return err
		}, ErrSelection, `--fail-on "p99:nosuchop+10%": operation "nosuchop" is in no run of the series checked`, ""},
		{"export to stdout", func(o, e *bytes.Buffer) error {
			return Export(ctx, o, e, target, Selection{Series: series, Op: "post", Figures: figures}, "")
		}, nil, "time,run,commit,server_version,host,post_p99,post_throughput\n", ""},
		{"export to a file", func(o, e *bytes.Buffer) error {
			return Export(ctx, o, e, target, Selection{Series: series, Figures: []string{"p99", "p42"}}, csv)
		}, nil, "3 run(s), 2 column(s): " + csv + "\n", "fieldbench: columns left out (not in every run of the series): "},
		{"export several series", func(o, e *bytes.Buffer) error { return Export(ctx, o, e, target, Selection{Figures: figures}, "") }, ErrSelection,
			"export writes one series: give --series (the history has 2: ", ""},
	} {
		var stdout, stderr bytes.Buffer
		err := c.do(&stdout, &stderr)
		switch {
		case c.wantErr == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr == nil && !strings.Contains(stdout.String(), c.want):
			t.Errorf("%s: printed\n%s\nwant %q in it", c.name, stdout.String(), c.want)
		case c.wantErr != nil && (!errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q wrapping %v", c.name, err, c.want, c.wantErr)
		case !strings.Contains(stderr.String(), c.stderr):
			t.Errorf("%s: stderr\n%s\nwant %q in it", c.name, stderr.String(), c.stderr)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read made a history")
	}
	if b, err := os.ReadFile(csv); err != nil || !strings.HasPrefix(string(b), "time,run,") || strings.Count(string(b), "\n") != 4 {
		t.Errorf("the exported file: %q, %v", b, err)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("the trend page: %v", err)
	}
}
