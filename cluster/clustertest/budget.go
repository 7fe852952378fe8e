package clustertest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
)

// CheckHeld checks, from the kernel's files, that every running node of c
// runs in its control group at its budget: the node's PID among the
// group's processes and the group's CPU quota and memory limit those of
// c.Budget. It returns the groups, for CheckRemoved once c is down.
func CheckHeld(t testing.TB, c *cluster.Cluster) []budget.Group {
	t.Helper()
	var groups []budget.Group
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		b := c.Budget.For(n.Name)
		if n.Cgroup == nil {
			t.Errorf("%s runs without a control group (budget %s)", n.Name, b)
			continue
		}
		groups = append(groups, *n.Cgroup)
		pids, err := n.Cgroup.ProcsAll()
		if err != nil || !slices.Contains(pids, n.PID) {
			t.Errorf("%s: pid %d is not in its group %v (%v, %v)", n.Name, n.PID, n.Cgroup.Dirs, pids, err)
		}
		quota, limit := n.Cgroup.Limits()
		if want := strconv.Itoa(int(b.CPU * 100000)); b.CPU > 0 && quota != want {
			t.Errorf("%s: cpu quota %q, want %s µs a 100 ms period (%s)", n.Name, quota, want, b)
		}
		if want := strconv.FormatUint(b.Memory, 10); b.Memory > 0 && limit != want {
			t.Errorf("%s: memory limit %q, want %s (%s)", n.Name, limit, want, b)
		}
	}
	return groups
}

// CheckRemoved checks that none of groups, nor their parents fieldbench
// named, is left.
func CheckRemoved(t testing.TB, groups []budget.Group) {
	t.Helper()
	for _, g := range groups {
		for _, d := range g.Dirs {
			for p := d; strings.HasPrefix(filepath.Base(p), budget.Prefix) || p == d; p = filepath.Dir(p) {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("control group %s left", p)
				}
			}
		}
	}
}

// SkipWithoutBudgets skips a test of budgets on a machine that cannot hold
// b (not root, a controller missing), saying why.
func SkipWithoutBudgets(t testing.TB, b budget.Budget) {
	t.Helper()
	if err := budget.Check(b); err != nil {
		t.Skipf("budgets cannot be held here: %v", err)
	}
}
