package studyrun

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/study"
)

// ClaimRow is one qualitative claim of the paper and what fieldbench found.
type ClaimRow struct {
	Claim study.Claim
	Found string
}

// lowerBetter are the metrics where less is better (a ranking of them
// puts the smallest first).
var lowerBetter = map[string]bool{
	"latency": true, "request_set_time": true, "elasticity_score": true, "stabilization_time": true,
	"data_transfer_time": true, "additional_time": true, "convergence_time": true, "join_time": true,
	"populate_time": true, "cluster_formation_time": true, "ci_amplitude": true,
}

// Claims states, for every claim of s, what the measures show where a
// mapping exists: a ranking of the databases measured by the claim's
// metric, failures, errors, or the change of throughput with nodes.
func Claims(s *study.Study, ms []Measure) []ClaimRow {
	var out []ClaimRow
	for _, c := range s.Claims {
		out = append(out, ClaimRow{Claim: c, Found: found(s, c, ms)})
	}
	return out
}

func found(s *study.Study, c study.Claim, ms []Measure) string {
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
	case study.Metrics[metric] != "" && len(c.Ranks) > 0 || metric == "ci_amplitude":
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
func ranking(c study.Claim, ms []Measure, metric, op string) string {
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
func claimOperation(c study.Claim, ms []Measure) string {
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
