package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// TestLoadBudgetRun: run --load-budget on SQLite records the load's
// budget in the result's header, and leaves no control group; bad values
// and a plan whose node budgets, the load's and the reserve exceed this
// machine (run --cluster ... --cluster-budget ...) are refused with exit
// 2 and the sums, before the cluster starts. Not parallel: the run moves
// the test process into the load's group.
func TestLoadBudgetRun(t *testing.T) {
	if err := budget.Check(budget.Budget{CPU: 0.5}); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	dir := t.TempDir()
	cpus := float64(runtime.NumCPU())
	node := strconv.FormatFloat(cpus-0.5, 'f', -1, 64)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad --load-budget", []string{"run", "microblog", "--load-budget", "cpu=", "--results", dir}, "is not key=value"},
		{"--load-budget disk", []string{"run", "wiki", "--load-budget", "cpu=0.5,disk=5MiB/s", "--results", dir}, "no data directory"},
		{"--load-budget over the machine", []string{"run", "microblog", "--load-budget", "cpu=" + strconv.Itoa(runtime.NumCPU()), "--results", dir}, "are kept for the system: "},
		// Other budgets fieldbench holds here (another process's cluster)
		// are summed too: only the load's part and the sum are certain.
		{"nodes and load over the machine", []string{"run", "microblog", "--cluster", "redis:1", "--cluster-budget", "cpu=" + node, "--load-budget", "cpu=0.5", "--results", dir},
			"CPUs, the load 0.5, and 0.25 are kept for the system: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
			if strings.Contains(tc.name, "over the machine") {
				atLeastSum(t, stderr, cpus+0.25)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("refused runs left %v (a cluster started?)", left)
	}
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := execute(context.Background(), "run", "microblog", "--users", "50", "--clients", "2", "--duration", "1s", "--rate", "100",
		"--load-budget", "cpu=0.2,memory=256MiB", "--results", results)
	if code != 0 {
		t.Fatalf("run --load-budget: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "load budget: 100 operations a second need at least") {
		t.Errorf("no word of what the rate needs in %q", stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(results, "*-microblog-*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	run, err := result.Read(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Header.LoadBudget != "cpu=0.2,memory=256MiB" {
		t.Errorf("header load_budget %q", run.Header.LoadBudget)
	}
	for _, d := range budget.Here(budget.LoadGroup(os.Getpid())).Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left after the run", d)
		}
	}
}

// TestLoadBudgetBesideClusterUp: a run against a cluster that `cluster up
// --budget` started earlier counts that cluster's node budgets (the
// groups the kernel holds them in) beside its --load-budget, and is
// refused with the sums when they do not fit. Redis, one node. Not parallel: the run moves the test process.
func TestLoadBudgetBesideClusterUp(t *testing.T) {
	if err := budget.Check(budget.Budget{CPU: 0.5}); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	// A small node and a load that fits alone: the node's group, which
	// the tests of other packages running beside this one count too,
	// stays small.
	cpus := float64(runtime.NumCPU())
	node, load := "0.3", strconv.FormatFloat(cpus-0.3, 'f', -1, 64)
	cdir := filepath.Join(t.TempDir(), "redis")
	if code, _, stderr := execute(context.Background(), "cluster", "up", "redis", "--budget", "cpu="+node, "--dir", cdir); code != 0 {
		t.Fatalf("cluster up: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() {
		if code, _, stderr := execute(context.Background(), "cluster", "down", "--dir", cdir); code != 0 {
			t.Errorf("cluster down: exit %d: %s", code, stderr)
		}
	})
	results := t.TempDir()
	code, _, stderr := execute(context.Background(), "run", "microblog", "--db", "null://", "--load-budget", "cpu="+load, "--results", results, "--duration", "1s")
	want := "CPUs, the load " + load + ", and 0.25 are kept for the system"
	if code != cli.ExitUsage || !strings.Contains(stderr, want) {
		t.Fatalf("run beside the cluster: exit %d, %q; want exit 2 saying %q", code, stderr, want)
	}
	// The cluster's node counted (with whatever else fieldbench holds
	// here): the load alone, 0.25 CPU under the machine's, would fit.
	atLeastSum(t, stderr, cpus+0.25)
}

// atLeastSum checks that a refusal's CPU sum ("...: S > this machine's")
// is at least min.
func atLeastSum(t *testing.T, stderr string, min float64) {
	t.Helper()
	m := regexp.MustCompile(`: ([0-9.]+) > this machine's [0-9.]+ CPUs`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no CPU sum in %q", stderr)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v < min-1e-9 {
		t.Errorf("CPU sum %s, want at least %g (the nodes' and the load's)", m[1], min)
	}
}
