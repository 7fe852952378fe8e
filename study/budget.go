package study

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// What bound a run on node budgets (issue 44, point 3; issue 41, point
// 1): the experiment ends each run on budgets with a "budget-bound" event
// and summary figures (experiment/bound.go, docs/scale-model.md "What
// bound the run"). A shape over node count is the database's only when
// each node ran at its own budget; when the machine ran out of CPU first,
// or the nodes had no budget and shared the machine's cores, it is the
// machine's, and the claims resting on it are not judged here
// (docs/studies.md, "Budgets").

// The values of Measure.Bound and RunBound.Bound.
const (
	// BoundMachine: the machine ran out of CPU first (budget_machine_bound 1).
	BoundMachine = "machine"
	// BoundBudget: nodes were held back by their budgets: the shape is
	// the database's on machines of that size.
	BoundBudget = "budget"
	// BoundNeither: no node used its whole budget and the machine had CPU
	// to spare: the load or the database itself was the limit.
	BoundNeither = "neither"
	// BoundUnknown: the run had budgets but recorded no verdict.
	BoundUnknown = "unknown"
)

// boundEvent is the event the experiment records the verdict in.
const boundEvent = "budget-bound"

// RunBound is what one run of a step records of its budgets.
type RunBound struct {
	Dir string
	// Budget is the nodes' budget as the result records it
	// (cluster.budget, else the nodes' own); "" none.
	Budget string
	// Bound is one of BoundMachine, BoundBudget, BoundNeither,
	// BoundUnknown; "" when the run had no budget.
	Bound string
	// Detail is the budget-bound event's line.
	Detail string
	// MachineIdle is the machine's idle CPU over the run, % (NaN unknown).
	MachineIdle float64
	// NodesBound counts the nodes held back by their budgets.
	NodesBound int
	// Throttled is each node's share of CFS periods held back, %.
	Throttled map[string]float64
}

// boundOf reads what run r records of its budgets: the header's budget,
// the budget-bound event and the budget_* summary figures. The summary's
// budget_machine_bound decides when present, else the event's first word.
func boundOf(r *result.Run) RunBound {
	b := RunBound{Dir: r.Dir, MachineIdle: math.NaN()}
	if c := r.Header.Cluster; c != nil {
		b.Budget = c.Budget
		if b.Budget == "" {
			var own []string
			for _, n := range c.Nodes {
				if n.Budget != "" {
					own = append(own, n.Name+": "+n.Budget)
				}
			}
			b.Budget = strings.Join(own, ", ")
		}
	}
	for _, e := range r.Events {
		if e.Name == boundEvent {
			b.Detail = e.Detail
		}
	}
	var x map[string]float64
	if r.Summary != nil {
		x = r.Summary.Extra
	}
	mb, hasMB := x["budget_machine_bound"]
	if v, ok := x["budget_machine_idle_pct"]; ok {
		b.MachineIdle = v
	}
	b.NodesBound = int(x["budget_nodes_bound"])
	for k, v := range x {
		if node, ok := strings.CutSuffix(strings.TrimPrefix(k, "budget_"), "_throttled_pct"); ok && strings.HasPrefix(k, "budget_") && node != "" {
			if b.Throttled == nil {
				b.Throttled = map[string]float64{}
			}
			b.Throttled[node] = v
		}
	}
	word, _, _ := strings.Cut(b.Detail, ":")
	switch {
	case hasMB && mb == 1:
		b.Bound = BoundMachine
	case word == BoundMachine || word == BoundBudget || word == BoundNeither:
		b.Bound = word
	case hasMB && b.NodesBound > 0:
		b.Bound = BoundBudget
	case hasMB:
		b.Bound = BoundNeither
	case b.Budget != "":
		b.Bound = BoundUnknown
	}
	return b
}

// String says what bound the run, as the report's steps table gives it.
func (b RunBound) String() string {
	name := filepath.Base(b.Dir)
	switch b.Bound {
	case "":
		return name + ": no budget"
	case BoundMachine:
		s := name + ": the machine ran out first"
		if !math.IsNaN(b.MachineIdle) {
			s += fmt.Sprintf(" (%.0f %% idle)", b.MachineIdle)
		}
		return s
	case BoundBudget:
		var held []string
		for _, n := range sortedNodes(b.Throttled) {
			held = append(held, fmt.Sprintf("%s %.0f %%", n, b.Throttled[n]))
		}
		s := fmt.Sprintf("%s: bound by the budgets (%d node(s) held back", name, b.NodesBound)
		if len(held) > 0 {
			s += "; throttled " + strings.Join(held, ", ")
		}
		return s + ")"
	case BoundNeither:
		return name + ": neither (no node at its budget, the machine not out of CPU: the load or the database was the limit)"
	}
	return name + ": budgets, but no verdict recorded"
}

func sortedNodes(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stepBudget is a step's budgets and what bound its runs, in a sentence:
// the steps table's two cells.
func stepBudget(st StepState) (budget, bound string) {
	if len(st.Bounds) == 0 {
		return "–", "–"
	}
	var budgets []string
	n := map[string]int{}
	for _, b := range st.Bounds {
		if b.Budget != "" && !slices.Contains(budgets, b.Budget) {
			budgets = append(budgets, b.Budget)
		}
		n[b.Bound]++
	}
	budget = strings.Join(budgets, "; ")
	if budget == "" {
		budget = "none"
	}
	runs := len(st.Bounds)
	switch {
	case n[""] == runs:
		return budget, "no budget: the nodes shared the machine's cores, so the shape over node count is the shared machine's"
	case n[BoundMachine] > 0:
		bound = fmt.Sprintf("the machine ran out first in %d of %d run(s): the shape over node count is the machine's", n[BoundMachine], runs)
	case n[BoundBudget] == runs:
		bound = "bound by the nodes' budgets in every run: the shape is the database's on nodes of this size"
	default:
		var p []string
		for _, k := range []string{BoundBudget, BoundNeither, BoundUnknown, ""} {
			if n[k] > 0 {
				p = append(p, fmt.Sprintf("%s %d", map[string]string{BoundBudget: "budget-bound", BoundNeither: "neither", BoundUnknown: "no verdict", "": "no budget"}[k], n[k]))
			}
		}
		bound = "the machine never ran out first; runs: " + strings.Join(p, ", ")
	}
	var each []string
	for _, b := range st.Bounds {
		each = append(each, b.String())
	}
	return budget, bound + " — " + strings.Join(each, "; ")
}

// worseBound is what bound a figure resting on two runs: the machine when
// either ran out first; else no budget when either had none; else no
// verdict when either lacks one; else budget when either was bound by it.
func worseBound(a, b string) string {
	for _, w := range []string{BoundMachine, "", BoundUnknown, BoundBudget} {
		if a == w || b == w {
			return w
		}
	}
	return a
}

// transitionMetrics are figures of a change of node count (a join or a
// doubling): a claim about one is about how the cluster changes with
// its nodes.
var transitionMetrics = map[string]bool{"elasticity_score": true, "scalability_score": true,
	"data_transfer_time": true, "additional_time": true, "stabilization_time": true}

// nodeCountClaim reports whether c is about how a figure changes with node
// count: scalability, a transition (join, doubling), no database best at
// every scale, or a metric whose paper order differs between node counts
// (trajectory's write throughput: PostgreSQL first on one node, Cassandra
// on four). A ranking at each scale (wiki's performance at 6 and at 12
// nodes) is not: each is a single-scale comparison.
func nodeCountClaim(s *Study, c Claim) bool {
	switch {
	case c.About == "scalability", c.Per == "transition", transitionMetrics[c.About]:
		return true
	case c.Per == "nodes":
		return len(c.Ranks) == 0
	case len(c.Ranks) >= 2:
		return false
	}
	// The paper's leader at each node count: more than one leader over
	// more than one count is an order that changes with the nodes.
	leaders := map[int]bool{}
	names := map[string]bool{}
	for k, order := range paperOrders(s, c, c.About) {
		leaders[k.nodes] = true
		names[order[0]] = true
	}
	if len(leaders) > 1 && len(names) > 1 {
		return true
	}
	return false
}

// restsOn are the measures claim c's verdict rests on: its databases'
// figures of its metric and operation (throughput for a scalability
// claim, every measure for a failure claim), at the paper's scales it
// names when it names some.
func restsOn(s *Study, c Claim, ms []Measure) []Measure {
	dbs := claimDatabases(c, ms)
	op := claimOp(s, c, ms)
	metric := c.About
	if c.About == "scalability" && len(c.Ranks) == 0 {
		metric = "throughput"
	}
	var out []Measure
	for _, m := range ms {
		if !slices.Contains(dbs, m.Database) {
			continue
		}
		if c.About != "failure" && (m.Metric != metric || (op != "" && m.Operation != op) || m.Failed != "") {
			continue
		}
		out = append(out, m)
	}
	if c.Per == "" || len(c.At) == 0 {
		return out
	}
	// Only the measures standing for the paper's scales the claim names.
	transition := c.Per == "transition"
	var paper []int
	for _, sc := range s.Scales(metric, c.Per) {
		paper = append(paper, sc.Nodes)
	}
	stepNodes := map[string][]int{}
	for _, m := range out {
		if (m.NodesAfter > 0) == transition && !slices.Contains(stepNodes[m.Step], m.Nodes) {
			stepNodes[m.Step] = append(stepNodes[m.Step], m.Nodes)
		}
	}
	var at []Measure
	for _, m := range out {
		if (m.NodesAfter > 0) == transition && m.Nodes > 0 && slices.Contains(c.At, standsFor(paper, stepNodes[m.Step], m.Nodes)) {
			at = append(at, m)
		}
	}
	return at
}

// budgetRule is the verdict of claim c once what bound its measures' runs
// is taken into account: not judged when one of them comes from a run
// where the machine ran out of CPU first; for a claim about how a figure
// changes with node count, also when one comes from a run without budgets
// (the nodes shared the machine's cores) or whose budget verdict was not
// recorded. The verdict the measures alone give follows in the reason.
func budgetRule(s *Study, c Claim, ms []Measure, v Verdict, why string) (Verdict, string) {
	rest := restsOn(s, c, ms)
	var machine, shared, unknown []string
	add := func(list *[]string, m Measure) {
		w := m.Step
		if m.Dir != "" {
			w += " (" + filepath.Base(m.Dir) + ")"
		}
		if !slices.Contains(*list, w) {
			*list = append(*list, w)
		}
	}
	for _, m := range rest {
		switch m.Bound {
		case BoundMachine:
			add(&machine, m)
		case "":
			add(&shared, m)
		case BoundUnknown:
			add(&unknown, m)
		}
	}
	var because []string
	if len(machine) > 0 {
		because = append(because, "the machine ran out of CPU first in "+strings.Join(machine, ", ")+": the figures there are the machine's, not the databases' on their budgets")
	}
	if nodeCountClaim(s, c) {
		if len(shared) > 0 {
			because = append(because, "nodes shared the machine's cores without budgets ("+strings.Join(shared, ", ")+"): how the figure changes with node count is the shared machine's here")
		}
		if len(unknown) > 0 {
			because = append(because, "what bound the nodes was not recorded ("+strings.Join(unknown, ", ")+")")
		}
	}
	if len(because) == 0 {
		return v, why
	}
	return NotJudged, strings.Join(because, "; ") + "; the measures alone give: " + string(v) + " (" + why + ")"
}
