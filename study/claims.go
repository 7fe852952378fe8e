package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ClaimRow is one qualitative claim of the paper and what fieldbench found.
type ClaimRow struct {
	Claim Claim
	Found string
}

// lowerBetter are the metrics where less is better (a ranking of them
// puts the smallest first).
var lowerBetter = map[string]bool{
	"latency": true, "request_set_time": true, "elasticity_score": true, "stabilization_time": true,
	"data_transfer_time": true, "additional_time": true, "convergence_time": true, "join_time": true,
	"populate_time": true, "cluster_formation_time": true, "ci_amplitude": true, "scalability_score": true,
}

// Claims states, for every claim of s, what the measures show where a
// mapping exists: a ranking of the databases measured by the claim's
// metric, failures, errors, or the change of throughput with nodes.
func Claims(s *Study, ms []Measure) []ClaimRow {
	var out []ClaimRow
	for _, c := range s.Claims {
		out = append(out, ClaimRow{Claim: c, Found: found(s, c, ms)})
	}
	return out
}

func found(s *Study, c Claim, ms []Measure) string {
	op := ""
	for _, id := range c.Values {
		if v, ok := s.Value(id); ok && v.Operation != "" {
			op = v.Operation
			break
		}
	}
	if op == "" {
		op = claimOperation(c, ms)
	}
	metric := c.About
	if c.About == "stability" && s.Name == "ingest" {
		metric = "ci_amplitude" // the paper judges stability by the intervals' width
	}
	switch {
	case c.Per != "":
		return perScale(s, c, ms, metric, op)
	case c.About == "errors":
		var parts []string
		for _, m := range ms {
			if m.Metric == "errors" {
				parts = append(parts, fmt.Sprintf("%s: %s failed operations on %s (%s)", m.Step, num(m.Value), m.Server, m.How))
			}
		}
		if len(parts) == 0 {
			return "not measured in this study's completed steps"
		}
		return strings.Join(parts, "; ")
	case c.About == "failure":
		var parts []string
		for _, m := range ms {
			if m.Failed != "" {
				parts = append(parts, fmt.Sprintf("%s (%s) failed at %s: %s", m.Database, m.Server, where(m), m.Failed))
			}
		}
		if len(parts) == 0 {
			if len(ms) == 0 {
				return "not measured in this study's completed steps"
			}
			return "no measurement of this study's steps failed"
		}
		return strings.Join(parts, "; ")
	case c.About == "scalability" && len(c.Ranks) == 0:
		return scaling(ms, op)
	case Metrics[metric] != "" && len(c.Ranks) > 0 || metric == "ci_amplitude":
		return ranking(c, ms, metric, op)
	}
	return "no mapping: fieldbench's steps for this study do not measure it"
}

// where names a measure's conditions.
func where(m Measure) string {
	s := fmt.Sprintf("%d node(s)", m.Nodes)
	if m.Load > 0 {
		s = fmt.Sprintf("%s records per source", num(float64(m.Load)))
	}
	if m.Access != "" {
		s += ", " + m.Access
	}
	if m.Dataset != "" {
		s += ", " + m.Dataset
	}
	return s
}

// ranking orders the databases fieldbench measured by the mean of their
// measures of metric and compares with the paper's order.
func ranking(c Claim, ms []Measure, metric, op string) string {
	type agg struct {
		db     string
		sum    float64
		n      int
		server string
	}
	by := map[string]*agg{}
	for _, m := range ms {
		if m.Metric != metric || (op != "" && m.Operation != op) || m.Failed != "" || math.IsNaN(m.Value) {
			continue
		}
		a := by[m.Database]
		if a == nil {
			a = &agg{db: m.Database, server: m.Server}
			by[m.Database] = a
		}
		a.sum += m.Value
		a.n++
	}
	if len(by) == 0 {
		return "not measured in this study's completed steps"
	}
	if op == "" && len(operations(ms, metric)) > 1 {
		return "not compared: the claim names no operation and fieldbench measured " + metric + " of " + strings.Join(operations(ms, metric), " and ")
	}
	var list []*agg
	for _, a := range by {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool {
		x, y := list[i].sum/float64(list[i].n), list[j].sum/float64(list[j].n)
		if lowerBetter[metric] {
			return x < y
		}
		return x > y
	})
	var parts, order []string
	for _, a := range list {
		parts = append(parts, fmt.Sprintf("%s %s (%s, mean of %d)", a.db, num(a.sum/float64(a.n)), a.server, a.n))
		order = append(order, a.db)
	}
	s := "by " + metric
	if op != "" {
		s += " of " + op
	}
	s += ", best first: " + strings.Join(parts, " > ")
	if len(list) < 2 {
		return s + "; only one database measured, so no order to compare"
	}
	var paper []string
	for _, d := range c.Ranks {
		if by[d] != nil {
			paper = append(paper, d)
		}
	}
	if len(paper) == len(order) {
		verdict := "the same order as the paper"
		if strings.Join(paper, ",") != strings.Join(order, ",") {
			verdict = "a different order from the paper's (" + strings.Join(paper, " > ") + ")"
		}
		s += "; " + verdict
	}
	return s + ". Averaged over every condition measured, on this machine's shared cores and with stand-ins where the steps table says: an orientation, not a finding"
}

// scaling is each database's throughput at its largest node count over
// its smallest, at the same operation, access order and dataset.
func scaling(ms []Measure, op string) string {
	type k struct{ db, op, access, dataset string }
	lo, hi := map[k]Measure{}, map[k]Measure{}
	for _, m := range ms {
		if m.Metric != "throughput" || m.Failed != "" || (op != "" && m.Operation != op) {
			continue
		}
		kk := k{m.Database, m.Operation, m.Access, m.Dataset}
		if l, ok := lo[kk]; !ok || m.Nodes < l.Nodes {
			lo[kk] = m
		}
		if h, ok := hi[kk]; !ok || m.Nodes > h.Nodes {
			hi[kk] = m
		}
	}
	var parts []string
	for kk, l := range lo {
		h := hi[kk]
		if h.Nodes == l.Nodes || l.Value <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s %s: %d → %d nodes ×%.2f", kk.db, kk.op, kk.access, kk.dataset, l.Nodes, h.Nodes, h.Value/l.Value))
	}
	if len(parts) == 0 {
		return "no database was measured at more than one node count in this study's completed steps"
	}
	sort.Strings(parts)
	return "throughput at the largest node count over the smallest (every node on this machine's shared cores): " + strings.Join(parts, "; ")
}

// operations lists the operations measures of metric are of.
func operations(ms []Measure, metric string) []string {
	var out []string
	for _, m := range ms {
		if m.Metric == metric && m.Operation != "" && !contains(out, m.Operation) {
			out = append(out, m.Operation)
		}
	}
	sort.Strings(out)
	return out
}

// claimOperation is the operation a claim is about when its values do not
// say: the trajectory study's claims name "write" or "read" in their id
// (a read there is the distance query, the only read the paper tabulates).
func claimOperation(c Claim, ms []Measure) string {
	ops := operations(ms, c.About)
	id := strings.ToLower(c.ID)
	for _, op := range ops {
		if strings.Contains(id, op) {
			return op
		}
	}
	if strings.Contains(id, "read") {
		for _, op := range ops {
			if op != "write" {
				return op
			}
		}
	}
	return ""
}

// perScale judges a claim with Per at each of the paper's scales it names
// (Claim.At, else every one the paper measured): the databases measured
// there ranked by the claim's metric against the paper's order, the best
// at each scale and whether one database is best at all of them. A
// step's node counts stand for the paper's as in Match (standsFor): the
// k-th smallest a step measured for the paper's k-th smallest.
func perScale(s *Study, c Claim, ms []Measure, metric, op string) string {
	scales := s.Scales(metric, c.Per)
	var paper []int
	for _, sc := range scales {
		paper = append(paper, sc.Nodes)
	}
	transition := c.Per == "transition"
	use := func(m Measure) bool {
		return m.Metric == metric && (op == "" || m.Operation == op) && (m.NodesAfter > 0) == transition && m.Nodes > 0
	}
	// Each step's node counts, to map a measure to the paper's count.
	stepNodes := map[string][]int{}
	for _, m := range ms {
		if use(m) && !slices.Contains(stepNodes[m.Step], m.Nodes) {
			stepNodes[m.Step] = append(stepNodes[m.Step], m.Nodes)
		}
	}
	type agg struct {
		db      string
		sum     float64
		n       int
		servers []string
		here    []string // the measured counts or transitions standing for the paper's
	}
	at := map[int]map[string]*agg{}
	failed := map[int][]string{}
	for _, m := range ms {
		if !use(m) {
			continue
		}
		p := standsFor(paper, stepNodes[m.Step], m.Nodes)
		if m.Failed != "" || math.IsNaN(m.Value) {
			failed[p] = append(failed[p], fmt.Sprintf("%s failed (%s)", m.Database, m.Failed))
			continue
		}
		if at[p] == nil {
			at[p] = map[string]*agg{}
		}
		a := at[p][m.Database]
		if a == nil {
			a = &agg{db: m.Database}
			at[p][m.Database] = a
		}
		a.sum += m.Value
		a.n++
		if !slices.Contains(a.servers, m.Server) {
			a.servers = append(a.servers, m.Server)
		}
		here := strconv.Itoa(m.Nodes)
		if transition {
			here += " → " + strconv.Itoa(m.NodesAfter)
		}
		if !slices.Contains(a.here, here) {
			a.here = append(a.here, here)
		}
	}
	mean := func(a *agg) float64 { return a.sum / float64(a.n) }
	var parts, bestAt []string
	best := map[string]int{} // scales at which each database was best, of those with two or more measured
	compared := 0
	for _, sc := range scales {
		if len(c.At) > 0 && !slices.Contains(c.At, sc.Nodes) {
			continue
		}
		head := "at " + sc.String()
		var list []*agg
		for _, a := range at[sc.Nodes] {
			list = append(list, a)
		}
		if len(list) == 0 {
			why := "not measured (no step measured a node count standing for it)"
			if f := failed[sc.Nodes]; len(f) > 0 {
				why = "not measured: " + strings.Join(f, ", ")
			}
			parts = append(parts, head+": "+why)
			continue
		}
		sort.Slice(list, func(i, j int) bool {
			x, y := mean(list[i]), mean(list[j])
			if x != y {
				if lowerBetter[metric] {
					return x < y
				}
				return x > y
			}
			return list[i].db < list[j].db
		})
		var figs, order []string
		for _, a := range list {
			f := fmt.Sprintf("%s %s (%s, here %s nodes", a.db, num(mean(a)), strings.Join(a.servers, ", "), strings.Join(a.here, ", "))
			if a.n > 1 {
				f += fmt.Sprintf(", mean of %d", a.n)
			}
			if metric == "scalability_score" {
				f += ", " + scalabilitySign(mean(a))
			}
			figs = append(figs, f+")")
			order = append(order, a.db)
		}
		p := head + ", best first: " + strings.Join(figs, " > ")
		var missing []string
		for _, d := range c.Databases {
			if at[sc.Nodes][d] == nil {
				missing = append(missing, d)
			}
		}
		if len(missing) > 0 {
			p += "; " + strings.Join(missing, ", ") + " not measured"
		}
		if len(list) < 2 {
			p += "; only one database measured, so no order to compare"
			parts = append(parts, p)
			continue
		}
		compared++
		best[list[0].db]++
		bestAt = append(bestAt, list[0].db+" at "+sc.String())
		var ranks []string
		for _, d := range c.Ranks {
			if at[sc.Nodes][d] != nil {
				ranks = append(ranks, d)
			}
		}
		if len(ranks) == len(order) {
			if strings.Join(ranks, ",") == strings.Join(order, ",") {
				p += "; the same order as the paper"
			} else {
				p += "; a different order from the paper's (" + strings.Join(ranks, " > ") + ")"
			}
		}
		parts = append(parts, p)
	}
	var all string
	switch {
	case len(c.At) == 1:
		// One scale named: its ranking is the answer.
	case compared == 0:
		all = "no scale had two databases measured, so no best to name"
	case compared == 1:
		all = "best: " + bestAt[0] + ", the only scale with two databases measured, so not whether one is best at every scale"
	case len(best) == 1:
		all = "one database best at every scale with two or more measured (" + strings.Join(bestAt, ", ") + ")"
	default:
		all = "no database best at every scale measured (" + strings.Join(bestAt, ", ") + ")"
	}
	s0 := "by " + metric
	if op != "" {
		s0 += " of " + op
	}
	if all != "" {
		all = ". " + all
	}
	return s0 + " " + perName(c.Per) + ": " + strings.Join(parts, "; ") + all + ". " +
		"Each step's k-th smallest node count stands for the paper's k-th smallest; on this machine's shared cores and with stand-ins where the steps table says: an orientation, not a finding"
}

// perName names how a claim with Per is judged, for the report.
func perName(per string) string {
	if per == "transition" {
		return "at each transition"
	}
	return "at each node count"
}

// scalabilitySign reads a scalability score: 0 is linear (the request
// sets as fast after the doubling), negative superlinear, positive slower.
func scalabilitySign(v float64) string {
	switch {
	case v < 0:
		return "negative: superlinear"
	case v == 0:
		return "linear"
	}
	return "positive: slower after the doubling"
}
