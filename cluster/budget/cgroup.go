package budget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped when this machine cannot hold a budget: no
// control groups, a controller missing, no right to make groups.
var ErrUnavailable = errors.New("budgets are not available here")

// cpuPeriod is the CFS period of every quota, in µs: the kernel's default.
const cpuPeriod = 100000

// Prefix starts the name of every control group fieldbench makes, so that
// they are fieldbench's by name and none is left unnoticed.
const Prefix = "fieldbench-"

// Group is one node's control group: its directory under each controller
// (cgroup v1: cpu, cpuacct, memory, blkio each a hierarchy of its own) or
// its one directory (v2). Saved with the node in cluster.json, so a later
// fieldbench process reads and removes it.
type Group struct {
	Version int      `json:"version"`
	Dirs    []string `json:"dirs"`
	// Root, when set, is where the Dirs are seen from a process of another
	// mount namespace: /proc/PID/root of a process of the namespace that
	// made the group. A load host's child (ip netns exec mounts it a /sys
	// without control groups) reads its load's group so (Usage; Seen).
	Root string `json:"root,omitempty"`
}

// Seen is g as a process of another mount namespace reads it, through
// process pid's root (/proc/PID/root): pid is a process of the namespace
// that made g, such as the fieldbench that started a load host.
func (g Group) Seen(pid int) Group {
	g.Root = "/proc/" + strconv.Itoa(pid) + "/root"
	return g
}

// mode is the machine's cgroup mode; a variable so that a test can say
// what a machine without them does.
var mode = cgroups.Mode

// Check reports whether b can be held here, and if not why: every key
// needs its controller (cpu, memory, blkio or io), and making groups needs
// root.
func Check(b Budget) error {
	if b.Empty() {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: control groups are made as root (run fieldbench as root)", ErrUnavailable)
	}
	need := b.controllers()
	switch mode() {
	case cgroups.Unified:
		have, err := v2Controllers()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		for _, c := range need {
			v2 := map[string]string{"cpuacct": "cpu", "blkio": "io"}[c]
			if v2 == "" {
				v2 = c
			}
			if !have[v2] {
				return fmt.Errorf("%w: cgroup v2 has no %s controller enabled here (cgroup.subtree_control)", ErrUnavailable, v2)
			}
		}
	case cgroups.Legacy, cgroups.Hybrid:
		for _, c := range need {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
				return fmt.Errorf("%w: the cgroup v1 %s controller is not mounted here (/sys/fs/cgroup/%s)", ErrUnavailable, c, c)
			}
		}
	default:
		return fmt.Errorf("%w: no control groups mounted under /sys/fs/cgroup", ErrUnavailable)
	}
	return nil
}

// controllers are the v1 controllers b needs: cpuacct with cpu, to read
// what the node used against its quota.
func (b Budget) controllers() []string {
	var out []string
	if b.CPU > 0 {
		out = append(out, "cpu", "cpuacct")
	}
	if b.Memory > 0 {
		out = append(out, "memory")
	}
	if b.Disk > 0 {
		out = append(out, "blkio")
	}
	return out
}

func v2Controllers() (map[string]bool, error) {
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(b)) {
		have[c] = true
	}
	return have, nil
}

// Create makes the group name (a path of parts each starting with Prefix
// where fieldbench names it, e.g. fieldbench-redis-1a2b/redis1) under
// fieldbench's own group, holding whatever joins it to b. dataDir is where
// the node keeps its data: disk= throttles the device under it.
func Create(name string, b Budget, dataDir string) (Group, error) {
	if err := Check(b); err != nil {
		return Group{}, err
	}
	var dev *specs.LinuxThrottleDevice
	if b.Disk > 0 {
		major, minor, err := deviceOf(dataDir)
		if err != nil {
			return Group{}, err
		}
		dev = &specs.LinuxThrottleDevice{Rate: b.Disk}
		dev.Major, dev.Minor = major, minor
	}
	if mode() == cgroups.Unified {
		return createV2(name, b, dev)
	}
	return createV1(name, b, dev)
}

func createV1(name string, b Budget, dev *specs.LinuxThrottleDevice) (Group, error) {
	res := &specs.LinuxResources{}
	if b.CPU > 0 {
		quota, period := int64(b.CPU*cpuPeriod), uint64(cpuPeriod)
		res.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if b.Memory > 0 {
		limit := int64(b.Memory)
		// The same limit for memory and swap: a node over its budget is
		// reclaimed and killed, not swapped out (where swap accounting
		// exists; the library skips it where it does not).
		res.Memory = &specs.LinuxMemory{Limit: &limit}
	}
	if dev != nil {
		res.BlockIO = &specs.LinuxBlockIO{ThrottleReadBpsDevice: []specs.LinuxThrottleDevice{*dev}, ThrottleWriteBpsDevice: []specs.LinuxThrottleDevice{*dev}}
	}
	want := map[cgroup1.Name]bool{}
	for _, c := range b.controllers() {
		want[cgroup1.Name(c)] = true
	}
	path := cgroup1.NestedPath(name)
	cg, err := cgroup1.New(path, res, cgroup1.WithHierarchy(subsystems("", func(n cgroup1.Name) bool { return want[n] })))
	if err != nil {
		return Group{}, fmt.Errorf("budget %s: make control group %s: %w", b, name, err)
	}
	g := Group{Version: 1}
	for _, s := range cg.Subsystems() {
		p, ok := s.(interface{ Path(string) string })
		if !ok {
			continue
		}
		rel, err := path(s.Name())
		if err != nil {
			return g, err
		}
		g.Dirs = append(g.Dirs, p.Path(rel))
	}
	if len(g.Dirs) == 0 {
		return g, fmt.Errorf("%w: no controller of %s made a group", ErrUnavailable, b)
	}
	return g, nil
}

// subsystems is a cgroup v1 hierarchy of the mounted controllers keep
// accepts: the ones a group is made or read in. root "" finds the mounts
// in this process's mountinfo; a root names them under it instead (a load
// host, whose mount namespace has none: the CPU and memory controllers,
// all a load's group holds).
func subsystems(root string, keep func(cgroup1.Name) bool) cgroup1.Hierarchy {
	return func() ([]cgroup1.Subsystem, error) {
		var all []cgroup1.Subsystem
		if root == "" {
			var err error
			if all, err = cgroup1.Default(); err != nil {
				return nil, err
			}
		} else {
			mnt := root + "/sys/fs/cgroup"
			all = []cgroup1.Subsystem{cgroup1.NewCpu(mnt), cgroup1.NewCpuacct(mnt), cgroup1.NewMemory(mnt)}
		}
		var out []cgroup1.Subsystem
		for _, s := range all {
			if keep(s.Name()) {
				out = append(out, s)
			}
		}
		return out, nil
	}
}

func createV2(name string, b Budget, dev *specs.LinuxThrottleDevice) (Group, error) {
	res := &cgroup2.Resources{}
	if b.CPU > 0 {
		quota, period := int64(b.CPU*cpuPeriod), uint64(cpuPeriod)
		res.CPU = &cgroup2.CPU{Max: cgroup2.NewCPUMax(&quota, &period)}
	}
	if b.Memory > 0 {
		limit := int64(b.Memory)
		res.Memory = &cgroup2.Memory{Max: &limit}
	}
	if dev != nil {
		if res.Memory == nil {
			// The memory controller too, without a limit: the kernel's
			// cgroup-v2 documentation gives writeback to a group through
			// the memory group that owns the page, with both controllers
			// enabled. (In the VM's 6.1 kernel the writeback of a disk=
			// group was held without it as well: TestWritebackHeldOnV2,
			// run both ways on 2026-12-02.)
			res.Memory = &cgroup2.Memory{}
		}
		res.IO = &cgroup2.IO{Max: []cgroup2.Entry{
			{Type: cgroup2.ReadBPS, Major: dev.Major, Minor: dev.Minor, Rate: dev.Rate},
			{Type: cgroup2.WriteBPS, Major: dev.Major, Minor: dev.Minor, Rate: dev.Rate},
		}}
	}
	own, err := cgroup2.NestedGroupPath("")
	if err != nil {
		return Group{}, err
	}
	group := filepath.Join(own, name)
	if _, err := cgroup2.NewManager("/sys/fs/cgroup", group, res); err != nil {
		return Group{}, fmt.Errorf("budget %s: make control group %s: %w", b, group, err)
	}
	return Group{Version: 2, Dirs: []string{filepath.Join("/sys/fs/cgroup", group)}}, nil
}

// deviceOf is the major and minor number of the device that holds path
// (the nearest directory of it that exists).
func deviceOf(path string) (int64, int64, error) {
	for p := path; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			return int64(unix.Major(st.Dev)), int64(unix.Minor(st.Dev)), nil
		}
		if p == filepath.Dir(p) {
			return 0, 0, fmt.Errorf("budget: no device holds %s", path)
		}
	}
}

// Join is argv run inside g from its first instruction: a shell writes its
// own PID into every directory's cgroup.procs, then execs argv in place (the
// same PID, so the caller's PID is the server's), and every process argv
// forks is born in g. A write that fails ends it with status 125 before
// argv runs: no node runs outside its budget.
func (g Group) Join(argv []string) []string {
	if len(g.Dirs) == 0 {
		return argv
	}
	out := []string{"/bin/sh", "-c", `while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"`, Prefix + "join"}
	out = append(out, g.Dirs...)
	out = append(out, "--")
	return append(out, argv...)
}

// Joined is the program Join runs in the end: argv without Join's shell.
func Joined(argv []string) []string {
	if len(argv) < 4 || argv[0] != "/bin/sh" || argv[3] != Prefix+"join" {
		return argv
	}
	for i, a := range argv[4:] {
		if a == "--" {
			return argv[4+i+1:]
		}
	}
	return argv
}

// Exists reports whether every directory of g is there.
func (g Group) Exists() bool {
	for _, d := range g.Dirs {
		if _, err := os.Stat(d); err != nil {
			return false
		}
	}
	return len(g.Dirs) > 0
}

// ProcsAll are the PIDs in g and in the groups under it, in every
// directory of g (a process is in one group per controller).
func (g Group) ProcsAll() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, d := range g.Dirs {
		err := filepath.WalkDir(d, func(path string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			pids, _ := Group{Dirs: []string{path}}.Procs()
			for _, p := range pids {
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Limits are the CPU quota (µs of each period) and the memory limit
// (bytes) the kernel holds g to, as its files say them (v1's
// cpu.cfs_quota_us and memory.limit_in_bytes, or v2's cpu.max and
// memory.max); "" where g sets none.
func (g Group) Limits() (cpuQuota, memory string) {
	read := func(d, file string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(d, file))
		return strings.TrimSpace(string(b)), err == nil
	}
	for _, d := range g.Dirs {
		if v, ok := read(d, "cpu.cfs_quota_us"); ok {
			cpuQuota = v
		} else if v, ok := read(d, "cpu.max"); ok && v != "" {
			cpuQuota = strings.Fields(v)[0]
		}
		if v, ok := read(d, "memory.limit_in_bytes"); ok {
			memory = v
		} else if v, ok := read(d, "memory.max"); ok {
			memory = v
		}
	}
	return cpuQuota, memory
}

// Procs are the PIDs in g (its first directory's cgroup.procs).
func (g Group) Procs() ([]int, error) {
	if len(g.Dirs) == 0 {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(g.Dirs[0], "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Remove removes g's directories, then each parent that is empty and
// named with Prefix: what fieldbench made and nothing else. A group whose
// processes still run is not removed (the kernel refuses it): stop them
// first. A group already gone is no error.
func (g Group) Remove() error {
	var errs []error
	for _, d := range g.Dirs {
		if err := rmdir(d); err != nil {
			errs = append(errs, err)
			continue
		}
		for p := filepath.Dir(d); strings.HasPrefix(filepath.Base(p), Prefix); p = filepath.Dir(p) {
			if os.Remove(p) != nil {
				break // not empty: another node's group is in it
			}
		}
	}
	return errors.Join(errs...)
}

// rmdir removes a control group directory and the groups under it
// (deepest first); its files are the kernel's and go with it.
func rmdir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := rmdir(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove control group %s: %w", dir, err)
	}
	return nil
}

// Here is the group name as this process makes it (Create's directories,
// for every controller a budget may use that is mounted), whether or not
// it exists: for removing what a failed start of this process made before
// any node recorded its group.
func Here(name string) Group {
	if mode() == cgroups.Unified {
		own, err := cgroup2.NestedGroupPath("")
		if err != nil {
			return Group{}
		}
		return Group{Version: 2, Dirs: []string{filepath.Join("/sys/fs/cgroup", own, name)}}
	}
	g := Group{Version: 1}
	path := cgroup1.NestedPath(name)
	for _, c := range []string{"cpu", "cpuacct", "memory", "blkio"} {
		rel, err := path(cgroup1.Name(c))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
			g.Dirs = append(g.Dirs, filepath.Join("/sys/fs/cgroup", c, rel))
		}
	}
	return g
}

// Usage is what a group's processes used, as the kernel counts it, since
// the group was made.
type Usage struct {
	CPUSeconds float64 `json:"cpu_s"`
	// Periods and Throttled are CFS periods the group ran in and those in
	// which it used its whole quota and was held back; ThrottledSeconds
	// the time held back.
	Periods          uint64  `json:"periods"`
	Throttled        uint64  `json:"throttled"`
	ThrottledSeconds float64 `json:"throttled_s"`
	Memory           uint64  `json:"memory"`      // bytes now
	MemoryPeak       uint64  `json:"memory_peak"` // bytes at most
	OOMKills         uint64  `json:"oom_kills"`
	// DiskBytes is what the group read and wrote, as the block layer's
	// throttle counts it (v1 blkio.throttle.io_service_bytes, v2 io.stat):
	// what a disk budget holds. Read only where the group has its I/O
	// controller (a disk= budget).
	DiskBytes uint64 `json:"disk_bytes"`
}

// ThrottledShare is the percentage of u's CFS periods in which the group
// was held back (0 before its first period): the one figure that says a
// node or the load was bound by its CPU budget.
func (u Usage) ThrottledShare() float64 {
	if u.Periods == 0 {
		return 0
	}
	return 100 * float64(u.Throttled) / float64(u.Periods)
}

// Usage reads g's counters (containerd/cgroups' Stat).
func (g Group) Usage() (Usage, error) {
	if len(g.Dirs) == 0 {
		return Usage{}, errors.New("budget: no control group")
	}
	if g.Version == 2 {
		m, err := cgroup2.Load(strings.TrimPrefix(g.Dirs[0], "/sys/fs/cgroup"), cgroup2.WithMountpoint(g.Root+"/sys/fs/cgroup"))
		if err != nil {
			return Usage{}, err
		}
		st, err := m.Stat()
		if err != nil {
			return Usage{}, err
		}
		var u Usage
		if c := st.GetCPU(); c != nil {
			u.CPUSeconds, u.Periods, u.Throttled, u.ThrottledSeconds = float64(c.UsageUsec)/1e6, c.NrPeriods, c.NrThrottled, float64(c.ThrottledUsec)/1e6
		}
		if mem := st.GetMemory(); mem != nil {
			u.Memory, u.MemoryPeak = mem.Usage, mem.MaxUsage
		}
		if ev := st.GetMemoryEvents(); ev != nil {
			u.OOMKills = ev.OomKill
		}
		if io := st.GetIo(); io != nil {
			for _, e := range io.GetUsage() {
				u.DiskBytes += e.Rbytes + e.Wbytes
			}
		}
		return u, nil
	}
	// A directory per controller, each under its own mount point: the
	// path the library asks for is the one under that controller's mount.
	path := func(n cgroup1.Name) (string, error) {
		for _, d := range g.Dirs {
			if rel, ok := strings.CutPrefix(d, "/sys/fs/cgroup/"+string(n)+"/"); ok {
				return "/" + rel, nil
			}
		}
		return "", cgroup1.ErrControllerNotActive
	}
	hierarchy := subsystems(g.Root, func(n cgroup1.Name) bool {
		_, err := path(n)
		return err == nil
	})
	cg, err := cgroup1.Load(path, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return Usage{}, err
	}
	st, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	if c := st.GetCPU(); c != nil {
		if c.Usage != nil {
			u.CPUSeconds = float64(c.Usage.Total) / 1e9
		}
		if t := c.Throttling; t != nil {
			u.Periods, u.Throttled, u.ThrottledSeconds = t.Periods, t.ThrottledPeriods, float64(t.ThrottledTime)/1e9
		}
	}
	if mem := st.GetMemory(); mem != nil && mem.Usage != nil {
		u.Memory, u.MemoryPeak = mem.Usage.Usage, mem.Usage.Max
	}
	if oc := st.GetMemoryOomControl(); oc != nil {
		u.OOMKills = oc.OomKill
	}
	if bl := st.GetBlkio(); bl != nil {
		for _, e := range bl.GetIoServiceBytesRecursive() {
			if e.Op == "Read" || e.Op == "Write" {
				u.DiskBytes += e.Value
			}
		}
	}
	return u, nil
}

// Share is what a group used of its budget over an interval, each a
// percentage: CPU of the budget's CPUs, the interval's CFS periods in
// which it was held back, memory (at the interval's end) of its limit,
// disk bytes a second of its rate. NaN where the budget does not set the
// resource, or the interval had no time or no period.
type Share struct {
	CPU, Throttled, Memory, Disk float64
}

// Use turns two readings of a group, dt seconds apart, into the Share of
// budget b it used: what the budget series chart. The nodes' series
// (experiment) and the load's (job) are both this.
func Use(b Budget, prev, cur Usage, dt float64) Share {
	out := Share{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if b.CPU > 0 && dt > 0 && cur.CPUSeconds >= prev.CPUSeconds {
		out.CPU = 100 * (cur.CPUSeconds - prev.CPUSeconds) / dt / b.CPU
	}
	if b.CPU > 0 && cur.Periods > prev.Periods && cur.Throttled >= prev.Throttled {
		out.Throttled = Usage{Periods: cur.Periods - prev.Periods, Throttled: cur.Throttled - prev.Throttled}.ThrottledShare()
	}
	if b.Memory > 0 {
		out.Memory = 100 * float64(cur.Memory) / float64(b.Memory)
	}
	if b.Disk > 0 && dt > 0 && cur.DiskBytes >= prev.DiskBytes {
		out.Disk = 100 * float64(cur.DiskBytes-prev.DiskBytes) / dt / float64(b.Disk)
	}
	return out
}

// Caveat is what p's budgets hold only in part on this machine, for a
// note before the cluster starts ("" when nothing): on cgroup v1 a disk
// rate holds the I/O a node's processes issue themselves (direct writes,
// the flush of an fsync: commit logs and write-ahead logs) but not the
// kernel's later writeback of their buffered writes, done by its flusher
// threads outside the group (measured by scripts/diskbudget,
// docs/scale-model.md "Disk"). v2's io.max holds writeback too, with
// the memory controller beside it (TestWritebackHeldOnV2, run in a VM by
// scripts/cgroupv2-vm.sh: this machine mounts v1).
func (p Plan) Caveat() string {
	disk := p.Node.Disk > 0
	for _, b := range p.Nodes {
		disk = disk || b.Disk > 0
	}
	if !disk || mode() == cgroups.Unified {
		return ""
	}
	return "disk= on cgroup v1 holds what a node's processes write directly or sync (O_DIRECT, fsync: commit logs, WALs) and what they read, not the kernel's later writeback of their buffered writes (docs/scale-model.md, \"Disk\")"
}
