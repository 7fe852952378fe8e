package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// BudgetHolder is an engine that starts every process of a node through
// Start with the node named (Proc.Cluster and Proc.Node), so that a
// budget holds the whole node; it says why not where it cannot (a node
// that is not a process of its own, a server fieldbench does not start).
type BudgetHolder interface {
	Budgets() (ok bool, why string)
}

// CheckBudget refuses, before anything starts, a budget that engine
// cannot hold or this machine cannot (budget.Check: no root, a controller
// missing), an override for a node the cluster will not have, started
// with opts and grown by adds nodes (an experiment's joins), and budgets
// whose sum does not fit this machine (budget.Fit, with the sums); with
// opts.Load (the run's --load-budget), the load's budget and those
// fieldbench already holds on this machine are summed with them
// (budget.FitLoad, budget.HeldNow).
func CheckBudget(engine string, opts Options, adds int) error {
	if opts.Budget.Empty() {
		if opts.Load.Empty() {
			return nil
		}
		return CheckLoad(opts.Load, nil)
	}
	e, err := Get(engine)
	if err != nil {
		return err
	}
	why := "it does not start its nodes under budgets"
	if h, ok := e.(BudgetHolder); ok {
		if can, w := h.Budgets(); can {
			why = ""
		} else if w != "" {
			why = w
		}
	}
	if why != "" {
		return fmt.Errorf("--budget: %s cannot hold a node to a budget: %s", engine, why)
	}
	for name := range opts.Budget.Nodes {
		if err := KnownNode(e, opts.Nodes, opts.Extra, adds, name); err != nil {
			return fmt.Errorf("--budget %s:…: %w", name, err)
		}
	}
	nodes := map[string]budget.Budget{}
	for _, name := range budgetedNames(e, opts, adds) {
		nodes[name] = opts.Budget.For(name)
		if b := nodes[name]; b.Net > 0 && opts.Network != NetworkHosts {
			return fmt.Errorf("--budget: %s is the link rate of a node's host: only for a cluster on hosts (--network hosts); on loopback every node shares one interface", budget.Budget{Net: b.Net})
		}
	}
	if opts.Load.Empty() {
		if err := budget.Fit(nodes, thisMachine()); err != nil {
			return err
		}
	} else if err := CheckLoad(opts.Load, nodes); err != nil {
		return err
	}
	for _, b := range nodes {
		if err := budget.Check(b); err != nil {
			return fmt.Errorf("--budget: %w", err)
		}
	}
	return nil
}

// CheckLoad refuses, before anything starts, a load generator's budget
// (--load-budget) this machine cannot hold (budget.Check: no root, a
// controller missing) or that does not fit beside the budgets fieldbench
// holds here already (every budgeted cluster's nodes, every other load:
// budget.HeldNow, read from the kernel, so a cluster started earlier by
// `cluster up` counts) and the nodes of a cluster about to start (by
// name; nil for none), with Reserve: budget.FitLoad, which prints the
// sums.
func CheckLoad(load budget.Budget, starting map[string]budget.Budget) error {
	if load.Empty() {
		return nil
	}
	if err := budget.Check(load); err != nil {
		return fmt.Errorf("--load-budget: %w", err)
	}
	held, err := budget.HeldNow()
	if err != nil {
		return fmt.Errorf("--load-budget: read the budgets fieldbench holds here: %w", err)
	}
	nodes := map[string]budget.Budget{}
	for name, b := range held {
		nodes[name] = b
	}
	for name, b := range starting {
		nodes["(starting) "+name] = b
	}
	if err := budget.FitLoad(nodes, load, thisMachine()); err != nil {
		return fmt.Errorf("--load-budget %s: %w", load, err)
	}
	return nil
}

// budgetedNames are the nodes of a new cluster, grown by adds, as the
// engine names them (or node1..N for an engine that does not name them
// before it starts), whose budgets must be held and fit the machine.
func budgetedNames(e Engine, opts Options, adds int) []string {
	var names []string
	if nn, ok := e.(NodeNamer); ok {
		names = nn.NodeNames(opts.Nodes, opts.Extra, adds)
	}
	if len(names) == 0 {
		names = Numbered("node", max(opts.Nodes, 1)+adds)
	}
	for n := range opts.Budget.Nodes {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// groupName is the control group of node n of c: named for fieldbench,
// the engine and the cluster's directory (two clusters never share one),
// then the node.
func groupName(c *Cluster, node string) string {
	sum := sha256.Sum256([]byte(c.Dir))
	return fmt.Sprintf("%s%s-%s/%s", budget.Prefix, c.Engine, hex.EncodeToString(sum[:4]), node)
}

// inBudget is p's argv, run inside its node's control group when the node
// has a budget (the group made at the node's first start, kept across
// restarts), and whether Start is to switch to p.User itself: with a
// budget the argv drops to p.User through setpriv after the join, which
// needs root.
func (p Proc) inBudget() (argv []string, asUser bool, err error) {
	argv = append([]string{p.Path}, p.Args...)
	if p.Cluster == nil || p.Node == nil {
		return argv, p.User != "", nil
	}
	b := p.Cluster.Budget.For(p.Node.Name)
	if b.Net > 0 {
		if err := limitLink(p.Cluster, p.Node, b.Net); err != nil {
			return nil, false, err
		}
	}
	b = b.InGroup()
	if b.Empty() {
		return argv, p.User != "", nil
	}
	if p.Node.Cgroup == nil || !p.Node.Cgroup.Exists() {
		g, err := budget.Create(groupName(p.Cluster, p.Node.Name), b, p.Node.DataDir)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", p.Node.Name, err)
		}
		p.Node.Cgroup = &g
	}
	if p.User != "" {
		argv = AsUser(p.User, argv...)
	}
	return p.Node.Cgroup.Join(argv), false, nil
}

// limitLink sets the link of node n's host to its budget's rate (net=),
// at each start of the node: tc's replace is the same limit again on a
// restart, and a limit a fault lifted in between is back.
func limitLink(c *Cluster, n *Node, rate uint64) error {
	if n.Netns == "" {
		return fmt.Errorf("%s: %s sets the link of a node's host: the cluster is not on hosts (--network hosts)", n.Name, budget.Budget{Net: rate})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := vnet.ForDir(c.Dir).Limit(ctx, n.Name, rate); err != nil {
		return fmt.Errorf("%s: %s: %w", n.Name, budget.Budget{Net: rate}, err)
	}
	return nil
}

// removeGroups removes every control group c's nodes were held in, and
// those a start of this process made for nodes it never recorded. A
// process still in a group after the engine stopped its nodes is one
// fieldbench started (it was born in the group: a backend that left its
// session, a helper): it is killed, by PID, before the group goes.
func removeGroups(c *Cluster) error {
	var errs []error
	groups := []budget.Group{}
	for _, n := range c.Nodes {
		if n.Cgroup != nil {
			groups = append(groups, *n.Cgroup)
		}
	}
	if !c.Budget.Empty() {
		for _, n := range c.Nodes {
			groups = append(groups, budget.Here(groupName(c, n.Name)))
		}
		// The cluster's own group, parent of its nodes': what a failed
		// start made for a node it never returned goes with it.
		groups = append(groups, budget.Here(groupName(c, "")))
	}
	for _, g := range groups {
		if err := killGroup(g); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := g.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killGroup kills what is left in g, and waits for it to be gone.
func killGroup(g budget.Group) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids, _ := g.ProcsAll()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("control group %s: processes %v still run after SIGKILL", g.Dirs[0], pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// checkHeld refuses a cluster whose running nodes should have a budget
// and were started outside one: an engine that does not name the node to
// Start. A budget is never silently ignored.
func checkHeld(c *Cluster) error {
	for _, n := range c.Nodes {
		if n.Remote || n.Stopped || n.PID == 0 || c.Budget.For(n.Name).InGroup().Empty() {
			continue
		}
		if n.Cgroup == nil {
			return fmt.Errorf("%s started %s outside its budget (%s): its engine does not start that node through the budget's control group", c.Engine, n.Name, c.Budget.For(n.Name))
		}
	}
	return nil
}

// AddBudgets adds to each status of sts whose node has a budget what it is
// and what the node used against it, from its control group: "budget"
// (cpu=0.2,...), "cpu_throttled" (the share of CFS periods in which the
// node used its whole quota and was held back, and the CPU seconds it
// used), "memory_used" (now and at most, against the limit), "disk_io"
// (what it read and wrote through the throttle of its disk rate) and
// "oom_kills" when there were any.
func AddBudgets(c *Cluster, sts []NodeStatus) {
	for i, st := range sts {
		n, err := c.Node(st.Name)
		b := c.Budget.For(st.Name)
		if err != nil || b.Empty() {
			continue
		}
		if sts[i].Detail == nil {
			sts[i].Detail = map[string]string{}
		}
		sts[i].Detail["budget"] = b.String()
		if n.Cgroup == nil {
			continue // net= alone: the host's link, no group
		}
		u, err := n.Cgroup.Usage()
		if err != nil {
			sts[i].Detail["budget_usage"] = "unreadable: " + err.Error()
			continue
		}
		if b.CPU > 0 {
			sts[i].Detail["cpu_throttled"] = fmt.Sprintf("%.0f%% of %d periods (%.1f CPU-s used)", u.ThrottledShare(), u.Periods, u.CPUSeconds)
		}
		if b.Memory > 0 {
			sts[i].Detail["memory_used"] = fmt.Sprintf("%s (at most %s) of %s", mib(u.Memory), mib(u.MemoryPeak), mib(b.Memory))
		}
		if b.Disk > 0 {
			sts[i].Detail["disk_io"] = fmt.Sprintf("%s read and written, at most %s/s", mib(u.DiskBytes), mib(b.Disk))
		}
		if u.OOMKills > 0 {
			sts[i].Detail["oom_kills"] = strconv.FormatUint(u.OOMKills, 10)
		}
	}
}

// AddJVMs adds to each status of sts whose node is a running JVM here
// what the JVM saw of its machine ("jvm": processors, heap, the control
// group's quota and limit, probe.ReadJVM): Java sizes itself from the
// node's budget, and this says how. A JVM that cannot be asked says why.
// The JVMs are asked side by side: jcmd takes a second or more of a JVM
// held to a fraction of a CPU.
func AddJVMs(ctx context.Context, c *Cluster, sts []NodeStatus) {
	var wg sync.WaitGroup
	for i, st := range sts {
		n, err := c.Node(st.Name)
		if err != nil || n.Remote || n.Stopped || n.PID == 0 {
			continue
		}
		if _, ok := probe.JavaOf(n.PID); !ok {
			continue
		}
		if sts[i].Detail == nil {
			sts[i].Detail = map[string]string{}
		}
		wg.Add(1)
		go func(d map[string]string, pid int) {
			defer wg.Done()
			j, err := probe.ReadJVM(ctx, pid)
			if err != nil {
				d["jvm"] = "unreadable: " + err.Error()
				return
			}
			d["jvm"] = j.String()
		}(sts[i].Detail, n.PID)
	}
	wg.Wait()
}

func mib(b uint64) string { return fmt.Sprintf("%.0fMiB", float64(b)/(1<<20)) }

// GroupsLeft are the directories of c's control group (the parent of its
// nodes', as this process makes it) that still exist: none once c is torn
// down. For tests and checks that nothing is left.
func GroupsLeft(c *Cluster) []string {
	var out []string
	for _, d := range budget.Here(groupName(c, "")).Dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// thisMachine is what budgets must fit in here: the CPUs Go may use and
// the memory /proc/meminfo gives.
func thisMachine() budget.Machine {
	return budget.Machine{CPUs: float64(runtime.NumCPU()), Memory: probe.ReadMemory().Total}
}

// fitsOneMore refuses to add a node to c when its budget, with those of
// the nodes c has, does not fit m (budget.Fit): `cluster add` on a cluster
// with budgets is checked as `cluster up` was.
func fitsOneMore(c *Cluster, m budget.Machine) error {
	if c.Budget.Empty() {
		return nil
	}
	nodes := map[string]budget.Budget{}
	for _, n := range c.Nodes {
		if !n.Remote {
			nodes[n.Name] = c.Budget.For(n.Name)
		}
	}
	nodes["(the node added)"] = c.Budget.Node
	return budget.Fit(nodes, m)
}
