package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/report"
)

// ClaimRow is one qualitative claim of the paper, its verdict with the
// reason, and what fieldbench found (the evidence beside the verdict).
type ClaimRow struct {
	Claim   Claim
	Verdict Verdict
	Reason  string
	Found   string
}

// lowerBetter are the metrics where less is better (a ranking of them
// puts the smallest first).
var lowerBetter = map[string]bool{
	"latency": true, "latency_by_group": true, "request_set_time": true, "elasticity_score": true, "stabilization_time": true,
	"data_transfer_time": true, "additional_time": true, "convergence_time": true, "join_time": true,
	"populate_time": true, "cluster_formation_time": true, "ci_amplitude": true, "scalability_score": true,
}

// Claims gives every claim of s its verdict and reason (judge, then the
// budget rule: budgetRule) and what the measures show (found). ran names the databases the plan has a step
// for; nil: those with a measure.
func Claims(s *Study, ms []Measure, ran map[string]bool) []ClaimRow {
	if ran == nil {
		ran = map[string]bool{}
		for _, m := range ms {
			ran[m.Database] = true
		}
	}
	var out []ClaimRow
	for _, c := range s.Claims {
		v, why := judge(s, c, ms, ran)
		v, why = budgetRule(s, c, ms, v, why)
		out = append(out, ClaimRow{Claim: c, Verdict: v, Reason: why, Found: found(s, c, ms)})
	}
	return out
}

// Tally counts the rows' verdicts.
func Tally(rows []ClaimRow) map[Verdict]int {
	out := map[Verdict]int{}
	for _, r := range rows {
		out[r.Verdict]++
	}
	return out
}

// claimOp is the operation a claim is about: its values', else the one
// its id names (claimOperation).
func claimOp(s *Study, c Claim, ms []Measure) string {
	for _, id := range c.Values {
		if v, ok := s.Value(id); ok && v.Operation != "" {
			return v.Operation
		}
	}
	return claimOperation(c, ms)
}

func found(s *Study, c Claim, ms []Measure) string {
	op := claimOp(s, c, ms)
	metric := c.About
	switch {
	case c.About == "stability" && s.Name == "ingest":
		return "the paper states no measure of steadiness: it reads it off Figures 3–4 (\"the most stable throughput among all the databases tested\"). For orientation only, not the paper's criterion: " +
			ranking(s, c, ms, "ci_amplitude", op)
	case c.Per != "":
		return perScale(s, c, ms, metric, op)
	case c.About == "errors":
		var parts []string
		for _, m := range ms {
			if m.Metric == "errors" && slices.Contains(claimDatabases(c, ms), m.Database) {
				parts = append(parts, fmt.Sprintf("%s: %s failed operations on %s (%s)", m.Step, num(m.Value), m.Server, m.How))
			}
		}
		if len(parts) == 0 {
			return "not measured for " + strings.Join(c.Databases, ", ") + " in this study's completed steps"
		}
		return strings.Join(parts, "; ")
	case c.About == "failure":
		return failures(c, ms)
	case c.Trend != "":
		return trendFound(c, ms, op)
	case c.About == "scalability" && len(c.Ranks) == 0:
		return scaling(ms, op)
	case reads(s, metric):
		return ranking(s, c, ms, metric, op)
	}
	if Metrics[metric] != "" {
		return "not read: the study report takes no " + metric + " from this study's result files (" + Metrics[metric] + "); each step's own report may show it"
	}
	if t, ok := bearing(c, ms); ok {
		return t
	}
	return "no mapping: " + metric + " (" + Subjects[metric] + ") is not a figure fieldbench measures in this study's steps"
}

// failures lists, for a failure claim, each of its databases: those the
// paper says failed first, then those it says finished; a database
// without a measure is said never to have run here.
func failures(c Claim, ms []Measure) string {
	c.Databases = claimDatabases(c, ms)
	fails := c.Fails
	if len(fails) == 0 {
		fails = c.Databases
	}
	var parts []string
	for _, d := range c.Databases {
		said := "the paper: it finished"
		if slices.Contains(fails, d) {
			said = "the paper: it failed"
		}
		var failed []string
		n := 0
		server := ""
		for _, m := range ms {
			if m.Database != d {
				continue
			}
			n++
			server = m.Server
			if m.Failed != "" {
				failed = append(failed, fmt.Sprintf("at %s: %s", where(m), m.Failed))
			}
		}
		switch {
		case n == 0:
			parts = append(parts, fmt.Sprintf("%s (%s): never ran here, so nothing failed or finished", d, said))
		case len(failed) == 0:
			parts = append(parts, fmt.Sprintf("%s (%s): %s finished all %d measures", d, said, server, n))
		default:
			parts = append(parts, fmt.Sprintf("%s (%s): %s failed %d of %d measures, %s", d, said, server, len(failed), n, strings.Join(failed, "; ")))
		}
	}
	return strings.Join(parts, "; ")
}

// where names a measure's conditions.
func where(m Measure) string {
	s := fmt.Sprintf("%d node(s)", m.Nodes)
	if m.Load > 0 {
		s = fmt.Sprintf("%s records per source", report.Thousands(float64(m.Load)))
	}
	if m.Access != "" {
		s += ", " + m.Access
	}
	if m.Dataset != "" {
		s += ", " + m.Dataset
	}
	return s
}

// ranking orders the claim's databases fieldbench measured by metric
// (and op) under each set of equal conditions, best first, and sets the
// order beside the paper's: its ranks, else the order of its values the
// claim names under the same conditions. A measured database the paper
// does not rank is stated. Nothing is averaged over unequal conditions.
func ranking(s *Study, c Claim, ms []Measure, metric, op string) string {
	if op == "" && len(operations(ms, metric)) > 1 {
		return "not compared: the claim names no operation and fieldbench measured " + metric + " of " + strings.Join(operations(ms, metric), " and ")
	}
	var rel []Measure
	for _, m := range ms {
		if m.Metric != metric || (op != "" && m.Operation != op) || m.Failed != "" || math.IsNaN(m.Value) {
			continue
		}
		if len(c.Databases) > 0 && !slices.Contains(c.Databases, m.Database) {
			continue
		}
		rel = append(rel, m)
	}
	if len(rel) == 0 {
		return "not measured in this study's completed steps"
	}
	paper := paperOrders(s, c, metric)
	g, keys := groups(rel)
	var parts []string
	for _, k := range keys {
		var list []string
		for d := range g[k] {
			list = append(list, d)
		}
		sp := map[string]spread{}
		for _, d := range list {
			sp[d] = spreadOf(g[k][d])
		}
		sort.Slice(list, func(i, j int) bool {
			x, y := sp[list[i]].mean, sp[list[j]].mean
			if x != y {
				if lowerBetter[metric] {
					return x < y
				}
				return x > y
			}
			return list[i] < list[j]
		})
		var figs []string
		for _, d := range list {
			f := fmt.Sprintf("%s %s (%s", d, sp[d], g[k][d][0].Server)
			if sp[d].ok {
				f += ", " + sp[d].from
			} else if len(g[k][d]) == 1 {
				f += ", one run"
			}
			figs = append(figs, f+")")
		}
		p := "at " + k.String() + ": " + strings.Join(figs, " > ")
		order := c.Ranks
		if len(order) == 0 {
			order = paper[paperKey{k.nodes, k.after, k.access, k.dataset}]
		}
		var unranked, ranked []string
		for _, d := range list {
			if len(order) > 0 && !slices.Contains(order, d) {
				unranked = append(unranked, d)
			}
		}
		for _, d := range order {
			if slices.Contains(list, d) {
				ranked = append(ranked, d)
			}
		}
		if len(unranked) > 0 {
			p += "; " + strings.Join(unranked, ", ") + " measured but not ranked by the paper"
		}
		switch {
		case len(list) < 2:
			p += "; only one database measured under these conditions"
		case len(ranked) >= 2:
			var mine []string
			for _, d := range list {
				if slices.Contains(ranked, d) {
					mine = append(mine, d)
				}
			}
			if strings.Join(mine, ",") == strings.Join(ranked, ",") {
				p += "; by the means, the paper's order"
			} else {
				p += "; by the means, not the paper's order (" + strings.Join(ranked, " > ") + ")"
			}
		}
		parts = append(parts, p)
	}
	h := "by " + metric
	if op != "" {
		h += " of " + op
	}
	return h + ", best first, under each set of equal conditions: " + strings.Join(parts, "; ") +
		". On this machine's shared cores and with stand-ins where the steps table says"
}

// paperKey is the conditions of a paper's value an order is given at.
type paperKey struct {
	nodes, after    int
	access, dataset string
}

// paperOrders are the orders (best first) of the databases by the claim's
// values of metric at each of the paper's conditions: the paper's own
// figures stand for an order where the claim has no ranks.
func paperOrders(s *Study, c Claim, metric string) map[paperKey][]string {
	vals := map[paperKey]map[string]float64{}
	for _, id := range c.Values {
		v, ok := s.Value(id)
		if !ok || v.Metric != metric || v.Database == EveryDatabase || v.Database == UnstatedDatabase {
			continue
		}
		e := s.Effective(v)
		k := paperKey{e.Nodes, e.NodesAfter, e.Access, e.Dataset}
		if vals[k] == nil {
			vals[k] = map[string]float64{}
		}
		vals[k][v.Database] = v.Value
	}
	out := map[paperKey][]string{}
	for k, by := range vals {
		var dbs []string
		for d := range by {
			dbs = append(dbs, d)
		}
		sort.Slice(dbs, func(i, j int) bool {
			if lowerBetter[metric] {
				return by[dbs[i]] < by[dbs[j]]
			}
			return by[dbs[i]] > by[dbs[j]]
		})
		if len(dbs) >= 2 {
			out[k] = dbs
		}
	}
	return out
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
	if c.About == "scalability" {
		ops = operations(ms, "throughput") // judged by throughput against nodes
	}
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
