package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// loadHostChild names what TestLoadHostChild does when RunOnLoadHost runs
// this test binary on a load host: exit with that code, or "kill" itself.
const loadHostChild = "FIELDBENCH_TEST_LOAD_HOST_CHILD"

// loadHostChildOut, when set, is where the child writes its
// /proc/self/cgroup: the groups it ran in.
const loadHostChildOut = "FIELDBENCH_TEST_LOAD_HOST_OUT"

// TestLoadHostChild is the child of TestRunOnLoadHost, and nothing
// without its variable.
func TestLoadHostChild(t *testing.T) {
	what := os.Getenv(loadHostChild)
	if what == "" {
		return
	}
	if _, on := probe.CurrentLoadHost(); !on {
		os.Exit(99) // not told it is on a load host
	}
	if out := os.Getenv(loadHostChildOut); out != "" {
		b, _ := os.ReadFile("/proc/self/cgroup")
		// Then what it reads of the group its parent handed it: its
		// own use so far (its start: some CPU, some memory).
		if g, ok := budget.LoadGroupFromEnv(); ok {
			u, err := g.Usage()
			b = append(b, fmt.Sprintf("usage %v %v %v\n", u.CPUSeconds > 0, u.Memory > 0, err)...)
		}
		_ = os.WriteFile(out, b, 0o644)
	}
	if what == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
	code, _ := strconv.Atoi(what)
	os.Exit(code)
}

// needHosts skips a test where network namespaces cannot be made (not
// root, no ip): a load host is one.
func needHosts(t *testing.T) {
	t.Helper()
	if err := vnet.Check(); err != nil {
		t.Skipf("a load host needs network namespaces: %v", err)
	}
}

// loadHostNet makes a virtual network for a cluster of a temporary
// directory, removed when the test ends, and returns a context bounding
// the test (2 minutes), the network and the cluster.
func loadHostNet(t *testing.T) (context.Context, vnet.Net, *Cluster) {
	t.Helper()
	dir := t.TempDir()
	n := vnet.ForDir(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := n.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Destroy(context.Background()) })
	return ctx, n, &Cluster{Engine: "redis", Dir: dir}
}

// RunOnLoadHost runs the program on load host loadK of the cluster's
// network, told so by probe.LoadHostEnv, returns its exit code (-1 when a
// signal ended it) and removes the host afterwards; a load host that
// exists already is refused.
func TestRunOnLoadHost(t *testing.T) {
	needHosts(t)
	ctx, n, c := loadHostNet(t)
	dir := c.Dir
	args := []string{"-test.run=^TestLoadHostChild$"}
	for _, tc := range []struct {
		child string
		want  int
	}{{"0", 0}, {"3", 3}, {"kill", -1}} {
		t.Setenv(loadHostChild, tc.child)
		var stderr strings.Builder
		exit, err := RunOnLoadHost(ctx, c, 2, args, io.Discard, &stderr)
		if err != nil || exit != tc.want {
			t.Errorf("child %s: exit %d, %v; want %d", tc.child, exit, err, tc.want)
		}
		if !strings.Contains(stderr.String(), "on load host load2 (198.18.1.2") {
			t.Errorf("child %s: said %q", tc.child, stderr.String())
		}
		if vnet.Exists(n.HostNS("load2")) {
			t.Fatalf("child %s: load host load2 left after the child ended", tc.child)
		}
	}
	if _, err := n.AddHost(ctx, "load3", vnet.LoadAddr(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := RunOnLoadHost(ctx, c, 3, args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "load host load3 of "+dir+" exists already") {
		t.Errorf("a load host in use: %v, want it refused", err)
	}
}

// TestRunOnLoadHostInItsBudget: with --load-budget among the child's
// arguments, the child runs on its load host inside the load's control
// group (its /proc/self/cgroup names the group), the group's totals are
// printed and the group is gone once the child ended, whatever its exit;
// the child reads the group's counters through its parent's root
// (budget.LoadGroupEnv), for the load's budget series;
// a budget that is malformed or does not fit is bad input, refused before
// the host exists. Needs root, network namespaces and cgroups.
func TestRunOnLoadHostInItsBudget(t *testing.T) {
	needHosts(t)
	if err := budget.Check(budget.Budget{CPU: 0.3}); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	ctx, n, c := loadHostNet(t)
	group := budget.LoadGroup(os.Getpid())
	out := filepath.Join(t.TempDir(), "cgroup")
	t.Setenv(loadHostChildOut, out)
	for _, child := range []string{"0", "3"} {
		t.Setenv(loadHostChild, child)
		_ = os.Remove(out)
		var stderr strings.Builder
		// After "--" the test binary takes no flag: --load-budget is for
		// RunOnLoadHost alone.
		args := []string{"-test.run=^TestLoadHostChild$", "--", "--load-budget=cpu=0.3,memory=256MiB"}
		exit, err := RunOnLoadHost(ctx, c, 4, args, io.Discard, &stderr)
		if err != nil || strconv.Itoa(exit) != child {
			t.Fatalf("child %s: exit %d, %v (%s)", child, exit, err, stderr.String())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("child %s wrote no /proc/self/cgroup: %v", child, err)
		}
		if !strings.Contains(string(got), "usage true true <nil>\n") {
			t.Errorf("child %s could not read the load's group through its parent:\n%s", child, got)
		}
		for _, l := range strings.Split(string(got), "\n") {
			if (strings.Contains(l, ":cpu,") || strings.Contains(l, ":cpu:") || strings.Contains(l, ":memory:")) && !strings.Contains(l, "/"+group) {
				t.Errorf("child %s ran outside %s: %s", child, group, l)
			}
		}
		if !strings.Contains(stderr.String(), "load budget cpu=0.3,memory=256MiB on load4:") {
			t.Errorf("child %s: said %q, want the load group's totals", child, stderr.String())
		}
		for _, d := range budget.Here(group).Dirs {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("child %s: %s left after the child ended", child, d)
			}
		}
	}
	for _, bad := range []string{"disk=5MiB/s", "cpu=64", "cpu=x"} {
		_, err := RunOnLoadHost(ctx, c, 4, []string{"-test.run=^TestLoadHostChild$", "--", "--load-budget=" + bad}, io.Discard, io.Discard)
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("--load-budget=%s: %v, want bad input", bad, err)
		}
		if vnet.Exists(n.HostNS("load4")) {
			t.Errorf("--load-budget=%s: the load host was made before the refusal", bad)
		}
	}
}
