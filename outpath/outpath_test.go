package outpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/outpath"
	"github.com/fieldbench/fieldbench/report/export"
	"github.com/fieldbench/fieldbench/result"
)

// Every hostile name is refused with a reason, and the names fieldbench
// itself makes (and a user's ordinary ones) pass.
func TestComponent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want string // "" : accepted
	}{
		{"", "empty"},
		{".", "directory itself"},
		{"..", "directory itself"},
		{"../x", "separator"},
		{"../../../pwned", "separator"},
		{"x/..", "separator"},
		{"a/b", "separator"},
		{"/abs", "separator"},
		{"/", "separator"},
		{`a\b`, "separator"},
		{`..\..\x`, "separator"},
		{"a\x00b", "control character"},
		{"\x00", "control character"},
		{"line\nbreak", "control character"},
		{"x\r", "control character"},
		{"tab\there", "control character"},
		{"del\x7f", "control character"},
		{"c1\u0085", "control character"},
		{"bad\xffutf8", "UTF-8"},
		{strings.Repeat("a", 4096), "4096 bytes"},
		{strings.Repeat("a", outpath.MaxComponent+1), "256 bytes"},
		{strings.Repeat("é", 128), "256 bytes"},
		{strings.Repeat("a", outpath.MaxComponent), ""},
		{"crash", ""},
		{"20261121-101500-experiment-wiki-join-2", ""},
		{"elasticity-cassandra-01", ""},
		{"...", ""},
		{".hidden", ""},
		{"a..b", ""},
		{"with space", ""},
		{"ünïcödé-名前", ""},
		{"-dash", ""},
	} {
		err := outpath.Component(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Component(%s) = %v, want accepted", outpath.Quote(tc.name), err)
		case tc.want != "" && err == nil:
			t.Errorf("Component(%s) accepted, want refused (%s)", outpath.Quote(tc.name), tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("Component(%s) = %v, want it to say %q", outpath.Quote(tc.name), err, tc.want)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("Component(%s): a %d-byte message; a long name must be cut", outpath.Quote(tc.name), len(err.Error()))
		}
	}
}

// Output refuses every file fieldbench reads back, by name (the names of
// package result, cluster and the HDR exporter, so a rename there cannot
// leave this rule behind), by content under another name, and an input of
// the same command; an ordinary new or existing output passes.
func TestOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	w, err := result.Create(run, result.Header{Workload: "wiki", Adapter: "sqlite", Started: time.Unix(1e9, 0), Operations: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	hist := result.NewHist()
	if err := hist.RecordValue(100); err != nil {
		t.Fatal(err)
	}
	enc, err := result.EncodeHist(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Interval(result.Interval{Start: 0, End: 1, Ops: map[string]result.OpInterval{"read": {Count: 1, Hist: enc}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	resultFile := filepath.Join(run, result.FileName)
	r, err := result.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := export.HDRLogs(r, filepath.Join(run, "hdr"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("hdr logs %v: %v", logs, err)
	}
	copyOf := func(src, name string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	renamed := copyOf(resultFile, "saved.json")
	hlogTxt := copyOf(logs[0], "read-log.txt")
	sqlite := filepath.Join(dir, "wiki.db")
	if err := os.WriteFile(sqlite, []byte("SQLite format 3\x00rest of the page"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.html")
	if err := os.Symlink(resultFile, link); err != nil {
		t.Fatal(err)
	}
	input := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(input, []byte("some input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oldReport := filepath.Join(run, "report.html")
	if err := os.WriteFile(oldReport, []byte("<!doctype html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		path   string
		inputs []string
		want   string // "" : allowed
	}{
		{"the run's result file", resultFile, []string{run}, "result file"},
		{"a result file not yet there", filepath.Join(dir, "new", result.FileName), nil, "result file"},
		{"a cluster's state", filepath.Join(dir, "c", cluster.StateFile), nil, "cluster's saved state"},
		{"an hdr log", logs[0], nil, "HDR histogram log"},
		{"a new .hlog", filepath.Join(dir, "x.hlog"), nil, "HDR histogram log"},
		{"a result file renamed", renamed, nil, "fieldbench result file"},
		{"an hdr log renamed", hlogTxt, nil, "HDR histogram log"},
		{"an SQLite database", sqlite, nil, "SQLite database"},
		{"a link to a result file", link, nil, "result file"},
		{"an input", input, []string{input}, "an input of this command"},
		{"empty", "", nil, "empty"},
		{"the run's report", oldReport, []string{run}, ""},
		{"a new file", filepath.Join(dir, "compare.html"), []string{run}, ""},
		{"an unrelated existing file", input, []string{run}, ""},
	} {
		err := outpath.Output(tc.path, tc.inputs...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want allowed", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: allowed, want refused (%s)", tc.name, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}
