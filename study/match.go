package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/report"
)

// Row is one published value set beside fieldbench's.
type Row struct {
	Value Value
	// Cond is the value's effective conditions (Study.Effective).
	Cond Conditions
	// Measured is fieldbench's figure in the value's unit (NaN: not
	// measured, NotMeasured says why); MeasuredSD its spread, NaN when none.
	Measured, MeasuredSD float64
	// Ratio is Measured / Value.Value (NaN when either is missing or the
	// paper's value is 0).
	Ratio float64
	// Comparable: measured under the paper's conditions as far as the
	// result file and the study file tell. Reasons says why not.
	Comparable  bool
	Reasons     []string
	NotMeasured string
	// How says where the figure comes from: the steps, servers and how
	// it was read.
	How      string
	Measures []Measure
}

// absolute are the units of figures that depend on the hardware: they
// cannot be compared when every node and the client share a few cores.
var absolute = map[string]bool{"s": true, "ms": true, "min": true, "ops/s": true, "records/s": true,
	"MB": true, "MB/node": true, "blocks/5s": true}

// machineBound are metrics in dimensionless units that still depend on the
// hardware (a confidence interval's width follows the machine's noise).
var machineBound = map[string]bool{"ci_amplitude": true, "cpu_idle": true}

// settings are figures of the workload's setup, not of the database: no
// server, node count or machine makes them incomparable.
var settings = map[string]bool{"record_size": true, "sweep_load": true}

// convert returns v in unit to, or false when the units do not convert.
func convert(v float64, from, to string) (float64, bool) {
	if from == to {
		return v, true
	}
	secs := map[string]float64{"ms": 1e-3, "s": 1, "min": 60}
	f, ok1 := secs[from]
	t, ok2 := secs[to]
	if ok1 && ok2 {
		return v * f / t, true
	}
	rates := map[string]bool{"ops/s": true, "records/s": true}
	if rates[from] && rates[to] {
		return v, true
	}
	return 0, false
}

// key groups the values and measures that differ only in node count.
func key(metric, op, db, access, dataset string) string {
	return strings.Join([]string{metric, op, db, access, dataset}, "|")
}

// standsFor returns the paper's node count that a measure at n nodes
// stands for, given the distinct node counts measured (one step's, in
// one group of values) and the paper's. Where every measured count is
// one of the paper's, each stands for itself (trajectory's 1–4 nodes);
// otherwise the scenario scaled the paper's cluster, and the k-th
// smallest measured count stands for the k-th smallest of the paper's
// (wiki's 1 → 2 → 4 for 6 → 12 → 24, and its 2 → 4 doubling for 6 → 12),
// the largest paper count for any beyond. 0 when the paper has none.
func standsFor(paper, measured []int, n int) int {
	if len(paper) == 0 {
		return 0
	}
	own := true
	for _, c := range measured {
		own = own && slices.Contains(paper, c)
	}
	if own && slices.Contains(paper, n) {
		return n
	}
	p, m := slices.Clone(paper), slices.Clone(measured)
	slices.Sort(p)
	slices.Sort(m)
	k := max(slices.Index(m, n), 0)
	return p[min(k, len(p)-1)]
}

// Match sets every value of s beside the measures. ran names the
// databases the plan has a step for; incomplete names those whose steps
// have no complete result.
func Match(s *Study, ms []Measure, ran, incomplete map[string]bool) []Row {
	// The paper's node counts per group, and each step's measured ones,
	// to map each measure to the paper's node count it stands for.
	paperNodes := map[string][]int{}
	for _, v := range s.Values {
		c := s.Effective(v)
		k := key(v.Metric, v.Operation, v.Database, c.Access, c.Dataset)
		if !containsInt(paperNodes[k], c.Nodes) {
			paperNodes[k] = append(paperNodes[k], c.Nodes)
		}
	}
	measuredNodes := map[string][]int{}
	for _, m := range ms {
		k := m.Step + "|" + key(m.Metric, m.Operation, m.Database, m.Access, m.Dataset)
		if !containsInt(measuredNodes[k], m.Nodes) {
			measuredNodes[k] = append(measuredNodes[k], m.Nodes)
		}
	}
	var rows []Row
	for _, v := range s.Values {
		c := s.Effective(v)
		r := Row{Value: v, Cond: c, Measured: math.NaN(), MeasuredSD: math.NaN(), Ratio: math.NaN()}
		switch {
		case v.Metric == "throughput_ratio":
			ratioRow(&r, ms, ran)
		default:
			k := key(v.Metric, v.Operation, v.Database, c.Access, c.Dataset)
			var cand, other []Measure
			for _, m := range ms {
				if m.Metric != v.Metric || (v.Operation != "" && m.Operation != v.Operation) {
					continue
				}
				if v.Database != EveryDatabase && m.Database != v.Database {
					continue
				}
				if (c.Access != "" && m.Access != c.Access) || (c.Dataset != "" && s.Workload == "trajectory" && m.Dataset != c.Dataset) {
					other = append(other, m)
					continue
				}
				mk := m.Step + "|" + key(m.Metric, m.Operation, m.Database, m.Access, m.Dataset)
				if c.Nodes > 0 && standsFor(paperNodes[k], measuredNodes[mk], m.Nodes) != c.Nodes {
					other = append(other, m)
					continue
				}
				cand = append(cand, m)
			}
			measuredRow(&r, cand, other)
		}
		if r.NotMeasured == "" && math.IsNaN(r.Measured) && len(r.Measures) == 0 {
			r.NotMeasured = notMeasured(v, ran, incomplete)
		}
		if !math.IsNaN(r.Measured) {
			if v.Value != 0 {
				r.Ratio = r.Measured / v.Value
			}
			r.Reasons = append(r.Reasons, reasons(v, c, r.Measures)...)
			r.Comparable = len(r.Reasons) == 0
		}
		rows = append(rows, r)
	}
	return rows
}

// measuredRow averages the candidate measures into r, in the value's unit.
func measuredRow(r *Row, cand, other []Measure) {
	v := r.Value
	var sum, sd float64
	var n int
	var fails []string
	for _, m := range cand {
		if m.Failed != "" || math.IsNaN(m.Value) {
			fails = append(fails, m.Step+": "+m.Failed)
			continue
		}
		x, ok := convert(m.Value, m.Unit, v.Unit)
		if !ok {
			continue
		}
		sum += x
		if !math.IsNaN(m.SD) {
			sd, _ = convert(m.SD, m.Unit, v.Unit)
		}
		n++
		r.Measures = append(r.Measures, m)
	}
	switch {
	case n > 0 && settings[v.Metric]:
		// A setting of the steps, not a figure to average: the largest
		// (the highest load any sweep reached).
		r.Measured = math.Inf(-1)
		for _, m := range r.Measures {
			x, _ := convert(m.Value, m.Unit, v.Unit)
			r.Measured = math.Max(r.Measured, x)
		}
		r.How = "the largest over " + describe(r.Measures)
	case n > 0:
		r.Measured = sum / float64(n)
		if n == 1 && sd > 0 {
			r.MeasuredSD = sd
		}
		if n > 1 && v.Metric != "ci_amplitude" {
			var ss float64
			for _, m := range r.Measures {
				x, _ := convert(m.Value, m.Unit, v.Unit)
				ss += (x - r.Measured) * (x - r.Measured)
			}
			r.MeasuredSD = math.Sqrt(ss / float64(n-1))
		}
		r.How = describe(r.Measures)
		if v.Metric == "ci_amplitude" {
			mx := 0.0
			for _, m := range r.Measures {
				mx = math.Max(mx, m.Value)
			}
			r.How += fmt.Sprintf("; mean over %d loads, largest %.1f %%", n, mx)
		} else if n > 1 {
			r.How += fmt.Sprintf("; mean of %d", n)
		}
	case len(fails) > 0:
		r.NotMeasured = "measured but failed: " + strings.Join(fails, "; ")
	case len(other) > 0:
		r.NotMeasured = "measured only under other conditions: " + conditionsOf(other)
	}
}

// ratioRow is a throughput ratio of the value's database over its versus
// database (never another one: a "cassandra vs couchbase" ratio is not
// divided by a third database's figure), at the loads both sweeps
// measured; over the best of the other NoSQL databases only when the
// value names no versus. The largest ratio when the paper gives an upper
// bound ("up to"), else the mean over the loads. ran names the databases
// the plan runs, to say why the versus database has no figure.
func ratioRow(r *Row, ms []Measure, ran map[string]bool) {
	v := r.Value
	byLoad := func(db string, other bool) map[int64]Measure {
		out := map[int64]Measure{}
		for _, m := range ms {
			if m.Metric != "throughput" || m.Operation != v.Operation || m.Failed != "" || m.N == 0 {
				continue
			}
			if (!other && m.Database != db) || (other && (m.Database == db || m.Database == "sqlserver")) {
				continue
			}
			if b, ok := out[m.Load]; !ok || m.Value > b.Value {
				out[m.Load] = m
			}
		}
		return out
	}
	mine := byLoad(v.Database, false)
	others := byLoad(v.Database, true)
	if v.Versus != "" {
		others = byLoad(v.Versus, false)
	}
	if len(mine) == 0 {
		for _, m := range ms {
			if m.Metric == "throughput" && m.Operation == v.Operation && m.Database == v.Database && m.Failed != "" {
				r.NotMeasured = "every load of " + v.Database + " failed (the failures are under the claims)"
				break
			}
		}
		return // else notMeasured says why
	}
	if len(others) == 0 && v.Versus != "" {
		switch {
		case !ran[v.Versus]:
			r.NotMeasured = fmt.Sprintf("not comparable: the paper's ratio is against %s, which no step of this study runs; no other database's figure stands in for it", v.Versus)
		default:
			r.NotMeasured = fmt.Sprintf("not comparable: the paper's ratio is against %s, which has no complete measure (every load failed, or its step has no result)", v.Versus)
		}
		return
	}
	if len(others) == 0 {
		r.NotMeasured = "no other NoSQL database of the study was measured in this study's steps"
		var failed []string
		for _, m := range ms {
			if m.Metric == "throughput" && m.Operation == v.Operation && m.Database != v.Database && m.Database != "sqlserver" && m.Failed != "" && !contains(failed, m.Database) {
				failed = append(failed, m.Database)
			}
		}
		if len(failed) > 0 {
			r.NotMeasured = "every load of " + strings.Join(failed, ", ") + " failed, so there is nothing to divide by (the failures are under the claims)"
		}
		return
	}
	var ratios []float64
	var used []Measure
	var loads []int64
	for l, a := range mine {
		if b, ok := others[l]; ok && b.Value > 0 {
			ratios = append(ratios, a.Value/b.Value)
			used = append(used, a, b)
			loads = append(loads, l)
		}
	}
	if len(ratios) == 0 {
		r.NotMeasured = "the sweeps share no load (records per source), so their throughputs cannot be divided"
		return
	}
	sort.Slice(loads, func(i, j int) bool { return loads[i] < loads[j] })
	r.Measures = used
	if v.Max != nil {
		r.Measured = ratios[0]
		for _, x := range ratios {
			r.Measured = math.Max(r.Measured, x)
		}
		r.How = fmt.Sprintf("largest ratio over %d common loads", len(ratios))
	} else {
		var s float64
		for _, x := range ratios {
			s += x
		}
		r.Measured = s / float64(len(ratios))
		r.How = fmt.Sprintf("mean ratio over %d common loads", len(ratios))
	}
	against := "the best other NoSQL database at each"
	if v.Versus != "" {
		against = v.Versus
	}
	r.How += fmt.Sprintf(" (%s–%s records per source) against %s; %s",
		report.Thousands(float64(loads[0])), report.Thousands(float64(loads[len(loads)-1])), against, describe(used))
}

// notMeasured says why no measure exists for v.
func notMeasured(v Value, ran, incomplete map[string]bool) string {
	db := v.Database
	switch {
	case db == UnstatedDatabase:
		return "the paper does not say which database; nothing to set it beside"
	case db != EveryDatabase && !ran[db]:
		return fmt.Sprintf("no step of this study runs %s (no server or stand-in for it in this plan)", db)
	case db != EveryDatabase && incomplete[db]:
		return fmt.Sprintf("the step(s) for %s have no complete result yet (not run, failed or interrupted)", db)
	}
	return fmt.Sprintf("fieldbench does not read %s from this study's results", Metrics[v.Metric])
}

// reasons lists why a measure is not comparable with the paper's value,
// from the value's conditions and what the result files recorded.
func reasons(v Value, c Conditions, ms []Measure) []string {
	var out []string
	add := func(s string) {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	if settings[v.Metric] {
		return nil
	}
	for _, m := range ms {
		if m.StandIn {
			add(fmt.Sprintf("stand-in server: %s, not %s", m.Server, m.Database))
		}
		if c.Nodes > 0 && m.Nodes > 0 && m.Nodes != c.Nodes && v.Metric != "throughput_ratio" {
			add(fmt.Sprintf("%d node(s) here, %d in the paper", m.Nodes, c.Nodes))
		}
		if c.NodesAfter > 0 && m.NodesAfter > 0 && m.NodesAfter != c.NodesAfter {
			add(fmt.Sprintf("%d → %d nodes here, %d → %d in the paper", m.Nodes, m.NodesAfter, c.Nodes, c.NodesAfter))
		}
		if c.ReplicationFactor > 0 && m.RF > 0 && m.RF != c.ReplicationFactor {
			add(fmt.Sprintf("replication factor %d here, %d in the paper", m.RF, c.ReplicationFactor))
		}
		if c.Consistency != "" && m.Consistency != "" && !strings.EqualFold(c.Consistency, m.Consistency) {
			add(fmt.Sprintf("consistency %s here, %s in the paper", m.Consistency, c.Consistency))
		}
		if m.Caveat != "" {
			add(m.Caveat)
		}
		if m.DatasetNote != "" {
			add("dataset scaled down: " + m.DatasetNote)
		}
		switch {
		case !(absolute[v.Unit] || machineBound[v.Metric]) || m.Cores <= 0:
		case m.Budget != "":
			// On budgets each node is a small machine of its own: an
			// absolute figure is one of machines of that size.
			add(fmt.Sprintf("each node a budget of %s of this machine's %d cores (the paper: dedicated machines)", strings.TrimSuffix(m.Budget, " each"), m.Cores))
		default:
			add(fmt.Sprintf("every node and the client share this machine's %d cores (the paper: dedicated machines)", m.Cores))
		}
	}
	return out
}

// describe names the steps and servers behind measures.
func describe(ms []Measure) string {
	var parts []string
	seen := map[string]bool{}
	for _, m := range ms {
		s := fmt.Sprintf("%s on %s", m.Step, m.Server)
		if m.How != "" && len(ms) == 1 {
			s += ": " + m.How
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// conditionsOf lists the distinct conditions of measures.
func conditionsOf(ms []Measure) string {
	var out []string
	for _, m := range ms {
		s := fmt.Sprintf("%d node(s)", m.Nodes)
		if m.Access != "" {
			s += " " + m.Access
		}
		if m.Dataset != "" {
			s += " " + m.Dataset
		}
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
