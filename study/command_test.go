package study

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lines has one line per study with a plan, indented, naming its paper;
// firstAuthor shortens a list of authors.
func TestLines(t *testing.T) {
	t.Parallel()
	lines := strings.Split(Lines("  "), "\n")
	if len(lines) != len(Planned()) {
		t.Fatalf("%d lines for %d studies:\n%s", len(lines), len(Planned()), strings.Join(lines, "\n"))
	}
	for i, n := range Planned() {
		if !strings.HasPrefix(lines[i], "  "+n+" ") || !strings.Contains(lines[i], " published values, ") {
			t.Errorf("line %d %q does not describe %s", i+1, lines[i], n)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"Kuhlenkamp, Klems and Röss", "Kuhlenkamp et al."},
		{"Rabl", "Rabl"},
		{"", ""},
	} {
		if got := firstAuthor(c.in); got != c.want {
			t.Errorf("firstAuthor(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// RunThenReport: the report alone names the report; a run cut short
// names the report of the completed steps, says how to resume and is
// ErrInterrupted.
func TestRunThenReport(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tiny.yaml"), []byte(tinyIngest), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Plan{Study: "ingest", Size: "test", Steps: []Step{{Name: "a", Scenario: "tiny.yaml", For: "sqlserver"}, {Name: "b", Scenario: "tiny.yaml", For: "sqlserver"}}}
	results := filepath.Join(dir, "results")
	var out, errb bytes.Buffer
	cfg := Config{Results: results, Scenarios: dir, Stdout: &out, Stderr: &errb}
	if err := RunThenReport(context.Background(), p, cfg, false); err != nil || !strings.HasPrefix(out.String(), "study ingest: "+results) {
		t.Fatalf("report only: %v, printed %q", err, out.String())
	}
	if err := Run(context.Background(), Plan{Study: p.Study, Steps: p.Steps[:1]}, cfg); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := RunThenReport(ctx, p, cfg, true)
	if !errors.Is(err, ErrInterrupted) || !strings.HasPrefix(out.String(), "study ingest (completed steps only): "+results) ||
		!strings.Contains(errb.String(), "fieldbench: study ingest interrupted; completed steps are kept in "+results+", run the same command again to resume") {
		t.Errorf("interrupted: %v\nstdout %q\nstderr %q", err, out.String(), errb.String())
	}
}
