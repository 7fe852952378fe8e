package budget

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestParseLoad(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Budget
		bad  string
	}{
		{in: "cpu=0.5,memory=256MiB", want: Budget{CPU: 0.5, Memory: 256 << 20}},
		{in: "cpu=1", want: Budget{CPU: 1}},
		{in: "cpu=0.5,disk=10MiB/s", bad: "no data directory"},
		{in: "cpu=zero", bad: "above 0"},
		{in: "", bad: "empty"},
		{in: "net=1mbit", bad: "limit fault"},
		{in: "bogus=1", bad: "unknown key"},
	} {
		got, err := ParseLoad(c.in)
		switch {
		case c.bad == "" && (err != nil || got != c.want):
			t.Errorf("ParseLoad(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		case c.bad != "" && (err == nil || !errors.Is(err, ErrBadBudget) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("ParseLoad(%q) = %+v, %v; want a refusal saying %q", c.in, got, err, c.bad)
		}
	}
}

func TestFitLoad(t *testing.T) {
	t.Parallel()
	m := Machine{CPUs: 2, Memory: 8 << 30}
	nodes := map[string]Budget{"n1": {CPU: 0.5, Memory: 1 << 30}, "n2": {CPU: 0.5, Memory: 1 << 30}}
	for _, c := range []struct {
		name  string
		nodes map[string]Budget
		load  Budget
		bad   string
	}{
		{"nodes and load fit", nodes, Budget{CPU: 0.75}, ""},
		{"the load tips the CPUs over", nodes, Budget{CPU: 1}, "2 node(s) ask 1 CPUs, the load 1, and 0.25 are kept for the system: 2.25 > this machine's 2 CPUs"},
		{"the load tips the memory over", nodes, Budget{Memory: 6 << 30}, "2 node(s) ask 2.0GiB of memory, the load 6.0GiB, and 512MiB are kept for the system: 8.5GiB > this machine's 8.0GiB"},
		{"a load alone", nil, Budget{CPU: 2}, "the load asks 2 CPUs, and 0.25 are kept for the system: 2.25 > this machine's 2 CPUs"},
		{"no load is Fit", nodes, Budget{}, ""},
	} {
		err := FitLoad(c.nodes, c.load, m)
		if c.bad == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || !errors.Is(err, ErrBadBudget)) {
			t.Errorf("%s: FitLoad = %v; want a refusal saying %q", c.name, err, c.bad)
		}
	}
}

// ownGroups is /proc/self/cgroup's cpu and memory lines.
func ownGroups(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, ":cpu:") || strings.Contains(l, ":cpu,") || strings.Contains(l, ":memory:") || strings.HasPrefix(l, "0::") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHoldMovesThisProcess: Hold puts this very process into a group of
// its budget (the kernel's cgroup.procs and /proc/self/cgroup say so),
// HeldNow reads its budget back from the kernel, and Release puts the
// process back where it was, with a child it started while held, and
// leaves no group. Needs root and cgroups.
func TestHoldMovesThisProcess(t *testing.T) {
	b := Budget{CPU: 0.7, Memory: 300 << 20}
	if err := Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	before := ownGroups(t)
	name := fmt.Sprintf("%sload-test-%d", Prefix, os.Getpid())
	h, err := Hold(name, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release() })
	pids, err := h.Group.ProcsAll()
	if err != nil || !slices.Contains(pids, os.Getpid()) {
		t.Errorf("the group holds %v (%v), want this process %d", pids, err, os.Getpid())
	}
	if now := ownGroups(t); now == before || !strings.Contains(now, name) {
		t.Errorf("/proc/self/cgroup while held:\n%s\nwant it in %s (before:\n%s)", now, name, before)
	}
	// A process started while held is born in the group; Release takes
	// it back out with this one, or the group could not go.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if pids, _ := h.Group.ProcsAll(); !slices.Contains(pids, child.Process.Pid) {
		t.Errorf("the group holds %v, want the child %d born in it", pids, child.Process.Pid)
	}
	held, err := HeldNow()
	if err != nil {
		t.Fatal(err)
	}
	if got := held[name]; got != b {
		t.Errorf("HeldNow()[%s] = %+v, want %+v (all: %v)", name, got, b, held)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if now := ownGroups(t); now != before {
		t.Errorf("/proc/self/cgroup after Release:\n%s\nwant as before:\n%s", now, before)
	}
	if h.Group.Exists() || len(Here(name).Dirs) == 0 {
		t.Errorf("group %v left after Release", h.Group.Dirs)
	}
	for _, d := range Here(name).Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left after Release", d)
		}
	}
	if held, _ := HeldNow(); !held[name].Empty() {
		t.Errorf("HeldNow after Release still has %s: %v", name, held[name])
	}
}

// TestHeldNowSkipsAnEmptyLoad: a load's group that holds no process (what
// a SIGKILLed load leaves) is not counted; a node's empty group is (its
// node may be stopped, its budget kept for its restart).
func TestHeldNowSkipsAnEmptyLoad(t *testing.T) {
	b := Budget{CPU: 0.4}
	if err := Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	load := LoadGroup(-os.Getpid()) // no such process
	node := fmt.Sprintf("%stest-%d/node1", Prefix, os.Getpid())
	for _, name := range []string{load, node} {
		g, err := Create(name, b, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Remove() })
	}
	held, err := HeldNow()
	if err != nil {
		t.Fatal(err)
	}
	if !held[load].Empty() || held[node] != b {
		t.Errorf("HeldNow: load %v (want none), node %v (want %v)", held[load], held[node], b)
	}
}
