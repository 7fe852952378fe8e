package study

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/experiment"
)

// tinyIngest is an ingest sweep small enough to take about a second on the
// embedded SQLite: the same experiment code path as a study's scenarios.
const tinyIngest = `name: tiny-ingest
study: test
description: a tiny ingest sweep on the embedded SQLite
workload:
  name: ingest
  command: sweep
  options: {sources: 2, batch: 100, from: 500, to: 1000, step: 500, runs: 3, warmup-runs: 1}
probe_every: -1s
`

// TestStudyEndToEnd runs a real (tiny) study on the embedded SQLite
// through Run and Report, checks the report has one row per published
// value with the paper's figure, fieldbench's, the ratio and the
// comparability, and that a second run skips the completed step.
func TestStudyEndToEnd(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "scenarios")
	if err := os.MkdirAll(scen, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scen, "tiny.yaml"), []byte(tinyIngest), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Plan{Study: "ingest", Size: "test", Steps: []Step{{Name: "sweep-sqlite", Scenario: "tiny.yaml", For: "sqlserver", Why: "test"}}}
	results := filepath.Join(dir, "results")
	var out, errb bytes.Buffer
	cfg := Config{Results: results, Scenarios: scen, Stdout: &out, Stderr: &errb, Version: "test"}
	if err := Run(context.Background(), p, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "[1/1 sweep-sqlite, 0s elapsed] running") {
		t.Errorf("no progress line in:\n%s", errb.String())
	}
	done, err := Complete(StepDir(results, p.Steps[0]))
	if err != nil || done == "" {
		t.Fatalf("step not complete after the run: %q, %v", done, err)
	}

	path, err := Report(p, results)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	s, err := Load("ingest")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Values {
		re := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(v.ID) + "` \\|.*$")
		line := re.FindString(md)
		if line == "" {
			t.Errorf("no row for %s", v.ID)
			continue
		}
		if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 10 {
			t.Errorf("row of %s has %d cells, want 9: %s", v.ID, n-1, line)
		}
	}
	if !strings.Contains(md, "| id | source | metric | conditions (paper) | paper | fieldbench | ratio | comparable | why not / how |") {
		t.Error("the value table lacks its header")
	}
	// What the tiny sweep measures, and what it cannot.
	for _, want := range []string{
		"| `ingest.text.record-size` |", "| 126 bytes | 126 bytes | 1 | yes | the largest over sweep-sqlite on sqlite",
		"| `ingest.text.couchbase-rest-speedup` |", "not measured | – | – | no step of this study runs couchbase",
		"| `ingest.text.sqlserver-vs-best-nosql` |", "not comparable: the paper's ratio is against cassandra, which no step of this study runs",
		"## Claims", "| `ingest.claim.ranking` |",
		"### Throughput (records/s) against load",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if !regexp.MustCompile("`ingest.text.ci-amplitude` \\|[^\n]*\\| [0-9.]+ % \\| [0-9.e+-]+ \\| no \\|").MatchString(md) {
		t.Errorf("the CI amplitude has no measured figure and ratio:\n%s", md)
	}

	// A second run skips the completed step and runs nothing new.
	errb.Reset()
	if err := Run(context.Background(), p, cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "already complete in "+done+": skipped") {
		t.Errorf("second run did not skip the step:\n%s", errb.String())
	}
	entries, _ := os.ReadDir(StepDir(results, p.Steps[0]))
	if len(entries) != 1 {
		t.Errorf("second run left %d experiment directories, want 1", len(entries))
	}
}

// TestRunInterruptedKeepsCompleted: a cancelled context stops before the
// next step, and the completed step stays complete.
func TestRunInterruptedKeepsCompleted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tiny.yaml"), []byte(tinyIngest), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Plan{Study: "ingest", Size: "test", Steps: []Step{{Name: "a", Scenario: "tiny.yaml", For: "sqlserver"}, {Name: "b", Scenario: "tiny.yaml", For: "sqlserver"}}}
	results := filepath.Join(dir, "results")
	var errb bytes.Buffer
	cfg := Config{Results: results, Scenarios: dir, Stdout: &bytes.Buffer{}, Stderr: &errb}
	if err := Run(context.Background(), Plan{Study: p.Study, Steps: p.Steps[:1]}, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, p, cfg); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if done, _ := Complete(StepDir(results, p.Steps[0])); done == "" {
		t.Error("the completed step lost its result")
	}
	if done, _ := Complete(StepDir(results, p.Steps[1])); done != "" {
		t.Error("the interrupted step counts as complete")
	}
}

// TestPlans: every study has a plan whose scenarios exist and parse at
// both sizes, with unique step names and a database of the study.
func TestPlans(t *testing.T) {
	if got, want := strings.Join(Planned(), ","), strings.Join(Names(), ","); got != want {
		t.Errorf("studies with a plan %s, studies %s", got, want)
	}
	for _, name := range Names() {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range Sizes() {
			p, err := PlanFor(name, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Check("../scenarios"); err != nil {
				t.Errorf("%s %s: %v", name, size, err)
			}
			seen := map[string]bool{}
			for _, st := range p.Steps {
				if seen[st.Name] {
					t.Errorf("%s %s: step %s twice", name, size, st.Name)
				}
				seen[st.Name] = true
				if !s.HasDatabase(st.For) {
					t.Errorf("%s: step %s is for %q, not a database of the study", name, st.Name, st.For)
				}
			}
		}
	}
	// From another directory the default "scenarios" is not there: the
	// error says what to do.
	p, err := PlanFor("wiki", SizeQuick)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(filepath.Join(t.TempDir(), "scenarios")); err == nil || !strings.Contains(err.Error(), "--scenarios") {
		t.Errorf("a missing scenarios directory: %v, want a hint at --scenarios", err)
	}
	if _, err := PlanFor("nosuch", SizeQuick); err == nil {
		t.Error("an unknown study has a plan")
	}
	if _, err := PlanFor("ingest", "huge"); err == nil {
		t.Error("an unknown size is accepted")
	}
}

// A step's name is its directory under the study's: one that would leave
// it, or be no single entry of it, makes no plan.
func TestPlanStepNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/abs", "nul\x00", "new\nline", strings.Repeat("s", 4096)} {
		if _, err := newPlan("wiki", SizeQuick, []Step{{Name: "fine"}, {Name: name}}); err == nil || !strings.Contains(err.Error(), "step name") {
			t.Errorf("step name %q: %v, want refused", name, err)
		}
	}
	if _, err := newPlan("wiki", SizeQuick, []Step{{Name: "elasticity-cassandra-01"}}); err != nil {
		t.Error(err)
	}
}

// TestPlansAligned: the steps whose method was aligned with the paper run
// its replication and consistency (issue 28, point 4): trajectory's
// Cassandra at RF = nodes and QUORUM at every size, wiki's Cassandra at RF
// 3 and QUORUM on at least 3 nodes at size study, and quick keeping the
// smaller RF 2 ONE scenarios that finish here in minutes.
func TestPlansAligned(t *testing.T) {
	tests := []struct {
		study, size, step string
		rf, consistency   string
		minNodes          int
	}{
		{"trajectory", SizeQuick, "cassandra", "nodes", "QUORUM", 1},
		{"trajectory", SizeStudy, "cassandra-10", "nodes", "QUORUM", 1},
		{"wiki", SizeStudy, "elasticity-cassandra-01", "3", "QUORUM", 3},
		{"wiki", SizeStudy, "scalability-cassandra-10", "3", "QUORUM", 3},
		{"wiki", SizeQuick, "elasticity-cassandra", "2", "ONE", 2},
	}
	for _, tt := range tests {
		p, err := PlanFor(tt.study, tt.size)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range p.Steps {
			if s.Name != tt.step {
				continue
			}
			found = true
			sc, err := p.scenario("../scenarios", s)
			if err != nil {
				t.Fatal(err)
			}
			c := sc.Cluster
			if c == nil || c.Options["rf"] != tt.rf || c.Options["consistency"] != tt.consistency || c.Nodes < tt.minNodes {
				t.Errorf("%s %s step %s: cluster %+v, want rf %s, %s, at least %d node(s)", tt.study, tt.size, tt.step, c, tt.rf, tt.consistency, tt.minNodes)
			}
		}
		if !found {
			t.Errorf("%s %s: no step %s", tt.study, tt.size, tt.step)
		}
	}
}

// TestPlansBuiltIn: without --scenarios, every plan checks from a
// directory holding no scenarios/ (an installed binary, the image's
// /results): the steps run fieldbench's built-in copies (issue 40,
// finding 9). Not parallel: it changes the working directory.
func TestPlansBuiltIn(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, name := range Planned() {
		for _, size := range Sizes() {
			p, err := PlanFor(name, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Check(""); err != nil {
				t.Errorf("%s %s: %v", name, size, err)
			}
			for _, s := range p.Steps {
				sc, err := p.scenario("", s)
				if err != nil || !sc.BuiltIn {
					t.Errorf("%s %s step %s: %v, built in %v", name, size, s.Name, err, sc != nil && sc.BuiltIn)
				}
			}
		}
	}
}

// An interrupted experiment writes the report of what it measured with
// experiment.InterruptedFile beside it: the step is not complete, and a
// concluded attempt beside it still is.
func TestCompleteSkipsInterrupted(t *testing.T) {
	t.Parallel()
	step := t.TempDir()
	write := func(dir string, files ...string) {
		if err := os.MkdirAll(filepath.Join(step, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(step, dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("20260101-000000-experiment-x", CompleteFile)
	write("20260102-000000-experiment-x", CompleteFile, experiment.InterruptedFile)
	done, err := Complete(step)
	if err != nil || filepath.Base(done) != "20260101-000000-experiment-x" {
		t.Errorf("Complete = %q, %v; want the concluded attempt, not the later interrupted one", done, err)
	}
	if err := os.RemoveAll(filepath.Join(step, "20260101-000000-experiment-x")); err != nil {
		t.Fatal(err)
	}
	if done, err := Complete(step); err != nil || done != "" {
		t.Errorf("Complete = %q, %v with only an interrupted attempt", done, err)
	}
}
