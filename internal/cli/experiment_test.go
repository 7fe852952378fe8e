package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

func TestExperimentBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nworkload: {name: wiki}\ntimeline: [{at: 5s, do: kill, count: 1}]\n"), 0o644)
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(typo, []byte("name: x\nworkload: {name: wiki}\nclustr: {engine: redis, nodes: 1}\n"), 0o644)
	rf := filepath.Join(dir, "rf.yaml")
	os.WriteFile(rf, []byte("name: x\nworkload: {name: wiki}\ncluster: {engine: cassandra, nodes: 2, options: {rf: bogus}}\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		// The dry run checks cluster option values as the real run does.
		{"bad cluster option, dry run", []string{"experiment", "--dry-run", rf}, `cluster.options: cassandra: option rf="bogus"`},
		{"missing file", []string{"experiment", filepath.Join(dir, "nope.yaml")}, "read scenario"},
		{"no file", []string{"experiment"}, "accepts 1 arg"},
		{"invalid", []string{"experiment", bad}, "needs a cluster started by the scenario"},
		{"unknown key", []string{"experiment", typo}, "field clustr not found"},
		{"scores without files", []string{"scores"}, "requires at least 1 arg"},
		{"scores of nothing", []string{"scores", dir}, "result"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, cli.ExitUsage, tc.want)
			}
		})
	}
	code, out, _ := execute(context.Background(), "experiment", "--dry-run", "../../scenarios/microblog/crash.yaml")
	if code != 0 || !strings.Contains(out, "kill 2 node(s) at 1m40s") || !strings.Contains(out, "durability audit") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
}

// experimentRun runs a scenario written in the test and returns the run
// directories it made (sorted) and its output.
func experimentRun(t *testing.T, scenario string, limit time.Duration) ([]*result.Run, string) {
	t.Helper()
	base := t.TempDir()
	// PostgreSQL runs as its own user when the test runs as root: it must
	// reach its cluster directory (t.TempDir and its parent are 0700).
	for _, d := range []string{base, filepath.Dir(base)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(base, "scenario.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	code, out, stderr := execute(ctx, "experiment", path, "--results", base)
	if code != 0 {
		t.Fatalf("experiment: exit %d\n%s\n%s", code, out, stderr)
	}
	exps, _ := filepath.Glob(filepath.Join(base, "*-experiment-*"))
	if len(exps) != 1 {
		t.Fatalf("experiment directories: %v", exps)
	}
	if _, err := os.Stat(filepath.Join(exps[0], "report.html")); err != nil {
		t.Errorf("experiment report: %v", err)
	}
	results, _ := filepath.Glob(filepath.Join(exps[0], "*", result.FileName))
	var runs []*result.Run
	for _, r := range results {
		run, err := result.Read(filepath.Dir(r))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	if len(runs) == 0 {
		t.Fatal("no result file in the experiment directory")
	}
	return runs, out
}

func eventsNamed(run *result.Run, name string) []result.Event {
	var out []result.Event
	for _, e := range run.Events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestExperimentJoinRedis is the elasticity experiment end to end on a
// small real Redis Cluster: request sets until a baseline, two masters join
// under load, slots migrate, the database reports when they stopped moving,
// and the run ends once stable again (or at max_sets, recorded as such).
func TestExperimentJoinRedis(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	runs, out := experimentRun(t, `
name: join-test
study: test
description: test
cluster: {engine: redis, nodes: 2}
workload: {name: wiki, options: {articles: 1000, requests: 6000, threads: 2, repeat: 2}}
stability: {warmup_sets: 1, baseline_sets: 5, window: 3, max_sets: 70, after_stable: 6}
probe_every: 1s
timeline:
  - {when: baseline, do: add, count: 2}
`, 6*time.Minute)
	run := runs[0]
	for _, ev := range []string{"baseline", "join", "joined", "data-settled"} {
		if len(eventsNamed(run, ev)) != 1 {
			t.Errorf("want one %q event; events: %+v", ev, run.Events)
		}
	}
	if n := len(eventsNamed(run, "node-added")); n != 2 {
		t.Errorf("node-added events: %d, want 2", n)
	}
	stable, never := len(eventsNamed(run, "stable")), len(eventsNamed(run, "never-stable"))
	if stable+never != 1 {
		t.Fatalf("want exactly one of stable / never-stable; events %+v", run.Events)
	}
	nodes := map[string]bool{}
	var first, last string
	probed := map[string]bool{}
	owned := 0
	for _, p := range run.Points {
		switch p.Series {
		case "request-set":
			nodes[p.Labels["nodes"]] = true
			if first == "" {
				first = p.Labels["nodes"]
			}
			last = p.Labels["nodes"]
		case "node-cpu":
			probed[p.Labels["node"]] = true
		case "ownership":
			owned++
		}
	}
	if first != "2" || last != "4" {
		t.Errorf("request sets ran on %s then %s nodes, want 2 then 4 (%v)", first, last, nodes)
	}
	if len(probed) != 4 {
		t.Errorf("probed nodes %v, want all 4", probed)
	}
	if owned != 4 || run.Summary.Extra["ownership_mean_pct"] != 25 {
		t.Errorf("ownership: %d points, mean %v %%", owned, run.Summary.Extra["ownership_mean_pct"])
	}
	if stable == 1 && !strings.Contains(out, "elasticity score") {
		t.Errorf("a stable join must print its score:\n%s", out)
	}
	// The scores command recomputes the same figures from the file alone.
	code, sout, serr := execute(context.Background(), "scores", run.Dir)
	if code != 0 || !strings.Contains(sout, "Join 1 (+2 node(s), nodes 2 -> 4)") || !strings.Contains(sout, "data-transfer time") {
		t.Fatalf("scores: exit %d\n%s\n%s", code, sout, serr)
	}
	code, jout, _ := execute(context.Background(), "scores", "--json", run.Dir)
	if code != 0 || !strings.Contains(jout, `"DataTransfer"`) {
		t.Fatalf("scores --json: exit %d\n%s", code, jout)
	}
}

// TestExperimentCrashRedis is the crash experiment end to end: microblog
// load on a Redis Cluster with one replica per master, a master killed
// (its replica takes over) and restarted under load, every error counted,
// then the durability audit of every acknowledged post.
func TestExperimentCrashRedis(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	runs, _ := experimentRun(t, `
name: crash-test
study: test
description: test
cluster: {engine: redis, nodes: 3, options: {replicas: "1", node-timeout: "2000"}}
workload: {name: microblog, options: {users: 100, clients: 8, duration: 24s}}
probe_every: 2s
timeline:
  - {at: 6s, do: kill, nodes: [redis2]}
  - {at: 14s, do: restart, nodes: [redis2]}
audit: true
`, 5*time.Minute)
	run := runs[0]
	for _, ev := range []string{"kill", "restart", "restart-done", "audit"} {
		if len(eventsNamed(run, ev)) != 1 {
			t.Errorf("want one %q event; events: %+v", ev, run.Events)
		}
	}
	if k := eventsNamed(run, "kill"); len(k) == 1 && (k[0].At < 6 || k[0].At > 9) {
		t.Errorf("kill at %.1fs, want about 6s", k[0].At)
	}
	x := run.Summary.Extra
	acked := x["audit_acknowledged"]
	if acked == 0 || acked != x["audit_ok"]+x["audit_lost"]+x["audit_stale"] {
		t.Errorf("audit figures do not add up: %v", x)
	}
	if run.Summary.Ops["post"].Count != int64(acked) {
		t.Errorf("posts counted %d, audited as acknowledged %v", run.Summary.Ops["post"].Count, acked)
	}
	t.Logf("audit: %v; post errors %v", x, run.Summary.Ops["post"].Errors)
}

// TestExperimentSQLiteAudit runs a scenario on the embedded default (no
// server): a timeline mark, and the audit, which on a single SQLite file
// must find every acknowledged post intact.
func TestExperimentSQLiteAudit(t *testing.T) {
	runs, _ := experimentRun(t, `
name: sqlite-audit
study: test
description: test
workload: {name: microblog, options: {users: 60, clients: 6, duration: 3s}}
timeline:
  - {at: 1s, do: mark, note: half-time}
audit: true
`, 2*time.Minute)
	run := runs[0]
	if m := eventsNamed(run, "mark"); len(m) != 1 || m[0].Detail != "half-time" || m[0].At < 1 || m[0].At > 2.5 {
		t.Errorf("mark events: %+v", m)
	}
	x := run.Summary.Extra
	if x["audit_acknowledged"] == 0 || x["audit_ok"] != x["audit_acknowledged"] || x["audit_lost"] != 0 || x["audit_stale"] != 0 {
		t.Errorf("audit on SQLite: %v", x)
	}
	if float64(run.Summary.Ops["post"].Count) != x["audit_acknowledged"] {
		t.Errorf("posts %d, acknowledged in the audit %v", run.Summary.Ops["post"].Count, x["audit_acknowledged"])
	}
}

// A stop action ends a microblog run before its duration, as its end would
// (not an interrupt): what lets a fault experiment run until a restarted
// node has served again for a while (when: restarted, after: 10s).
func TestExperimentStopsMicroblog(t *testing.T) {
	start := time.Now()
	runs, _ := experimentRun(t, `
name: stop
study: test
description: test
workload: {name: microblog, options: {users: 40, clients: 2, duration: 10m}}
timeline:
  - {at: 2s, do: stop}
`, 2*time.Minute)
	run := runs[0]
	if len(eventsNamed(run, "stop-load")) != 1 || run.Summary == nil || run.Summary.Interrupted {
		t.Fatalf("events %+v, summary %+v", run.Events, run.Summary)
	}
	if d := run.Summary.DurationSeconds; d < 2 || d > 60 {
		t.Errorf("measured %.1f s; the stop came at 2 s of a 10-minute run", d)
	}
	t.Logf("experiment took %v", time.Since(start).Round(time.Millisecond))
}

// A scenario of steps that grow a CouchDB cluster: each step's run gets
// the grown cluster's DSN, so the adapter knows every node (its reset then
// empties them all, and the cluster settles before the next step). With
// the first node's DSN only, a reset emptied one node, the other kept the
// previous step's records, and the next step waited for data that would
// never stop moving.
func TestExperimentStepsGrowCouchDB(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("starts pouchdb-server (install with scripts/install-servers.sh)")
	}
	runs, _ := experimentRun(t, `
name: steps-couchdb
cluster: {engine: couchdb, nodes: 1}
workload: {name: trajectory, options: {mode: random, clients: 2, queries: 2, repeat: 1, batch: 100, reset: true}}
steps:
  - {nodes: 1, options: {scale: 0.001}}
  - {nodes: 2, options: {scale: 0.0005}}
  - {nodes: 2, options: {scale: 0.001}}
probe_every: -1s
`, 6*time.Minute)
	if len(runs) != 3 {
		t.Fatalf("%d runs, want one per step", len(runs))
	}
	servers := map[string]string{}
	for _, r := range runs {
		step := fmt.Sprint(r.Header.Options["step"])
		servers[step] = r.Header.Database.Config["servers"]
		if got, want := r.Summary.Extra["stored_records"], r.Header.Options["records"]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("step %s stored %v records, generated %v", step, got, want)
		}
	}
	if servers["1"] != "1" || servers["2"] != "2" || servers["3"] != "2" {
		t.Errorf("servers the adapter knew per step: %v; want 1, 2, 2", servers)
	}
}

// TestExperimentBudgetRedis: an experiment on a cluster with budgets
// (issue 44) records each node's budget in the result's header and, every
// probe interval, what each node used against it; and the experiment's
// end removes every control group it made.
func TestExperimentBudgetRedis(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	if err := budget.Check(budget.Budget{CPU: 0.3}); err != nil {
		t.Skipf("budgets cannot be held here: %v", err)
	}
	runs, _ := experimentRun(t, `
name: budget-test
study: test
description: test
cluster: {engine: redis, nodes: 2, budget: "cpu=0.3", budgets: {redis2: "cpu=0.4,memory=256MiB"}}
workload: {name: microblog, options: {users: 100, clients: 8, duration: 6s}}
probe_every: 1s
`, 3*time.Minute)
	run := runs[0]
	ci := run.Header.Cluster
	if ci == nil || ci.Budget != "cpu=0.3 each (redis2: cpu=0.4,memory=256MiB)" {
		t.Fatalf("header cluster %+v: want the budget", ci)
	}
	for _, n := range ci.Nodes {
		want := map[string]string{"redis1": "cpu=0.3", "redis2": "cpu=0.4,memory=256MiB"}[n.Name]
		if n.Budget != want {
			t.Errorf("node %s: budget %q, want %q", n.Name, n.Budget, want)
		}
	}
	points := map[string]map[string]int{} // series -> node -> points
	for _, p := range run.Points {
		if strings.HasPrefix(p.Series, "node-budget-") {
			if points[p.Series] == nil {
				points[p.Series] = map[string]int{}
			}
			points[p.Series][p.Labels["node"]]++
		}
	}
	for _, s := range []string{"node-budget-cpu", "node-budget-throttled"} {
		if points[s]["redis1"] == 0 || points[s]["redis2"] == 0 {
			t.Errorf("series %s: points per node %v, want some for redis1 and redis2", s, points[s])
		}
	}
	if points["node-budget-memory"]["redis2"] == 0 || points["node-budget-memory"]["redis1"] != 0 {
		t.Errorf("node-budget-memory: points per node %v, want redis2's (the one with a memory budget) only", points["node-budget-memory"])
	}
	// What held the nodes back over the run: one verdict, whichever it
	// is on this machine, with each node's figures behind it.
	var verdicts []string
	for _, e := range run.Events {
		if e.Name == "budget-bound" {
			verdicts = append(verdicts, e.Detail)
		}
	}
	if len(verdicts) != 1 || !regexp.MustCompile(`^(machine|budget|neither): .*; redis1: CPU \d+ % of 0.3, throttled \d+ %; redis2: CPU \d+ % of 0.4, throttled \d+ %, memory peak \d+ %$`).MatchString(verdicts[0]) {
		t.Errorf("budget-bound events %q: want one verdict naming both nodes' figures", verdicts)
	}
	for _, k := range []string{"budget_machine_idle_pct", "budget_machine_bound", "budget_nodes_bound", "budget_redis1_throttled_pct", "budget_redis2_memory_peak_pct"} {
		if _, ok := run.Summary.Extra[k]; !ok {
			t.Errorf("summary extra %s missing (have %v)", k, run.Summary.Extra)
		}
	}
	if left := cluster.GroupsLeft(&cluster.Cluster{Engine: ci.Engine, Dir: ci.Dir}); len(left) > 0 {
		t.Errorf("control groups left after the experiment: %v", left)
	}

	// A run shorter than one probe interval still has its verdict: the
	// groups are read at its start and its end.
	short, _ := experimentRun(t, `
name: budget-short
study: test
description: test
cluster: {engine: redis, nodes: 1, budget: "cpu=0.3"}
workload: {name: microblog, options: {users: 100, clients: 8, duration: 2s}}
probe_every: 30s
`, 3*time.Minute)
	var got []string
	for _, e := range short[0].Events {
		if e.Name == "budget-bound" {
			got = append(got, e.Detail)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "redis1: CPU ") {
		t.Errorf("a 2 s run probed every 30 s: budget-bound events %q, want one naming redis1's figures", got)
	}
}

// TestNoBudgetsWithoutRoot: where budgets cannot be held (here: the
// fieldbench binary run as nobody), a scenario with node budgets — every
// study's, since issue 44 — is refused before anything starts, naming
// --no-budgets, and runs without them with it, saying so; a study alike.
func TestNoBudgetsWithoutRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run fieldbench as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv")
	}
	bin := fieldbenchBin(t)
	cwd := worldSearchableDir(t, "fieldbench-nobudgets-")
	t.Cleanup(func() { os.RemoveAll(cwd) })
	asNobody := func(args ...string) (int, string, string) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		cmd.Dir = cwd // no scenarios/ here: the built-in copies
		cmd.Env = append(os.Environ(), "HOME="+cwd)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return code, stdout.String(), stderr.String()
	}
	for _, args := range [][]string{
		{"experiment", "scenarios/microblog/crash.yaml", "--dry-run"},
		{"study", "wiki", "--dry-run"},
	} {
		code, _, stderr := asNobody(args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "--no-budgets") || !strings.Contains(stderr, "as root") {
			t.Errorf("%v as nobody: exit %d, %q; want exit 2 naming --no-budgets", args, code, stderr)
		}
		code, stdout, stderr := asNobody(append(args, "--no-budgets")...)
		if code != cli.ExitOK || strings.Contains(stdout, "budget:") || !strings.Contains(stderr, "--no-budgets: ") {
			t.Errorf("%v --no-budgets as nobody: exit %d\n%s%s\nwant exit 0, no budget in the plan and a notice", args, code, stdout, stderr)
		}
	}
}
