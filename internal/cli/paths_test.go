package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// filesUnder lists every file and directory under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// A scenario's name becomes one entry of --results and nothing else
// (issue 40, finding 2: name "../../../pwned" wrote DIR/pwned/ beside
// DIR/exres, and --dry-run accepted it). Every hostile name is refused
// with exit 2 by the dry run and by the real run, before anything is
// made, inside --results or out of it.
func TestExperimentNameStaysInResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml string }{
		{"escape", `"../../../pwned"`},
		{"parent", `".."`},
		{"dot", `"."`},
		{"subdirectory", `"a/b"`},
		{"absolute", `"/tmp/pwned"`},
		{"backslash", `'..\..\pwned'`},
		{"newline", `"two\nlines"`},
		{"nul", `"nul\0byte"`},
		{"4 KB", strings.Repeat("n", 4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			scenario := filepath.Join(base, "s.yaml")
			yaml := "name: " + tc.yaml + "\nworkload: {name: microblog, options: {users: 20, clients: 1, duration: 1s}}\n"
			if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			results := filepath.Join(base, "exres")
			for _, dry := range []bool{true, false} {
				args := []string{"experiment", scenario, "--results", results}
				if dry {
					args = append(args, "--dry-run")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				code, out, stderr := execute(ctx, args...)
				cancel()
				if code != cli.ExitUsage || !strings.Contains(stderr, "name:") {
					t.Errorf("dry run %v: exit %d, want 2 naming the scenario's name\nstdout %s\nstderr %s", dry, code, out, stderr)
				}
				if len(stderr) > 1000 {
					t.Errorf("dry run %v: a %d-byte message (a long name must be cut)", dry, len(stderr))
				}
				if got := filesUnder(t, base); len(got) != 1 || got[0] != "s.yaml" {
					t.Errorf("dry run %v: refused, but wrote %v", dry, got)
				}
			}
		})
	}
}

// A run directory named for a result file's header (merge names its
// directory for the shards' workload and adapter) stays inside --results
// too: a crafted header is refused, not followed up the tree.
func TestMergeOfACraftedHeaderStaysInResults(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	var shards []string
	for i := range 2 {
		dir := writeShard(t, filepath.Join(base, "in", "s"+string(rune('0'+i))), i, 2)
		path := filepath.Join(dir, result.FileName)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"workload":"wiki"`), []byte(`"workload":"../../../escaped"`), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, dir)
	}
	before := filesUnder(t, base)
	results := filepath.Join(base, "out", "merged")
	code, _, stderr := execute(context.Background(), append([]string{"merge", "--results", results}, shards...)...)
	if code != cli.ExitUsage || !strings.Contains(stderr, "separator") {
		t.Errorf("exit %d, want 2 saying the name holds a separator: %s", code, stderr)
	}
	after := filesUnder(t, base)
	for _, p := range after {
		if !strings.HasPrefix(p, "in") && !strings.HasPrefix(p, "out") {
			t.Errorf("merge wrote %s outside --results", p)
		}
		if strings.Contains(p, "escaped") {
			t.Errorf("merge made %s", p)
		}
	}
	if len(after) > len(before)+2 { // out/ and out/merged/ at most
		t.Errorf("refused, but wrote %v", after[len(before):])
	}
}

// An output never replaces a file fieldbench reads (issue 40, finding 3:
// report --out D/result.jsonl and compare --html B/result.jsonl exited 0
// and left HTML where the run was). Refused with exit 2 before any work:
// the result files are byte for byte as they were, and compare printed
// no table.
func TestOutputNeverReplacesAReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeRun(t, filepath.Join(dir, "a"), 10, 1000)
	b := writeRun(t, filepath.Join(dir, "b"), 10, 1000)
	aFile, bFile := filepath.Join(a, result.FileName), filepath.Join(b, result.FileName)
	saved := filepath.Join(dir, "b-saved.jsonl") // a result under another name
	bb, err := os.ReadFile(bFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(saved, bb, 0o644); err != nil {
		t.Fatal(err)
	}
	hlog := filepath.Join(a, "hdr", "read.hlog")
	if err := os.MkdirAll(filepath.Dir(hlog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hlog, []byte("#[Histogram log format version 1.3]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "cl", "cluster.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, []byte(`{"engine":"redis"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []string{aFile, bFile, saved, hlog, state}
	want := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = b
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"report over its run's result", []string{"report", a, "--out", aFile}},
		{"report over another run's result", []string{"report", a, "--out", bFile}},
		{"report over an hdr log", []string{"report", a, "--out", hlog}},
		{"report over a cluster's state", []string{"report", a, "--out", state}},
		{"report over a result by another name", []string{"report", a, "--out", saved}},
		{"compare over the new run's result", []string{"compare", a, b, "--html", bFile}},
		{"compare over the base run's result", []string{"compare", a, b, "--html", aFile}},
		{"compare over an input file", []string{"compare", a, saved, "--html", saved}},
		{"cpu profile over a result", []string{"report", a, "--out", filepath.Join(dir, "r.html"), "--cpuprofile", bFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want 2\nstdout %s\nstderr %s", code, out, stderr)
			}
			if out != "" {
				t.Errorf("refused, but did the work first: %s", out)
			}
			for _, f := range files {
				if got, err := os.ReadFile(f); err != nil || !bytes.Equal(got, want[f]) {
					t.Errorf("%s was changed (%v)", f, err)
				}
			}
		})
	}
	// And the runs still read.
	if code, _, stderr := execute(context.Background(), "compare", a, b); code != cli.ExitOK {
		t.Errorf("compare after the refusals: exit %d: %s", code, stderr)
	}
}

// A file given where a result is read is read itself, and one that is no
// result file is named in the error (issue 40, finding 10: scores
// /etc/passwd looked for /etc/result.jsonl, and a note beside a run was
// read as that run).
func TestFileArgumentThatIsNoResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := writeRun(t, filepath.Join(dir, "run"), 10, 1000)
	notes := filepath.Join(run, "notes.txt")
	if err := os.WriteFile(notes, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(run, "nosuch.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		path string // the path the error must name
		want string
	}{
		{"scores of a text file", []string{"scores", notes}, notes, "no header"},
		{"report of a text file", []string{"report", notes, "--out", filepath.Join(dir, "r.html")}, notes, "no header"},
		{"compare with a text file", []string{"compare", run, notes}, notes, "no header"},
		{"scores of a missing file", []string{"scores", missing}, missing, "no such file"},
		{"scores of a device", []string{"scores", "/dev/null"}, "/dev/null", "a character device, not a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.path) || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 naming %s (%q): %s", code, tc.path, tc.want, stderr)
			}
			if strings.Contains(stderr, filepath.Join(filepath.Dir(tc.path), result.FileName)) || strings.Contains(stderr, "no "+result.FileName+" in") {
				t.Errorf("the error names a file that was not given: %s", stderr)
			}
		})
	}
}

// Two result files joined into one are two runs, not one: a second
// header is refused, with its line (issue 40, finding 10: read as one run
// without a word).
func TestConcatenatedResultFilesRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeRun(t, filepath.Join(dir, "a"), 10, 1000)
	b := writeRun(t, filepath.Join(dir, "b"), 10, 2000)
	ab, err := os.ReadFile(filepath.Join(a, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile(filepath.Join(b, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(dir, "both")
	if err := os.MkdirAll(both, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(both, result.FileName), append(ab, bb...), 0o644); err != nil {
		t.Fatal(err)
	}
	second := strings.Count(string(ab), "\n") + 1
	for _, args := range [][]string{
		{"report", both, "--out", filepath.Join(dir, "r.html")},
		{"scores", both},
		{"compare", a, both},
	} {
		code, _, stderr := execute(context.Background(), args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "second header") || !strings.Contains(stderr, "line "+strconv.Itoa(second)) {
			t.Errorf("%s: exit %d, want 2 naming the second header at line %d: %s", args[0], code, second, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report wrote a page of two runs read as one")
	}
}

// report honours Ctrl-C (issue 40, finding 10: it finished and exited 0):
// interrupted, it exits 130 and writes no page, neither a new one nor over
// the one already there.
func TestReportInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeRun(t, filepath.Join(dir, "a"), 10, 1000)
	b := writeRun(t, filepath.Join(dir, "b"), 10, 1000)
	old := filepath.Join(a, "report.html")
	if err := os.WriteFile(old, []byte("the old page"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "both.html")
	for _, args := range [][]string{{"report", a}, {"report", a, b, "--out", out}} {
		code, stdout, stderr := execute(ctx, args...)
		if code != cli.ExitInterrupted || strings.Contains(stdout, "report:") {
			t.Errorf("%v: exit %d, want 130 and no report\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
	}
	if b, _ := os.ReadFile(old); string(b) != "the old page" {
		t.Error("an interrupted report replaced the run's page")
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an interrupted report wrote its page")
	}
	// Ctrl-C once the runs are read (the warning about a damaged line is
	// the moment: stderr cancels as it is written), while the page renders.
	big := writeRun(t, filepath.Join(dir, "big"), 300, 1000)
	spoil(t, big, 3)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	page := filepath.Join(dir, "big.html")
	code := cli.Execute(ctx, []string{"report", big, "--out", page}, &stdout, cancelOnWrite{cancel})
	if code != cli.ExitInterrupted || strings.Contains(stdout.String(), "report:") {
		t.Errorf("interrupted while rendering: exit %d, want 130 and no report: %s", code, stdout.String())
	}
	if _, err := os.Stat(page); err == nil {
		t.Error("a report interrupted while rendering wrote its page")
	}
}

// cancelOnWrite is a stderr that cancels the command's context when the
// command first writes to it.
type cancelOnWrite struct{ cancel context.CancelFunc }

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c.cancel()
	return len(p), nil
}
