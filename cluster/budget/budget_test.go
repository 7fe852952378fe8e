package budget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Budget
		bad  string // a word the refusal says; "" = accepted
	}{
		{in: "cpu=0.3,memory=1GiB,disk=40MiB/s", want: Budget{CPU: 0.3, Memory: 1 << 30, Disk: 40 << 20}},
		{in: "cpu=2", want: Budget{CPU: 2}},
		{in: " memory = 512MiB , cpu=0.25 ", want: Budget{CPU: 0.25, Memory: 512 << 20}},
		{in: "memory=1GB", want: Budget{Memory: 1e9}},
		{in: "disk=10MiB", want: Budget{Disk: 10 << 20}},
		{in: "", bad: "empty"},
		{in: "cpu", bad: "key=value"},
		{in: "cpu=", bad: "key=value"},
		{in: "cpu=0", bad: "above 0"},
		{in: "cpu=-1", bad: "above 0"},
		{in: "cpu=NaN", bad: "above 0"},
		{in: "cpu=0.001", bad: "0.01"},
		{in: "cpu=1,cpu=2", bad: "twice"},
		{in: "memory=lots", bad: "not a size"},
		{in: "memory=1MiB", bad: "16MiB"},
		{in: "disk=1KiB/s", bad: "1MiB/s"},
		{in: "net=10mbit", want: Budget{Net: 10e6}},
		{in: "cpu=0.5,net=1mbps", want: Budget{CPU: 0.5, Net: 8e6}},
		{in: "net=fast", bad: "bits a second"},
		{in: "net=1bit", bad: "bits a second"},
		{in: "bogus=1", bad: "unknown key"},
	} {
		got, err := Parse(c.in)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.bad == "" && got != c.want:
			t.Errorf("Parse(%q) = %+v, want %+v", c.in, got, c.want)
		case c.bad != "" && (err == nil || !errors.Is(err, ErrBadBudget) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("Parse(%q) = %+v, %v; want a refusal saying %q", c.in, got, err, c.bad)
		}
	}
}

// TestStringParses: what String writes (cluster status, results) Parse
// reads back as the same budget.
func TestStringParses(t *testing.T) {
	t.Parallel()
	for _, b := range []Budget{{CPU: 0.3}, {CPU: 1.5, Memory: 768 << 20}, {Memory: 1 << 30, Disk: 40 << 20}, {CPU: 0.25, Memory: 2 << 30, Disk: 5 << 20}, {CPU: 0.3, Net: 100e6}, {Net: 8e6}, {Net: 12345}} {
		got, err := Parse(b.String())
		if err != nil || got != b {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", b.String(), got, err, b)
		}
	}
	if s := (Budget{}).String(); s != "" {
		t.Errorf("the empty budget says %q", s)
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	p := Plan{Node: Budget{CPU: 0.2, Memory: 1 << 30}, Nodes: map[string]Budget{"redis2": {CPU: 0.5}}}
	if got, want := p.For("redis1"), (Budget{CPU: 0.2, Memory: 1 << 30}); got != want {
		t.Errorf("For(redis1) = %+v, want %+v", got, want)
	}
	if got, want := p.For("redis2"), (Budget{CPU: 0.5, Memory: 1 << 30}); got != want {
		t.Errorf("For(redis2) = %+v, want %+v (the override's cpu, the cluster's memory)", got, want)
	}
	if got, want := p.String(), "cpu=0.2,memory=1.0GiB each (redis2: cpu=0.5)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if p.Empty() || !(Plan{}).Empty() || !(Plan{Nodes: map[string]Budget{"a": {}}}).Empty() {
		t.Error("Empty is wrong")
	}
}

func TestJoined(t *testing.T) {
	t.Parallel()
	argv := []string{"redis-server", "/x/redis.conf"}
	g := Group{Version: 1, Dirs: []string{"/sys/fs/cgroup/cpu/a b", "/sys/fs/cgroup/memory/m"}}
	if got := Joined(g.Join(argv)); !slices.Equal(got, argv) {
		t.Errorf("Joined(Join(argv)) = %q, want %q", got, argv)
	}
	if got := (Group{}).Join(argv); !slices.Equal(got, argv) {
		t.Errorf("an empty group's Join = %q, want argv as is", got)
	}
	if got := Joined(argv); !slices.Equal(got, argv) {
		t.Errorf("Joined of an argv without Join = %q", got)
	}
}

// TestCheckRefuses: a budget this machine cannot hold is refused with the
// reason, never ignored.
func TestCheckRefuses(t *testing.T) {
	old := mode
	defer func() { mode = old }()
	mode = func() cgroups.CGMode { return cgroups.Unavailable }
	err := Check(Budget{CPU: 1})
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "root") {
			t.Fatalf("Check as a user = %v, want a refusal saying root", err)
		}
		return
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no control groups") {
		t.Errorf("Check without control groups = %v, want ErrUnavailable saying so", err)
	}
	if err := Check(Budget{}); err != nil {
		t.Errorf("an empty budget needs nothing, got %v", err)
	}
}

// TestGroupHoldsItsProcesses makes a real control group of 0.05 CPU and
// 64 MiB, runs a busy shell in it through Join, and reads back from the
// kernel's files: the quota, the limit, the process in the group from its
// start (its child too), the periods it was held back; then Remove leaves
// nothing. Needs root and cgroup controllers. No verdict depends on the
// machine's speed: the loop runs until the kernel has held it back once
// (at 0.05 CPU, 5 ms of each 100 ms period, far below any share a busy
// process gets on a loaded machine), for at most 20 s.
func TestGroupHoldsItsProcesses(t *testing.T) {
	b := Budget{CPU: 0.05, Memory: 64 << 20}
	if err := Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	name := fmt.Sprintf("%stest-%d/node1", Prefix, os.Getpid())
	g, err := Create(name, b, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Remove() })
	if len(g.Dirs) == 0 {
		t.Fatal("no directories")
	}
	for _, d := range g.Dirs {
		if filepath.Base(d) != "node1" {
			t.Errorf("dir %s is not the node's", d)
		}
	}
	// The hierarchy detected is the one mounted: v2 where /sys/fs/cgroup
	// is the unified hierarchy itself (scripts/cgroupv2-vm.sh), else v1.
	wantVersion := 1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		wantVersion = 2
	}
	if g.Version != wantVersion {
		t.Errorf("group of cgroup v%d, want v%d (%v)", g.Version, wantVersion, g.Dirs)
	}
	quota, mem := g.Limits()
	if quota != "5000" {
		t.Errorf("cpu quota %q, want 5000 (µs of a 100000 µs period)", quota)
	}
	if mem != strconv.Itoa(64<<20) {
		t.Errorf("memory limit %q, want %d", mem, 64<<20)
	}

	// The shell forks its busy child at once: both must be in the group.
	argv := g.Join([]string{"/bin/sh", "-c", `sh -c 'while :; do :; done' & wait`})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }
	defer stop()
	var procs []int
	for deadline := time.Now().Add(10 * time.Second); len(procs) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		procs, _ = g.Procs()
	}
	if !slices.Contains(procs, cmd.Process.Pid) || len(procs) < 2 {
		t.Errorf("group holds %v; want the started pid %d and its child", procs, cmd.Process.Pid)
	}
	var u Usage
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if u, err = g.Usage(); err != nil {
			t.Fatal(err)
		}
		if u.Throttled > 0 {
			break
		}
	}
	stop()
	if u.Throttled < 1 || u.CPUSeconds <= 0 || u.Periods < u.Throttled {
		t.Errorf("Usage = %+v: a busy loop at 0.05 CPU was never held back", u)
	}
	// Usage reads the kernel's own counter.
	for _, d := range g.Dirs {
		if v, err := os.ReadFile(filepath.Join(d, "cpu.stat")); err == nil {
			for _, line := range strings.Split(string(v), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "nr_throttled" {
					if n, _ := strconv.ParseUint(f[1], 10, 64); n < u.Throttled {
						t.Errorf("cpu.stat's nr_throttled %d is below Usage's %d", n, u.Throttled)
					}
				}
			}
		}
	}

	// The killed child is reaped by init, a moment later: the group is
	// empty once it is.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left, _ := g.ProcsAll(); len(left) == 0 {
			break
		}
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left after Remove", d)
		}
		if _, err := os.Stat(filepath.Dir(d)); err == nil {
			t.Errorf("%s (fieldbench's parent) left after Remove", filepath.Dir(d))
		}
	}
}

// TestJoinRefusesOutsideItsGroup: when the group cannot be joined (gone),
// the program does not run at all.
func TestJoinRefusesOutsideItsGroup(t *testing.T) {
	t.Parallel()
	g := Group{Version: 1, Dirs: []string{filepath.Join(t.TempDir(), "gone")}}
	marker := filepath.Join(t.TempDir(), "ran")
	argv := g.Join([]string{"/bin/sh", "-c", "touch " + marker})
	err := exec.Command(argv[0], argv[1:]...).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 {
		t.Errorf("join of a missing group = %v, want exit status 125", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran outside its group")
	}
}

func TestParsePlan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []string
		want string // Plan.String, or the refusal's word after "!"
	}{
		{nil, "none"},
		{[]string{"cpu=0.2"}, "cpu=0.2 each"},
		{[]string{"cpu=0.2,memory=1GiB", "redis2:cpu=0.5"}, "cpu=0.2,memory=1.0GiB each (redis2: cpu=0.5)"},
		{[]string{"redis2:memory=1GiB"}, "none (redis2: memory=1.0GiB)"},
		{[]string{"cpu=0.2", "cpu=0.3"}, "!two budgets for every node"},
		{[]string{"a:cpu=0.2", "a:cpu=0.3"}, "!two budgets for node a"},
		{[]string{"a:"}, "!empty"},
		{[]string{"cpu=x"}, "!cpu=x"},
	} {
		p, err := ParsePlan(c.in)
		if bad, ok := strings.CutPrefix(c.want, "!"); ok {
			if err == nil || !strings.Contains(err.Error(), bad) {
				t.Errorf("ParsePlan(%q) = %v, %v; want a refusal saying %q", c.in, p, err, bad)
			}
			continue
		}
		if err != nil || p.String() != c.want {
			t.Errorf("ParsePlan(%q) = %q, %v; want %q", c.in, p.String(), err, c.want)
		}
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	m := Machine{CPUs: 2, Memory: 8 << 30}
	each := func(n int, b Budget) map[string]Budget {
		out := map[string]Budget{}
		for i := range n {
			out[fmt.Sprint("n", i)] = b
		}
		return out
	}
	for _, c := range []struct {
		name  string
		nodes map[string]Budget
		bad   string // "" fits
	}{
		{"four quarter-size nodes", each(4, Budget{CPU: 0.25}), ""},
		{"the whole machine less the reserve", each(7, Budget{CPU: 0.25}), ""},
		{"four half-size nodes", each(4, Budget{CPU: 0.5}), "4 node(s) ask 2 CPUs, and 0.25 are kept for the system and the load: 2.25 > this machine's 2 CPUs"},
		{"memory", each(4, Budget{Memory: 2 << 30}), "4 node(s) ask 8.0GiB of memory"},
		{"no CPU budget is not summed", each(8, Budget{Memory: 512 << 20}), ""},
		{"none", nil, ""},
	} {
		err := Fit(c.nodes, m)
		if c.bad == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || !errors.Is(err, ErrBadBudget)) {
			t.Errorf("%s: Fit = %v; want a refusal saying %q", c.name, err, c.bad)
		}
	}
}

// TestUse: two readings of a node's control group become its use of
// its budget over the interval; a resource the budget does not set has no
// figure.
func TestUse(t *testing.T) {
	t.Parallel()
	prev := Usage{CPUSeconds: 10, Periods: 100, Throttled: 20, Memory: 64 << 20, DiskBytes: 10 << 20}
	cur := Usage{CPUSeconds: 10.5, Periods: 120, Throttled: 35, Memory: 128 << 20, DiskBytes: 30 << 20}
	nan := math.NaN()
	for _, c := range []struct {
		name string
		b    Budget
		dt   float64
		want Share // NaN: no figure
	}{
		{"cpu and memory", Budget{CPU: 0.25, Memory: 256 << 20}, 2, Share{100, 75, 50, nan}},
		{"cpu alone", Budget{CPU: 0.5}, 2, Share{50, 75, nan, nan}},
		{"memory alone", Budget{Memory: 512 << 20}, 2, Share{nan, nan, 25, nan}},
		{"disk alone", Budget{Disk: 40 << 20}, 2, Share{nan, nan, nan, 25}},
		{"no time passed", Budget{CPU: 0.5, Disk: 40 << 20}, 0, Share{nan, 75, nan, nan}},
	} {
		got := Use(c.b, prev, cur, c.dt)
		for _, f := range []struct {
			what      string
			got, want float64
		}{{"cpu", got.CPU, c.want.CPU}, {"throttled", got.Throttled, c.want.Throttled}, {"memory", got.Memory, c.want.Memory}, {"disk", got.Disk, c.want.Disk}} {
			if math.IsNaN(f.want) != math.IsNaN(f.got) || (!math.IsNaN(f.want) && math.Abs(f.got-f.want) > 1e-9) {
				t.Errorf("%s: %s = %v, want %v", c.name, f.what, f.got, f.want)
			}
		}
	}
}

// diskGroup makes a group of budget b for a disk test in a directory of
// its own, or skips the test where no disk budget can be held (no root, no
// controller, no block device under the directory).
func diskGroup(t *testing.T, b Budget, tag string) (Group, string) {
	t.Helper()
	if err := Check(b); err != nil {
		t.Skipf("no disk budgets here: %v", err)
	}
	dir := t.TempDir()
	g, err := Create(fmt.Sprintf("%stest-%s-%d/node1", Prefix, tag, os.Getpid()), b, dir)
	if err != nil {
		t.Skipf("no disk budget on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = g.Remove() })
	return g, dir
}

// TestDiskBytesCounted: a group with a disk budget counts what its
// process writes directly (O_DIRECT, dd), as the throttle that holds it
// does: 4 MiB written at a 20 MiB/s budget read back as at least 4 MiB of
// the group's DiskBytes, in about a fifth of a second. Needs root, cgroups
// and a block device under the test's directory.
func TestDiskBytesCounted(t *testing.T) {
	g, dir := diskGroup(t, Budget{Disk: 20 << 20}, "disk")
	argv := g.Join([]string{"dd", "if=/dev/zero", "of=" + filepath.Join(dir, "f"), "bs=1M", "count=4", "oflag=direct"})
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Skipf("no direct writes under %s: %v: %s", dir, err, out)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.DiskBytes < 4<<20 {
		t.Errorf("the group counted %d bytes of disk I/O, want the 4 MiB its process wrote", u.DiskBytes)
	}
}

// TestDiskRateHolds: a process writing directly (O_DIRECT) in a group
// of 2 MiB/s takes at least 1.5 s for 6 MiB (3 s at the rate; the margin
// is the throttle's first slice). A slower machine only makes it slower,
// so the bound cannot fail for the machine's speed.
func TestDiskRateHolds(t *testing.T) {
	g, dir := diskGroup(t, Budget{Disk: 2 << 20}, "rate")
	argv := g.Join([]string{"dd", "if=/dev/zero", "of=" + filepath.Join(dir, "f"), "bs=1M", "count=6", "oflag=direct"})
	start := time.Now()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Skipf("no direct writes under %s: %v: %s", dir, err, out)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("6 MiB written in %s under a 2 MiB/s budget: the rate did not hold", took)
	}
}

// TestWritebackHeldOnV2: on cgroup v2 the kernel's later writeback of a
// group's buffered writes is the group's I/O too (io.max with the memory
// controller beside it, which Create enables for a disk rate alone), so a
// sync after a process wrote 6 MiB without O_DIRECT in a group of
// disk=2MiB/s takes at least 1.5 s. v1 does not hold
// it (docs/scale-model.md, "Disk"): skipped there; scripts/cgroupv2-vm.sh
// runs it on v2.
func TestWritebackHeldOnV2(t *testing.T) {
	if mode() != cgroups.Unified {
		t.Skip("cgroup v1 does not hold a group's writeback (docs/scale-model.md, \"Disk\"); TestCgroupV2InVM runs this on v2")
	}
	// disk= alone: Create enables the memory controller beside io.
	g, dir := diskGroup(t, Budget{Disk: 2 << 20}, "wb")
	argv := g.Join([]string{"dd", "if=/dev/zero", "of=" + filepath.Join(dir, "f"), "bs=1M", "count=6"})
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("buffered write: %v: %s", err, out)
	}
	start := time.Now()
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		t.Fatalf("sync: %v: %s", err, out)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("the writeback of 6 MiB written in a 2 MiB/s group took %s: not held", took)
	}
}

// TestMemoryLimitKills: a process that needs more than its group's memory
// limit is killed by the kernel (no swap: the limit covers swap too where
// swap is accounted), and Usage counts the kill.
func TestMemoryLimitKills(t *testing.T) {
	b := Budget{Memory: 32 << 20}
	if err := Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	g, err := Create(fmt.Sprintf("%stest-oom-%d/node1", Prefix, os.Getpid()), b, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Remove() })
	// dd's one 128 MiB block is allocated and filled at once.
	argv := g.Join([]string{"dd", "if=/dev/zero", "of=/dev/null", "bs=128M", "count=1"})
	err = exec.Command(argv[0], argv[1:]...).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("dd of a 128 MiB block in a 32 MiB group: %v, want killed (SIGKILL)", err)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills < 1 {
		t.Errorf("Usage = %+v: the kill was not counted", u)
	}
}

// TestPlanCaveat: a disk rate on cgroup v1 says before the start what it
// does not hold (buffered writeback); without a disk rate, or on v2,
// nothing.
func TestPlanCaveat(t *testing.T) {
	old := mode
	defer func() { mode = old }()
	for _, tc := range []struct {
		name string
		m    cgroups.CGMode
		p    Plan
		want string
	}{
		{"v1 disk", cgroups.Legacy, Plan{Node: Budget{Disk: 40 << 20}}, "not the kernel's later writeback"},
		{"v1 one node's disk", cgroups.Hybrid, Plan{Node: Budget{CPU: 0.5}, Nodes: map[string]Budget{"n2": {Disk: 5 << 20}}}, "not the kernel's later writeback"},
		{"v1 no disk", cgroups.Legacy, Plan{Node: Budget{CPU: 0.5, Memory: 1 << 30}}, ""},
		{"v2 disk", cgroups.Unified, Plan{Node: Budget{Disk: 40 << 20}}, ""},
	} {
		mode = func() cgroups.CGMode { return tc.m }
		got := tc.p.Caveat()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
