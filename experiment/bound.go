package experiment

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/probe"
)

// A run on budgets says what held its nodes back (issue 44, point 3): a
// node's budget, which is the model's point (each node a machine of its
// own size: the shape over node count is the database's), or the machine,
// which ran out of CPU first (every node then waits on the same two
// cores: the shape is the machine's, and a study's verdict on it is "not
// judged here"). The thresholds are the docs' (docs/scale-model.md).
const (
	// machineIdleFloor: below this share of the machine's CPU idle over
	// the run (iowait excluded), the machine ran out first. On two cores
	// 10 % is a fifth of a core: less than any node's budget here.
	machineIdleFloor = 0.10
	// throttledFloor: a node held back by its quota in at least this
	// share of the CFS periods it ran in was bound by its budget. A node
	// that uses its whole quota is held back in almost every period; one
	// that is idle now and then, in a few.
	throttledFloor = 0.10
	// starvedCeiling: a node not bound by its budget that used less than
	// this share of it while the machine had no idle CPU was starved: it
	// waited on cores the others held, short of its own size.
	starvedCeiling = 0.90
)

// boundTally sums, over a run's probe intervals, what the verdict needs:
// the machine's idle and stolen CPU, and each budgeted node's CPU,
// periods, throttled periods, peak memory and OOM kills. Its state is one
// entry per node, whatever the run's length.
type boundTally struct {
	seconds, idle, steal float64 // machine: interval-weighted sums
	machineSeen          bool
	nodes                map[string]*nodeTally
}

type nodeTally struct {
	b                   budget.Budget
	cpuSeconds, seconds float64
	periods, throttled  uint64
	memoryPeak          uint64
	oomKills            uint64
}

// machine adds one interval of the machine's CPU (NaN: unknown, skipped).
func (t *boundTally) machine(ms probe.MachineSample, seconds float64) {
	if seconds <= 0 || ms.CPUIdle != ms.CPUIdle {
		return
	}
	t.machineSeen = true
	t.seconds += seconds
	t.idle += ms.CPUIdle * seconds
	if ms.CPUSteal == ms.CPUSteal {
		t.steal += ms.CPUSteal * seconds
	}
}

// node adds a node's control group's readings, dt seconds apart; it
// returns the OOM kills new since the previous reading.
func (t *boundTally) node(name string, b budget.Budget, prev, cur budget.Usage, dt float64) (newKills uint64) {
	if t.nodes == nil {
		t.nodes = map[string]*nodeTally{}
	}
	n := t.nodes[name]
	if n == nil {
		n = &nodeTally{b: b}
		t.nodes[name] = n
	}
	if dt > 0 && cur.CPUSeconds >= prev.CPUSeconds {
		n.cpuSeconds += cur.CPUSeconds - prev.CPUSeconds
		n.seconds += dt
	}
	if cur.Periods >= prev.Periods && cur.Throttled >= prev.Throttled {
		n.periods += cur.Periods - prev.Periods
		n.throttled += cur.Throttled - prev.Throttled
	}
	n.memoryPeak = max(n.memoryPeak, cur.Memory, cur.MemoryPeak)
	if cur.OOMKills > prev.OOMKills {
		newKills = cur.OOMKills - prev.OOMKills
		n.oomKills += newKills
	}
	return newKills
}

// boundVerdict is what the tally says: the figures (summary extras) and
// one line (the run's "budget-bound" event).
type boundVerdict struct {
	extras map[string]float64
	line   string
}

// verdict decides, over the whole run. A node held back in
// throttledFloor of its periods or more used its whole quota: it ran at
// its size, bound by its budget, however busy the rest of the machine was
// (low-priority work soaks up idle CPU without taking a node's share). A
// node that was not, and used less than starvedCeiling of its budget while
// the machine's idle CPU stayed under machineIdleFloor, was starved: the
// machine ran out first. So: "machine" when any node was starved, else
// "budget" when any node was bound, else "neither" (the load, or the
// database itself, was the limit). A node that asked for nothing in a busy
// machine counts as starved: without each process's run-queue delay the
// two cannot be told apart, and "machine" is the cautious reading. ok is
// false when no node was budgeted or nothing was read.
func (t *boundTally) verdict() (v boundVerdict, ok bool) {
	if len(t.nodes) == 0 {
		return v, false
	}
	v.extras = map[string]float64{}
	names := slices.Sorted(maps.Keys(t.nodes))
	machine := "machine idle unknown"
	busy := false
	if t.machineSeen && t.seconds > 0 {
		idle, steal := t.idle/t.seconds, t.steal/t.seconds
		v.extras["budget_machine_idle_pct"] = 100 * idle
		v.extras["budget_machine_steal_pct"] = 100 * steal
		machine = fmt.Sprintf("machine %.0f %% idle, %.1f %% stolen", 100*idle, 100*steal)
		busy = idle < machineIdleFloor
	}
	var bound, starved, figures []string
	for _, name := range names {
		n := t.nodes[name]
		fig := name + ":"
		used := -1.0
		if n.b.CPU > 0 && n.seconds > 0 {
			used = n.cpuSeconds / n.seconds / n.b.CPU
			v.extras["budget_"+name+"_cpu_pct"] = 100 * used
			fig += fmt.Sprintf(" CPU %.0f %% of %g", 100*used, n.b.CPU)
		}
		isBound := false
		if n.b.CPU > 0 && n.periods > 0 {
			share := float64(n.throttled) / float64(n.periods)
			v.extras["budget_"+name+"_throttled_pct"] = 100 * share
			fig += fmt.Sprintf(", throttled %.0f %%", 100*share)
			isBound = share >= throttledFloor
		}
		switch {
		case isBound:
			bound = append(bound, name)
		case busy && used >= 0 && used < starvedCeiling:
			starved = append(starved, name)
		}
		if n.b.Memory > 0 {
			v.extras["budget_"+name+"_memory_peak_pct"] = 100 * float64(n.memoryPeak) / float64(n.b.Memory)
			fig += fmt.Sprintf(", memory peak %.0f %%", 100*float64(n.memoryPeak)/float64(n.b.Memory))
		}
		v.extras["budget_"+name+"_oom_kills"] = float64(n.oomKills)
		if n.oomKills > 0 {
			fig += fmt.Sprintf(", %d OOM kill(s)", n.oomKills)
		}
		figures = append(figures, fig)
	}
	v.extras["budget_nodes_bound"] = float64(len(bound))
	v.extras["budget_nodes_starved"] = float64(len(starved))
	v.extras["budget_machine_bound"] = 0
	switch {
	case len(starved) > 0:
		v.extras["budget_machine_bound"] = 1
		v.line = fmt.Sprintf("machine: it ran out of CPU first (%s, under %.0f %%): %s used less than %.0f %% of its budget without being held back by it: the shape is the machine's, not the database's on these budgets",
			machine, 100*machineIdleFloor, strings.Join(starved, ", "), 100*starvedCeiling)
	case len(bound) > 0:
		v.line = fmt.Sprintf("budget: %s held back by its budget (throttled in %.0f %% of periods or more), %s: the shape is the database's on these budgets", strings.Join(bound, ", "), 100*throttledFloor, machine)
	default:
		v.line = fmt.Sprintf("neither: no node held back by its budget, %s: the load or the database itself was the limit", machine)
	}
	v.line += "; " + strings.Join(figures, "; ")
	return v, true
}
