package experiment

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/probe"
)

// TestBoundVerdict: what held a budgeted run's nodes back, from the
// tally of its probe intervals: the machine when a node not held back by
// its budget used less than 90 % of it while the machine's idle CPU stayed
// under 10 %; else the nodes throttled in 10 % of their periods or more
// (even on a busy machine: they had their size); else neither; OOM kills
// counted; no verdict without a budgeted node.
func TestBoundVerdict(t *testing.T) {
	t.Parallel()
	half := budget.Budget{CPU: 0.5, Memory: 1 << 30}
	type reading struct {
		node      string
		prev, cur budget.Usage
	}
	for _, c := range []struct {
		name      string
		idle      float64 // the machine's idle share in each of two 5 s intervals
		readings  []reading
		ok        bool
		line      string // the verdict's first word
		extras    map[string]float64
		wantKills uint64
	}{
		{name: "no budgeted node", idle: 0.5, ok: false},
		{name: "machine ran out first", idle: 0.05, ok: true, line: "machine: it ran out of CPU first (machine 5 % idle",
			readings: []reading{
				{"n1", budget.Usage{}, budget.Usage{CPUSeconds: 5, Periods: 100, Throttled: 90, Memory: 512 << 20}},
				{"n2", budget.Usage{}, budget.Usage{CPUSeconds: 3, Periods: 100, Throttled: 2}},
			},
			extras: map[string]float64{"budget_machine_bound": 1, "budget_nodes_bound": 1, "budget_nodes_starved": 1, "budget_n1_throttled_pct": 90,
				"budget_n1_cpu_pct": 100, "budget_n1_memory_peak_pct": 50, "budget_machine_idle_pct": 5, "budget_n2_cpu_pct": 60}},
		{name: "bound by the budget on a busy machine", idle: 0.02, ok: true, line: "budget: n1, n2 held back",
			readings: []reading{
				{"n1", budget.Usage{}, budget.Usage{CPUSeconds: 4.8, Periods: 100, Throttled: 95}},
				{"n2", budget.Usage{}, budget.Usage{CPUSeconds: 4.9, Periods: 100, Throttled: 94}},
			},
			extras: map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 2, "budget_nodes_starved": 0, "budget_machine_idle_pct": 2}},
		{name: "bound by the budget", idle: 0.4, ok: true, line: "budget: n2 held back",
			readings: []reading{
				{"n1", budget.Usage{}, budget.Usage{CPUSeconds: 1, Periods: 100, Throttled: 5}},
				{"n2", budget.Usage{}, budget.Usage{CPUSeconds: 5, Periods: 100, Throttled: 50}},
			},
			extras: map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 1, "budget_n1_throttled_pct": 5, "budget_n2_throttled_pct": 50, "budget_n1_cpu_pct": 20}},
		{name: "neither, with an OOM kill", idle: 0.6, ok: true, line: "neither:",
			readings: []reading{{"n1", budget.Usage{OOMKills: 1}, budget.Usage{CPUSeconds: 1, Periods: 100, OOMKills: 3}}},
			extras:   map[string]float64{"budget_nodes_bound": 0, "budget_n1_oom_kills": 2}, wantKills: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tally boundTally
			for range 2 {
				tally.machine(probe.MachineSample{CPUIdle: c.idle}, 5)
			}
			tally.machine(probe.MachineSample{CPUIdle: math.NaN()}, 5) // unknown: skipped
			var kills uint64
			for _, r := range c.readings {
				kills += tally.node(r.node, half, r.prev, r.cur, 10)
			}
			if kills != c.wantKills {
				t.Errorf("new OOM kills %d, want %d", kills, c.wantKills)
			}
			v, ok := tally.verdict()
			if ok != c.ok {
				t.Fatalf("verdict ok %v, want %v (%q)", ok, c.ok, v.line)
			}
			if !ok {
				return
			}
			if !strings.HasPrefix(v.line, c.line) {
				t.Errorf("verdict %q, want it to start %q", v.line, c.line)
			}
			for k, want := range c.extras {
				if got, ok := v.extras[k]; !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("extra %s = %v (set %v), want %v", k, got, ok, want)
				}
			}
		})
	}
}

// TestJVMViewsDue: a node's process is looked at once, at its first
// sample and again when it is a new process (a restart); a node stopped,
// dead or without a process is not looked at, and a process that is not
// a JVM (the test itself) is looked at but not asked.
func TestJVMViewsDue(t *testing.T) {
	me := os.Getpid()
	var v jvmViews
	for _, tc := range []struct {
		name  string
		nodes []probe.NodeSample
		asked map[string]int
	}{
		{"first sample", []probe.NodeSample{{Name: "n1", PID: me, Alive: true}, {Name: "n2", PID: 0}, {Name: "n3", PID: me + 1, Alive: false}},
			map[string]int{"n1": me}},
		{"same process", []probe.NodeSample{{Name: "n1", PID: me, Alive: true}}, map[string]int{"n1": me}},
		{"n3 restarted", []probe.NodeSample{{Name: "n1", PID: me, Alive: true}, {Name: "n3", PID: me, Alive: true}},
			map[string]int{"n1": me, "n3": me}},
	} {
		if due := v.due(tc.nodes); len(due) != 0 {
			t.Errorf("%s: due %v, want none (no JVM)", tc.name, due)
		}
		if fmt.Sprint(v.asked) != fmt.Sprint(tc.asked) {
			t.Errorf("%s: asked %v, want %v", tc.name, v.asked, tc.asked)
		}
	}
}
