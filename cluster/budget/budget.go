// Package budget makes a node of a cluster a machine of its own size: a
// Budget (CPUs, memory, disk rate) is a Linux control group that holds the
// node's whole process tree from its start, so that a study's shapes over
// node count are the database's and not those of the one machine every
// node shares (docs/scale-model.md).
//
// The control groups are made, limited, read and removed with
// containerd/cgroups (the library containerd and Docker use), on cgroup v1
// or v2 as the machine has them; what the library does not do is put a
// process into a group before it runs, which Join does (a process added
// after its start may already have forked, or sized itself, as a JVM does
// from its group at start).
package budget

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// ErrBadBudget is wrapped by every refusal of a budget's text.
var ErrBadBudget = errors.New("bad budget")

// Budget is one node's size. A zero field is no limit on that resource.
type Budget struct {
	// CPU is in CPUs: 0.25 is a quarter of one core's time, held by a
	// hard quota (CFS bandwidth), not a share that idle cores would lift.
	CPU float64 `json:"cpu,omitempty"`
	// Memory is in bytes: the group's processes are reclaimed, then
	// OOM-killed, beyond it.
	Memory uint64 `json:"memory,omitempty"`
	// Disk is in bytes a second, for reads and for writes each, on the
	// device that holds the node's data.
	Disk uint64 `json:"disk,omitempty"`
	// Net is in bits a second, each way, on the link of the node's host
	// (a cluster on hosts): a token bucket (tc tbf, vnet.Net.Limit) the
	// node's start sets, not a control group.
	Net uint64 `json:"net,omitempty"`
}

// InGroup is what a control group holds of b: all but the link rate,
// which is the host's (Net).
func (b Budget) InGroup() Budget {
	b.Net = 0
	return b
}

// Keys are the budget's keys, in the order String writes them.
var Keys = []string{"cpu", "memory", "disk", "net"}

// Parse reads "cpu=0.3,memory=1GiB,disk=40MiB/s,net=100mbit" (any subset,
// in any order; sizes as 512MiB, 1GiB or 1.5GB; disk with or without
// "/s"; net in tc's units, as the limit fault reads them: 100mbit, 1gbit,
// 10mbps).
func Parse(s string) (Budget, error) {
	var b Budget
	if strings.TrimSpace(s) == "" {
		return b, fmt.Errorf("%w: empty (want e.g. cpu=0.5,memory=1GiB)", ErrBadBudget)
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return b, fmt.Errorf("%w: %q is not key=value (keys: %s)", ErrBadBudget, kv, strings.Join(Keys, ", "))
		}
		if seen[k] {
			return b, fmt.Errorf("%w: %s given twice", ErrBadBudget, k)
		}
		seen[k] = true
		switch k {
		case "cpu":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
				return b, fmt.Errorf("%w: cpu=%s: want a number of CPUs above 0, e.g. 0.25", ErrBadBudget, v)
			}
			// The kernel's quota is in microseconds of a 100 ms period:
			// below 1 ms a period (0.01 CPU) it refuses.
			if f < 0.01 {
				return b, fmt.Errorf("%w: cpu=%s: the smallest quota is 0.01 CPU", ErrBadBudget, v)
			}
			b.CPU = f
		case "memory":
			n, err := parseBytes(v)
			if err != nil {
				return b, fmt.Errorf("%w: memory=%s: %v (e.g. 512MiB, 1GiB)", ErrBadBudget, v, err)
			}
			// A JVM or PostgreSQL does not start in less.
			if n < 16<<20 {
				return b, fmt.Errorf("%w: memory=%s: at least 16MiB", ErrBadBudget, v)
			}
			b.Memory = n
		case "disk":
			n, err := parseBytes(strings.TrimSuffix(v, "/s"))
			if err != nil {
				return b, fmt.Errorf("%w: disk=%s: %v (bytes a second, e.g. 40MiB/s)", ErrBadBudget, v, err)
			}
			if n < 1<<20 {
				return b, fmt.Errorf("%w: disk=%s: at least 1MiB/s", ErrBadBudget, v)
			}
			b.Disk = n
		case "net":
			n, err := vnet.ParseRate(v)
			if err != nil {
				return b, fmt.Errorf("%w: net=%s: %v (bits a second, e.g. 100mbit)", ErrBadBudget, v, err)
			}
			b.Net = n
		default:
			return b, fmt.Errorf("%w: unknown key %q (keys: %s)", ErrBadBudget, k, strings.Join(Keys, ", "))
		}
	}
	return b, nil
}

// parseBytes is humanize.ParseBytes, which reads both 1GB (10^9) and
// 1GiB (2^30), refusing 0.
func parseBytes(s string) (uint64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, errors.New("not a size")
	}
	if n == 0 {
		return 0, errors.New("want more than 0")
	}
	return n, nil
}

// Empty reports whether b limits nothing.
func (b Budget) Empty() bool { return b == Budget{} }

// String is b as Parse reads it: "cpu=0.3,memory=1GiB,disk=40MiB/s".
func (b Budget) String() string {
	var parts []string
	if b.CPU > 0 {
		parts = append(parts, "cpu="+strconv.FormatFloat(b.CPU, 'g', -1, 64))
	}
	if b.Memory > 0 {
		parts = append(parts, "memory="+size(b.Memory))
	}
	if b.Disk > 0 {
		parts = append(parts, "disk="+size(b.Disk)+"/s")
	}
	if b.Net > 0 {
		parts = append(parts, "net="+bitRate(b.Net))
	}
	return strings.Join(parts, ",")
}

// Over is b with every resource o sets taken from o: a node's override of
// the cluster's budget.
func (b Budget) Over(o Budget) Budget {
	if o.CPU > 0 {
		b.CPU = o.CPU
	}
	if o.Memory > 0 {
		b.Memory = o.Memory
	}
	if o.Disk > 0 {
		b.Disk = o.Disk
	}
	if o.Net > 0 {
		b.Net = o.Net
	}
	return b
}

// bitRate writes bits a second as Parse reads them: the largest of gbit,
// mbit, kbit that divides it, else bit.
func bitRate(bits uint64) string {
	for _, u := range []struct {
		name string
		n    uint64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bits%u.n == 0 {
			return strconv.FormatUint(bits/u.n, 10) + u.name
		}
	}
	return strconv.FormatUint(bits, 10) + "bit"
}

// Plan is a cluster's budgets: one for every node, and overrides by node
// name. It is saved in cluster.json, so a node added or restarted later is
// held to the same budget.
type Plan struct {
	Node  Budget            `json:"node,omitempty"`
	Nodes map[string]Budget `json:"nodes,omitempty"`
}

// Empty reports whether p limits no node.
func (p Plan) Empty() bool {
	if !p.Node.Empty() {
		return false
	}
	for _, b := range p.Nodes {
		if !b.Empty() {
			return false
		}
	}
	return true
}

// For is node name's budget.
func (p Plan) For(name string) Budget { return p.Node.Over(p.Nodes[name]) }

// String says the plan in one line: "cpu=0.2 each (redis2: cpu=0.5)".
func (p Plan) String() string {
	s := p.Node.String()
	if s == "" {
		s = "none"
	} else {
		s += " each"
	}
	names := make([]string, 0, len(p.Nodes))
	for n := range p.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var over []string
	for _, n := range names {
		over = append(over, n+": "+p.Nodes[n].String())
	}
	if len(over) > 0 {
		s += " (" + strings.Join(over, "; ") + ")"
	}
	return s
}

// ParsePlan reads --budget as given, once or more: "cpu=0.2,memory=1GiB"
// for every node, "NODE:cpu=0.5" for one node (over the budget for every
// node, key by key).
func ParsePlan(specs []string) (Plan, error) {
	var p Plan
	for _, s := range specs {
		name, rest, named := strings.Cut(s, ":")
		if !named || strings.Contains(name, "=") {
			name, rest = "", s
		}
		b, err := Parse(rest)
		if err != nil {
			return Plan{}, err
		}
		if name == "" {
			if !p.Node.Empty() {
				return Plan{}, fmt.Errorf("%w: two budgets for every node (%s and %s); name a node for the second (NODE:%s)", ErrBadBudget, p.Node, b, b)
			}
			p.Node = b
			continue
		}
		if p.Nodes == nil {
			p.Nodes = map[string]Budget{}
		}
		if _, dup := p.Nodes[name]; dup {
			return Plan{}, fmt.Errorf("%w: two budgets for node %s", ErrBadBudget, name)
		}
		p.Nodes[name] = b
	}
	return p, nil
}

// IsZero is Empty, for encoding/json's omitzero.
func (p Plan) IsZero() bool { return p.Empty() }

// Machine is what a cluster's budgets must fit in: this machine's CPUs and
// memory.
type Machine struct {
	CPUs   float64
	Memory uint64
}

// Reserve is what a plan leaves for everything that is not a node or a
// load with a budget of its own: the system, and the load generator when
// it has none (--load-budget). Its size is an interpretation
// (docs/scale-model.md): a quarter of a core and 512 MiB kept the machine
// responsive under the scale model's runs.
var Reserve = Budget{CPU: 0.25, Memory: 512 << 20}

// Fit refuses node budgets (by node name) whose sum with Reserve exceeds
// m, printing the sums: a model whose nodes together ask more than the
// machine has is no longer a model of machines of their own. Only the
// resources the budgets set are summed (a node without a CPU budget takes
// what is left, as before).
func Fit(nodes map[string]Budget, m Machine) error { return FitLoad(nodes, Budget{}, m) }

// FitLoad is Fit with the load generator's own budget (--load-budget)
// added to the nodes' and Reserve: the three together must fit m, and the
// refusal prints each part and the sum.
func FitLoad(nodes map[string]Budget, load Budget, m Machine) error {
	var cpu float64
	var mem uint64
	var nCPU, nMem int
	for _, b := range nodes {
		if b.CPU > 0 {
			cpu += b.CPU
			nCPU++
		}
		if b.Memory > 0 {
			mem += b.Memory
			nMem++
		}
	}
	kept := "are kept for the system and the load"
	if !load.Empty() {
		kept = "are kept for the system"
	}
	var errs []string
	if (nCPU > 0 || load.CPU > 0) && m.CPUs > 0 && cpu+load.CPU+Reserve.CPU > m.CPUs+1e-9 {
		errs = append(errs, overSum(nCPU, cpu, load.CPU, Reserve.CPU, m.CPUs, num, "CPUs", " CPUs", kept))
	}
	if (nMem > 0 || load.Memory > 0) && m.Memory > 0 && mem+load.Memory+Reserve.Memory > m.Memory {
		errs = append(errs, overSum(nMem, float64(mem), float64(load.Memory), float64(Reserve.Memory), float64(m.Memory),
			func(f float64) string { return size(uint64(f)) }, "of memory", "", kept))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: the budgets do not fit this machine: %s", ErrBadBudget, strings.Join(errs, "; "))
	}
	return nil
}

// overSum is one resource's refusal: what n nodes and the load ask, the
// reserve (kept for what), their sum and what the machine has, each
// written by format; asked and unit name the resource ("CPUs", "of
// memory") after the asks and after the machine's figure.
func overSum(n int, nodes, load, reserve, have float64, format func(float64) string, asked, unit, kept string) string {
	ask := fmt.Sprintf("%d node(s) ask %s %s, ", n, format(nodes), asked)
	switch {
	case n == 0:
		ask = fmt.Sprintf("the load asks %s %s, ", format(load), asked)
	case load > 0:
		ask += fmt.Sprintf("the load %s, ", format(load))
	}
	return fmt.Sprintf("%sand %s %s: %s > this machine's %s%s",
		ask, format(reserve), kept, format(nodes+load+reserve), format(have), unit)
}

// num writes a sum of CPUs without float noise (0.8+0.8+0.3 is
// 1.9000000000000001): to a millionth of a CPU, far below the kernel's
// quota grain.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*1e6)/1e6, 'f', -1, 64) }

func size(b uint64) string { return strings.ReplaceAll(humanize.IBytes(b), " ", "") }
