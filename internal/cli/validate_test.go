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

// pw is the password the tests below put in DSNs: never in any output.
const pw = "S3cretPW9"

// bounded is the context of a command that the fixed code refuses at
// once and the code before it ran (a study started its clusters): the
// test stops alone either way.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// writeScenario writes a scenario file in a new directory and returns its
// path.
func writeScenario(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 40, finding 1: a password printed. `run --db
// null://user:PW@host` exited 1 quoting the raw DSN after its redacted
// form; a scenario's dsn leaked the same way (experiment and its dry run).
// Anything after null:// is a DSN of the wrong form: exit 2, before any
// directory is made, without the password.
func TestNullDSNHidesPassword(t *testing.T) {
	t.Parallel()
	sc := writeScenario(t, "name: leak\nworkload: {name: microblog, options: {duration: 2s, users: 20}}\ndsn: \"null://u:"+pw+"@h\"\n")
	for _, args := range [][]string{
		{"run", "microblog", "--duration", "2s", "--db", "null://user:" + pw + "@host"},
		{"run", "microblog", "--duration", "2s", "--db", "null://host?password=" + pw},
		{"experiment", sc},
		{"experiment", "--dry-run", sc},
	} {
		res := filepath.Join(t.TempDir(), "results")
		code, out, stderr := execute(bounded(t), append(args, "--results", res)...)
		if code != cli.ExitUsage || strings.Contains(out+stderr, pw) || strings.Contains(out+stderr, "S3cr") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 without the password", args, code, out, stderr)
		}
		if !strings.Contains(stderr, "null://") {
			t.Errorf("%v: the refusal does not say what is wrong: %s", args, stderr)
		}
		if _, err := os.Stat(res); err == nil {
			t.Errorf("%v: refused, but made %s", args, res)
		}
	}
}

// Issue 40, finding 6: bad input found late. experiment --dry-run
// accepted clients: -5 and a DSN whose port is not one; the real
// experiment refused them (exit 2) only after making its directory. The
// dry run and the run make the same checks, all before anything is made:
// the workload's options through its job's own check, the DSN through its
// adapter's parser, the timeline's times.
func TestExperimentRefusesBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"negative clients", "workload: {name: microblog, options: {clients: -5, duration: 2s}}\ndsn: \"null://\"\n",
			"workload.options.clients: clients must be at least 1 (got -5)"},
		{"postgres port", "workload: {name: microblog, options: {duration: 2s}}\ndsn: \"postgres://u:" + pw + "@127.0.0.1:bad:port/db\"\n",
			"dsn: postgres: malformed DSN postgres://u:xxxxx@127.0.0.1:bad:port/db"},
		{"redis port out of range", "workload: {name: microblog, options: {duration: 2s}}\ndsn: \"redis://127.0.0.1:99999\"\n",
			"dsn: redis: malformed DSN redis://127.0.0.1:99999: the port is not a number in 1-65535"},
		{"sqlite in a missing directory", "workload: {name: microblog, options: {duration: 2s}}\ndsn: \"sqlite:///nonexistent-dir/x.db\"\n",
			"dsn: sqlite: directory /nonexistent-dir does not exist"},
		{"ingest sweep", "workload: {name: ingest, command: sweep, options: {from: 400, to: 300}}\n",
			"--from (400) must not be greater than --to (300)"},
		{"negative at", "workload: {name: microblog, options: {duration: 5s}}\ndsn: \"null://\"\ntimeline: [{when: start, at: -5s, do: mark}]\n",
			"line 4: timeline[0].at: -5s: the time after the load starts at which the action fires cannot be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := writeScenario(t, "name: late\n"+tc.yaml)
			for _, args := range [][]string{{"experiment", "--dry-run", sc}, {"experiment", sc}} {
				res := filepath.Join(t.TempDir(), "results")
				code, out, stderr := execute(bounded(t), append(args, "--results", res)...)
				if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(out+stderr, pw) {
					t.Errorf("%v: exit %d, stderr %q (stdout %q); want exit 2 saying %q", args[:len(args)-1], code, stderr, out, tc.want)
				}
				if _, err := os.Stat(res); err == nil {
					t.Errorf("%v: refused, but made %s", args[:len(args)-1], res)
				}
			}
		})
	}
}

// A run's --db of the wrong form is refused as such (exit 2) before its
// directory is made: a port out of range failed at the dial, exit 1.
func TestRunRefusesBadPort(t *testing.T) {
	t.Parallel()
	res := filepath.Join(t.TempDir(), "results")
	code, _, stderr := execute(bounded(t), "run", "microblog", "--db", "redis://127.0.0.1:99999", "--duration", "1s", "--results", res)
	if code != cli.ExitUsage || !strings.Contains(stderr, "the port is not a number in 1-65535") || strings.Contains(stderr, "connecting to") {
		t.Fatalf("exit %d: %s; want exit 2 before connecting", code, stderr)
	}
	if _, err := os.Stat(res); err == nil {
		t.Errorf("refused, but made %s", res)
	}
}

// `study` and its dry run check every step's scenario the same way, before
// the first step: a step refused by its workload's own check was found by
// neither (the real study ran the other steps, then exited 1).
func TestStudyRefusesBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	scen := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scen, "trajectory"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "..", "scenarios", "trajectory")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "postgres.yaml" {
			if !strings.Contains(string(b), "queries: 10,") {
				t.Fatal("scenarios/trajectory/postgres.yaml changed: the test no longer makes it bad")
			}
			b = []byte(strings.Replace(string(b), "queries: 10,", "queries: -5,", 1))
		}
		if err := os.WriteFile(filepath.Join(scen, "trajectory", e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"study", "trajectory", "--dry-run"}, {"study", "trajectory"}} {
		res := filepath.Join(t.TempDir(), "results")
		code, _, stderr := execute(bounded(t), append(args, "--scenarios", scen, "--results", res)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "workload.options.queries: --queries must be at least 1 (got -5)") {
			t.Errorf("%v: exit %d, %s; want exit 2 naming the step's option", args, code, stderr)
		}
		if _, err := os.Stat(res); err == nil {
			t.Errorf("%v: refused, but made %s", args, res)
		}
	}
}

// damageHist replaces the start of the first histogram of dir's result
// file by bytes that are no histogram, the line staying valid JSON.
func damageHist(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, result.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const mark = `"hist":"HISTF`
	if !strings.Contains(string(b), mark) {
		t.Fatal("no histogram in the result file")
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), mark, `"hist":"!!!!!`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 40, finding 6: report of a result file whose histogram is damaged
// exited 1, as if the work had failed. A damaged input file is bad input
// (exit 2), as a result file whose header is damaged is: for report,
// compare and merge alike, each saying that the histogram is damaged.
func TestDamagedHistogramIsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeRun(t, filepath.Join(dir, "bad"), 5, 1000)
	good := writeRun(t, filepath.Join(dir, "good"), 5, 1000)
	s0 := writeShard(t, filepath.Join(dir, "s0"), 0, 2)
	s1 := writeShard(t, filepath.Join(dir, "s1"), 1, 2)
	damageHist(t, bad)
	damageHist(t, s1)
	for _, args := range [][]string{
		{"report", bad, "--out", filepath.Join(dir, "r.html")},
		{"compare", good, bad},
		{"merge", "--results", filepath.Join(dir, "merged"), s0, s1},
	} {
		code, _, stderr := execute(bounded(t), args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "damaged histogram in the result file") {
			t.Errorf("%v: exit %d, %s; want exit 2 saying the histogram is damaged", args[:1], code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report of a damaged file wrote a report")
	}
}

// Issue 40, finding 10: an empty --db (--db "") silently used a new SQLite file. An
// explicitly empty --db is bad input; leaving --db out is the embedded
// SQLite, as before.
func TestEmptyDBRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "microblog", "--db", "", "--duration", "1s", "--users", "20"},
		{"run", "microblog", "--db=", "--duration", "1s", "--users", "20"},
		{"findmax", "microblog", "--db", "", "--slo", "p99<1s", "--users", "20", "--step-duration", "1s", "--step-warmup", "0s", "--max-steps", "2", "--clients", "2"},
		{"sweep", "ingest", "--db", "", "--from", "10", "--to", "10", "--runs", "1", "--warmup-runs", "0", "--sources", "1"},
		{"load", "wiki", "--db", "", "--articles", "10"},
	} {
		res := filepath.Join(t.TempDir(), "results")
		code, _, stderr := execute(bounded(t), append(args, "--results", res)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "--db is empty") {
			t.Errorf("%v: exit %d, %s; want exit 2 saying --db is empty", args, code, stderr)
		}
		if entries, _ := os.ReadDir(res); len(entries) > 0 {
			t.Errorf("%v: refused, but left %s", args, entries[0].Name())
		}
	}
	res := t.TempDir()
	code, _, stderr := execute(bounded(t), "run", "microblog", "--duration", "1s", "--users", "20", "--clients", "2", "--results", res)
	if m, _ := filepath.Glob(filepath.Join(res, "*-microblog-sqlite", "microblog.db")); code != cli.ExitOK || len(m) != 1 {
		t.Errorf("without --db: exit %d, databases %v: %s; want the embedded SQLite", code, m, stderr)
	}
}

// Issue 40, finding 10: `completion tcsh` printed the help and exited 0.
// A shell without a script is bad input naming the shells there are.
func TestCompletionUnknownShell(t *testing.T) {
	t.Parallel()
	code, out, stderr := execute(bounded(t), "completion", "tcsh")
	if code != cli.ExitUsage || !strings.Contains(stderr, `"tcsh"`) || !strings.Contains(stderr, "bash, fish, powershell, zsh") || out != "" {
		t.Errorf("completion tcsh: exit %d, stdout %q, stderr %q; want exit 2 naming the shells", code, out, stderr)
	}
	if code, out, _ := execute(bounded(t), "completion", "bash"); code != cli.ExitOK || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
	if code, out, _ := execute(bounded(t), "completion"); code != cli.ExitOK || !strings.Contains(out, "zsh") {
		t.Errorf("completion: exit %d, %q; want its help", code, out)
	}
}
