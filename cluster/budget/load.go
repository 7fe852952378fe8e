package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3"
)

// ParseLoad reads the load generator's budget (--load-budget): Parse's
// grammar, without disk= or net=. disk= throttles the device under a
// node's data directory; the load keeps no data of its own (it writes its
// result file and reads nothing), so a disk budget would limit nothing
// that is measured and is refused rather than ignored; net= is a node
// host's link rate, and a load host's link is a fault's to limit.
func ParseLoad(s string) (Budget, error) {
	b, err := Parse(s)
	if err != nil {
		return Budget{}, err
	}
	if b.Disk > 0 {
		return Budget{}, fmt.Errorf("%w: disk=%s: the load generator has no data directory whose device a disk budget could throttle (it writes only its result file); give cpu= and memory=", ErrBadBudget, size(b.Disk)+"/s")
	}
	if b.Net > 0 {
		return Budget{}, fmt.Errorf("%w: net=%s: the load generator's link is its load host's; limit it with a scenario's limit fault on the load host; give cpu= and memory=", ErrBadBudget, bitRate(b.Net))
	}
	return b, nil
}

// LoadGroup is the name of the control group of the load generator that
// process pid runs (or, on a load host, starts): named for fieldbench and
// the process, so that two loads never share one.
func LoadGroup(pid int) string { return fmt.Sprintf("%sload-%d", Prefix, pid) }

// Held is a control group this process moved itself into (Hold), and the
// groups it came from, one per controller, to go back to.
type Held struct {
	Group Group
	from  []string
}

// Hold makes group name (under this process's own groups, as Create does)
// held to b and moves this whole process, every thread of it, into it:
// whatever the process does from then on (the load generator's clients,
// its recorder, its garbage collector) is held to b. Release moves it back
// and removes the group. On an error nothing is left: the group is
// removed and the process is where it was.
func Hold(name string, b Budget) (*Held, error) {
	g, err := Create(name, b, "")
	if err != nil {
		_ = Here(name).Remove()
		return nil, err
	}
	h := &Held{Group: g}
	pid := strconv.Itoa(os.Getpid())
	for _, d := range g.Dirs {
		// Create nests the group under the process's own: its parent is
		// where the process was.
		from := filepath.Dir(d)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(pid), 0); err != nil {
			return nil, errors.Join(fmt.Errorf("budget %s: move fieldbench (pid %s) into %s: %w", b, pid, d, err), h.Release())
		}
		h.from = append(h.from, from)
	}
	return h, nil
}

// Release moves the process back to the groups it came from and removes
// the group. Processes this one started while held and that still run (a
// node an experiment restarted without a budget of its own, a helper) go
// back with it: they were the load's only because it started them.
func (h *Held) Release() error {
	if h == nil {
		return nil
	}
	var errs []error
	self := os.Getpid()
	for i, from := range h.from {
		pids := []int{self}
		if others, err := (Group{Dirs: []string{h.Group.Dirs[i]}}).Procs(); err == nil {
			pids = append(pids, others...)
		}
		for _, pid := range pids {
			err := os.WriteFile(filepath.Join(from, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			if err != nil && (pid == self || !errors.Is(err, syscall.ESRCH)) {
				errs = append(errs, fmt.Errorf("budget: move pid %d back to %s: %w", pid, from, err))
			}
		}
	}
	h.from = nil
	if err := h.Group.Remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// HeldNow is the budgets of the control groups fieldbench holds on this
// machine now, by group (its directory under the controller's mount, from
// the first group named with Prefix down): every node's of every cluster
// with budgets, and every load's, whichever process made them. They are
// read from the kernel's files (the quota and the limit each group is held
// to), so a cluster started by `cluster up` in any directory counts, and a
// group whose cluster is gone but whose group is not counts too, as the
// kernel holds it.
func HeldNow() (map[string]Budget, error) {
	out := map[string]Budget{}
	add := func(rel string, f func(*Budget)) {
		b := out[rel]
		f(&b)
		out[rel] = b
	}
	read := func(p string) (string, bool) {
		b, err := os.ReadFile(p)
		return strings.TrimSpace(string(b)), err == nil
	}
	walk := func(root string, each func(dir, rel string)) error {
		// cpu is a link to cpu,cpuacct on many machines: WalkDir does
		// not follow a link, even as its root.
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
		err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil // a group removed while walked
			}
			rel, _ := filepath.Rel(root, p)
			if i := strings.Index(rel, Prefix); i >= 0 && (i == 0 || rel[i-1] == '/') {
				// A load's group holds its process while it runs: an
				// empty one is what a SIGKILLed load left, and holds
				// nothing.
				if strings.HasPrefix(rel[i:], Prefix+"load-") {
					if pids, _ := (Group{Dirs: []string{p}}).Procs(); len(pids) == 0 {
						return nil
					}
				}
				each(p, rel[i:])
			}
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if mode() == cgroups.Unified {
		err := walk("/sys/fs/cgroup", func(dir, rel string) {
			if v, ok := read(filepath.Join(dir, "cpu.max")); ok {
				f := strings.Fields(v)
				if len(f) == 2 && f[0] != "max" {
					q, e1 := strconv.ParseFloat(f[0], 64)
					p, e2 := strconv.ParseFloat(f[1], 64)
					if e1 == nil && e2 == nil && p > 0 {
						add(rel, func(b *Budget) { b.CPU = q / p })
					}
				}
			}
			if v, ok := read(filepath.Join(dir, "memory.max")); ok && v != "max" {
				if n, err := strconv.ParseUint(v, 10, 64); err == nil {
					add(rel, func(b *Budget) { b.Memory = n })
				}
			}
		})
		return prune(out), err
	}
	err := walk("/sys/fs/cgroup/cpu", func(dir, rel string) {
		q, ok1 := read(filepath.Join(dir, "cpu.cfs_quota_us"))
		p, ok2 := read(filepath.Join(dir, "cpu.cfs_period_us"))
		qf, e1 := strconv.ParseFloat(q, 64)
		pf, e2 := strconv.ParseFloat(p, 64)
		if ok1 && ok2 && e1 == nil && e2 == nil && qf > 0 && pf > 0 {
			add(rel, func(b *Budget) { b.CPU = qf / pf })
		}
	})
	if err != nil {
		return nil, err
	}
	err = walk("/sys/fs/cgroup/memory", func(dir, rel string) {
		v, ok := read(filepath.Join(dir, "memory.limit_in_bytes"))
		n, perr := strconv.ParseUint(v, 10, 64)
		// No limit is the largest page-aligned int64.
		if ok && perr == nil && n < 1<<62 {
			add(rel, func(b *Budget) { b.Memory = n })
		}
	})
	return prune(out), err
}

// prune drops the groups that set nothing (a cluster's group, parent of
// its nodes').
func prune(m map[string]Budget) map[string]Budget {
	for k, b := range m {
		if b.Empty() {
			delete(m, k)
		}
	}
	return m
}

// LoadGroupEnv names the environment entry by which the fieldbench that
// starts a load host hands its child the load's group, as the child's
// mount namespace sees it (Group.Seen): the child's own /sys has no
// control groups, and it writes the load's budget series from this group.
const LoadGroupEnv = "FIELDBENCH_LOAD_GROUP"

// Env is the LoadGroupEnv entry for g.
func (g Group) Env() string {
	b, _ := json.Marshal(g) // a struct of strings and ints: never fails
	return LoadGroupEnv + "=" + string(b)
}

// LoadGroupFromEnv is the group LoadGroupEnv hands this process; false
// without one (or an entry that does not parse).
func LoadGroupFromEnv() (Group, bool) {
	var g Group
	v := os.Getenv(LoadGroupEnv)
	if v == "" || json.Unmarshal([]byte(v), &g) != nil || len(g.Dirs) == 0 {
		return Group{}, false
	}
	return g, true
}
