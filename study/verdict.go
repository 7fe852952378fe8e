package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/stats"
)

// Verdict is what the measures say of a claim: one of Held, NotHeld and
// NotJudged. docs/studies.md gives the rules.
type Verdict string

// The three verdicts.
const (
	// Held: every comparison the claim makes was measured under equal
	// conditions and came out as the paper says, the intervals apart.
	Held Verdict = "held"
	// NotHeld: a comparison came out the other way with the intervals
	// apart, or the intervals overlap (a tie) where the paper names an
	// order: fieldbench could not confirm it. The reason says which.
	NotHeld Verdict = "not held"
	// NotJudged: the measures cannot answer the claim here; the reason
	// says why (a database the plan does not run, a scale no step
	// reached, a metric not measured, one run and so no interval,
	// unequal conditions).
	NotJudged Verdict = "not judged here"
)

// Verdicts lists the verdicts in the order the tally gives them.
func Verdicts() []Verdict { return []Verdict{Held, NotHeld, NotJudged} }

// level is the confidence level of the intervals compared.
const level = 0.95

// readMetrics are the metrics this package reads from each workload's
// results (measure.go): a claim about one of them is never "no mapping".
var readMetrics = map[string][]string{
	"ingest":     {"throughput", "ci_amplitude", "record_size", "sweep_load"},
	"trajectory": {"throughput", "latency"},
	"wiki":       {"elasticity_score", "data_transfer_time", "additional_time", "stabilization_time", "request_set_time", "scalability_score"},
	"microblog":  {"cluster_formation_time", "populate_time", "ownership", "convergence_time", "errors", "latency", "latency_by_group", "join_time", "cpu_idle"},
}

// reads reports whether fieldbench reads metric from s's workload's
// results (the study's name when the file names no workload).
func reads(s *Study, metric string) bool {
	w := s.Workload
	if w == "" {
		w = s.Name
	}
	return slices.Contains(readMetrics[w], metric)
}

// claimDatabases are the databases a claim is about; a claim naming none
// is about every database measured.
func claimDatabases(c Claim, ms []Measure) []string {
	if len(c.Databases) > 0 {
		return c.Databases
	}
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m.Database) {
			out = append(out, m.Database)
		}
	}
	return out
}

// cond is what two measures must share to be ranked against each other:
// node count (and the count after a transition), access order, dataset
// and its size, load and request-set size.
type cond struct {
	nodes, after    int
	access, dataset string
	size            string
	load            int64
	requests        int
}

func condOf(m Measure) cond {
	return cond{nodes: m.Nodes, after: m.NodesAfter, access: m.Access, dataset: m.Dataset, size: m.Size, load: m.Load, requests: m.Requests}
}

// String names the conditions as the report does.
func (c cond) String() string {
	var p []string
	switch {
	case c.after > 0:
		p = append(p, fmt.Sprintf("%d → %d nodes", c.nodes, c.after))
	case c.nodes > 0:
		p = append(p, fmt.Sprintf("%d node(s)", c.nodes))
	}
	if c.load > 0 {
		p = append(p, report.Thousands(float64(c.load))+" records per source")
	}
	for _, s := range []string{c.access, c.dataset} {
		if s != "" {
			p = append(p, s)
		}
	}
	if c.size != "" {
		p = append(p, c.size)
	}
	if c.requests > 0 {
		p = append(p, report.Thousands(float64(c.requests))+" requests per set")
	}
	return strings.Join(p, ", ")
}

// differ names what differs between two conditions.
func differ(a, b cond) []string {
	var out []string
	if a.nodes != b.nodes || a.after != b.after {
		out = append(out, "node count")
	}
	if a.access != b.access {
		out = append(out, "access order")
	}
	if a.dataset != b.dataset || a.size != b.size {
		out = append(out, "dataset size")
	}
	if a.load != b.load {
		out = append(out, "load")
	}
	if a.requests != b.requests {
		out = append(out, "request-set size")
	}
	return out
}

// spread is a database's figure under one condition with its interval.
type spread struct {
	mean, lo, hi float64
	n            int
	ok           bool   // an interval exists
	from         string // where the interval comes from
}

// spreadOf is the mean of measures taken under one condition with its 95 %
// interval: the measure's own interval over its runs (ingest: the sweep's
// runs at the load), else the Student-t interval of one measure's
// samples from its SD and count (wiki: the request sets executed), else
// the t interval over the measures when there are two or more (a step
// repeated); one measure without either has no interval.
func spreadOf(ms []Measure) spread {
	var xs []float64
	for _, m := range ms {
		if m.Failed == "" && !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			xs = append(xs, m.Value)
		}
	}
	switch {
	case len(xs) == 0:
		return spread{mean: math.NaN()}
	case len(xs) == 1:
		m := ms[0]
		for _, x := range ms {
			if x.Failed == "" && !math.IsNaN(x.Value) {
				m = x
			}
		}
		if m.Hi > m.Lo {
			return spread{mean: m.Value, lo: m.Lo, hi: m.Hi, n: m.N, ok: true, from: fmt.Sprintf("95 %% interval over %d runs", m.N)}
		}
		if !math.IsNaN(m.SD) && m.N >= 2 {
			half := stats.TQuantile(0.5+level/2, float64(m.N-1)) * m.SD / math.Sqrt(float64(m.N))
			return spread{mean: m.Value, lo: m.Value - half, hi: m.Value + half, n: m.N, ok: true, from: fmt.Sprintf("95 %% interval over %d samples", m.N)}
		}
		return spread{mean: m.Value, n: 1}
	}
	iv, err := stats.MeanCI(xs, level)
	if err != nil {
		return spread{mean: stats.Mean(xs), n: len(xs)}
	}
	return spread{mean: iv.Mean, lo: iv.Lo, hi: iv.Hi, n: iv.N, ok: true, from: fmt.Sprintf("95 %% interval over %d runs", iv.N)}
}

func (s spread) String() string {
	if !s.ok {
		return num(s.mean)
	}
	return fmt.Sprintf("%s [%s, %s]", num(s.mean), num(s.lo), num(s.hi))
}

// better reports how a stands to b by metric: 1 when a is better with the
// intervals apart, -1 when b is, 0 when they overlap (a tie).
func better(metric string, a, b spread) int {
	sign := 1
	if lowerBetter[metric] {
		sign = -1
	}
	switch {
	case a.lo > b.hi:
		return sign
	case b.lo > a.hi:
		return -sign
	}
	return 0
}

// outcome is the verdict of one comparison of a claim, with its reason.
type outcome struct {
	v   Verdict
	why string
}

// judgeOrder compares the databases of one group of measures taken under
// equal conditions (by) in the order the paper gives (best first), each
// adjacent pair of those measured by their intervals. ok is false when
// fewer than two of the order's databases are in the group.
func judgeOrder(metric string, order []string, by map[string][]Measure, where string) (outcome, bool) {
	var present []string
	for _, d := range order {
		if len(by[d]) > 0 {
			present = append(present, d)
		}
	}
	if len(present) < 2 {
		return outcome{}, false
	}
	sp := map[string]spread{}
	var single []string
	for _, d := range present {
		sp[d] = spreadOf(by[d])
		if !sp[d].ok {
			single = append(single, d)
		}
	}
	if len(single) > 0 {
		return outcome{NotJudged, fmt.Sprintf("at %s, one run of %s, so no interval to compare", where, strings.Join(single, " and "))}, true
	}
	var against, ties, held []string
	for i := 1; i < len(present); i++ {
		a, b := present[i-1], present[i]
		pair := fmt.Sprintf("%s %s and %s %s", a, sp[a], b, sp[b])
		switch better(metric, sp[a], sp[b]) {
		case 1:
			held = append(held, fmt.Sprintf("%s above %s (%s, apart)", a, b, pair))
		case -1:
			against = append(against, fmt.Sprintf("%s above %s, against the paper (%s, apart)", b, a, pair))
		default:
			ties = append(ties, fmt.Sprintf("a tie: %s overlap, so fieldbench could not confirm %s above %s", pair, a, b))
		}
	}
	switch {
	case len(against) > 0:
		return outcome{NotHeld, "at " + where + ", " + strings.Join(append(against, ties...), "; ")}, true
	case len(ties) > 0:
		return outcome{NotHeld, "at " + where + ", " + strings.Join(ties, "; ")}, true
	}
	return outcome{Held, "at " + where + ", " + strings.Join(held, "; ")}, true
}

// combine is a claim's verdict from its comparisons and the parts it could
// not compare (missing): not held when any comparison is; else not
// judged when anything is missing or not judged; else held. The reason of
// a verdict other than held names the comparisons that did hold too.
func combine(parts []outcome, missing []string) (Verdict, string) {
	var not, unjudged, held []string
	for _, p := range parts {
		switch p.v {
		case NotHeld:
			not = append(not, p.why)
		case NotJudged:
			unjudged = append(unjudged, p.why)
		default:
			held = append(held, p.why)
		}
	}
	switch {
	case len(not) > 0:
		if len(held) > 0 {
			not = append(not, "as the paper says: "+strings.Join(held, "; "))
		}
		return NotHeld, strings.Join(not, "; ")
	case len(missing) > 0 || len(unjudged) > 0:
		var why []string
		for _, m := range append(slices.Clone(missing), unjudged...) {
			if !slices.Contains(why, m) {
				why = append(why, m)
			}
		}
		if len(held) > 0 {
			why = append(why, "as the paper says: "+strings.Join(held, "; "))
		}
		return NotJudged, strings.Join(why, "; ")
	case len(held) == 0:
		return NotJudged, "nothing measured to compare"
	}
	return Held, strings.Join(held, "; ")
}

// absent says why db has no measure of the claim's metric: the plan runs
// no step for it, or its steps have no figure.
func absent(db string, ran map[string]bool, ms []Measure, what string) string {
	if !ran[db] {
		return fmt.Sprintf("%s: no step of this study's plan runs it", db)
	}
	var failed []string
	for _, m := range ms {
		if m.Database == db && m.Failed != "" && !slices.Contains(failed, m.Failed) {
			failed = append(failed, m.Failed)
		}
	}
	if len(failed) > 0 {
		return fmt.Sprintf("%s: every measure of %s failed (%s)", db, what, short(strings.Join(failed, "; "), 160))
	}
	return fmt.Sprintf("%s: no complete measure of %s", db, what)
}

// groups sorts measures by their conditions, then database.
func groups(ms []Measure) (map[cond]map[string][]Measure, []cond) {
	out := map[cond]map[string][]Measure{}
	var keys []cond
	for _, m := range ms {
		k := condOf(m)
		if out[k] == nil {
			out[k] = map[string][]Measure{}
			keys = append(keys, k)
		}
		out[k][m.Database] = append(out[k][m.Database], m)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return out, keys
}

// compareAll judges order over measures (of one metric and operation, and
// at one of the paper's scales for a claim with Per): each group of equal
// conditions with two or more of order's databases is a comparison; when
// no group has two, but two databases were measured, the conditions were
// unequal and the reason says what differs.
func compareAll(metric string, order []string, ms []Measure) ([]outcome, bool) {
	g, keys := groups(ms)
	var parts []outcome
	compared := map[string]bool{}
	for _, k := range keys {
		if o, ok := judgeOrder(metric, order, g[k], k.String()); ok {
			parts = append(parts, o)
			for _, d := range order {
				if len(g[k][d]) > 0 {
					compared[d] = true
				}
			}
		}
	}
	if len(parts) > 0 {
		// A database measured only where no other one was is stated, not
		// left out silently.
		for _, d := range order {
			var at []string
			for _, k := range keys {
				if len(g[k][d]) > 0 {
					at = append(at, k.String())
				}
			}
			if len(at) > 0 && !compared[d] {
				parts = append(parts, outcome{NotJudged, fmt.Sprintf("unequal conditions: %s was measured only at %s, where no other database of the claim was", d, strings.Join(at, " and "))})
			}
		}
		return parts, true
	}
	// Which databases were measured, and under what.
	at := map[string][]cond{}
	var dbs []string
	for _, k := range keys {
		for _, d := range order {
			if len(g[k][d]) > 0 {
				if len(at[d]) == 0 {
					dbs = append(dbs, d)
				}
				at[d] = append(at[d], k)
			}
		}
	}
	if len(dbs) < 2 {
		return nil, false
	}
	var where, what []string
	for _, d := range dbs {
		var cs []string
		for _, c := range at[d] {
			cs = append(cs, c.String())
		}
		where = append(where, d+" at "+strings.Join(cs, " and "))
	}
	for _, a := range at[dbs[0]] {
		for _, d := range dbs[1:] {
			for _, b := range at[d] {
				for _, f := range differ(a, b) {
					if !slices.Contains(what, f) {
						what = append(what, f)
					}
				}
			}
		}
	}
	return []outcome{{NotJudged, "unequal conditions, no two databases measured under the same: " + strings.Join(where, "; ") + " (they differ in " + strings.Join(what, ", ") + ")"}}, true
}

// judge is claim c's verdict from the measures, with its reason.
func judge(s *Study, c Claim, ms []Measure, ran map[string]bool) (Verdict, string) {
	op := claimOp(s, c, ms)
	metric := c.About
	c.Databases = claimDatabases(c, ms)
	var notRun []string
	for _, d := range c.Databases {
		if !ran[d] {
			notRun = append(notRun, fmt.Sprintf("%s: no step of this study's plan runs it", d))
		}
	}
	switch {
	case c.About == "failure":
		return judgeFailure(s, c, ms, ran)
	case c.About == "errors":
		return judgeErrors(s, c, ms, ran)
	case c.Trend != "":
		return judgeTrend(c, ms, op, ran)
	case c.About == "scalability" && len(c.Ranks) == 0:
		return judgeScaling(c, ms, op, ran)
	case c.About == "stability" && s.Name == "ingest":
		return NotJudged, strings.Join(append(notRun,
			"the paper states no measure of steadiness (it reads it off Figures 3–4), so there is no figure to test; the intervals' width is a statement of its method, not of this claim"), "; ")
	case !reads(s, metric):
		what := Metrics[metric]
		if what == "" {
			what = Subjects[metric]
		}
		why := fmt.Sprintf("fieldbench's study report reads no %s from this study's result files (%s)", metric, what)
		if sv := subjectVerdict(c, ms); sv != "" {
			why = sv
		}
		if c.Hint {
			why += "; the paper only reports it as hinted at by tests it does not show"
		}
		return NotJudged, strings.Join(append(notRun, why), "; ")
	}
	if op == "" && len(operations(ms, metric)) > 1 {
		return NotJudged, strings.Join(append(notRun, "the claim names no operation, and fieldbench measured "+metric+" of "+strings.Join(operations(ms, metric), " and ")), "; ")
	}
	var rel []Measure
	for _, m := range ms {
		if m.Metric == metric && (op == "" || m.Operation == op) && m.Failed == "" && !math.IsNaN(m.Value) && slices.Contains(c.Databases, m.Database) {
			rel = append(rel, m)
		}
	}
	missingOf := func(order []string, in []Measure, at, because string) []string {
		var out []string
		for _, d := range order {
			if slices.ContainsFunc(in, func(m Measure) bool { return m.Database == d }) {
				continue
			}
			if !ran[d] {
				out = append(out, fmt.Sprintf("%s: no step of this study's plan runs it", d))
			} else if at != "" {
				out = append(out, fmt.Sprintf("%s: not measured at %s (%s)", d, at, because))
			} else {
				out = append(out, absent(d, ran, msOf(ms, metric, op), metric))
			}
		}
		return out
	}
	switch {
	case c.Per != "":
		return judgePerScale(s, c, rel, metric, missingOf)
	case len(c.Ranks) >= 2:
		parts, _ := compareAll(metric, c.Ranks, rel)
		return combine(parts, missingOf(c.Ranks, rel, "", ""))
	}
	// No ranks: the order of the paper's own figures the claim names,
	// under each of their conditions.
	orders := paperOrders(s, c, metric)
	if len(orders) == 0 {
		why := "the claim gives no order of databases (no ranks, and no two of the paper's figures of " + metric + " beside it) that fieldbench could test"
		if len(rel) == 0 {
			why = "nothing measured of " + metric + " for " + strings.Join(c.Databases, ", ")
		}
		return NotJudged, strings.Join(append(notRun, why), "; ")
	}
	var keys []paperKey
	for k := range orders {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	var parts []outcome
	var missing []string
	for _, k := range keys {
		var at []Measure
		for _, m := range rel {
			if m.Nodes == k.nodes && m.NodesAfter == k.after && (k.access == "" || m.Access == k.access) && (k.dataset == "" || m.Dataset == k.dataset) {
				at = append(at, m)
			}
		}
		where := cond{nodes: k.nodes, after: k.after, access: k.access, dataset: k.dataset}.String()
		missing = append(missing, missingOf(orders[k], at, where, "no step measured it there")...)
		if p, ok := compareAll(metric, orders[k], at); ok {
			parts = append(parts, p...)
		}
	}
	return combine(parts, missing)
}

// msOf are the measures of metric (and op), failed ones included.
func msOf(ms []Measure, metric, op string) []Measure {
	var out []Measure
	for _, m := range ms {
		if m.Metric == metric && (op == "" || m.Operation == op) {
			out = append(out, m)
		}
	}
	return out
}

// judgePerScale judges a claim with Per at each of the paper's scales it
// names: the measures standing for the scale (as perScale maps them),
// compared under equal conditions in the paper's order; a claim without
// ranks (no database best at every scale) by the best at each scale.
func judgePerScale(s *Study, c Claim, rel []Measure, metric string, missingOf func([]string, []Measure, string, string) []string) (Verdict, string) {
	scales := s.Scales(metric, c.Per)
	var paper []int
	for _, sc := range scales {
		paper = append(paper, sc.Nodes)
	}
	transition := c.Per == "transition"
	stepNodes := map[string][]int{}
	for _, m := range rel {
		if (m.NodesAfter > 0) == transition && !slices.Contains(stepNodes[m.Step], m.Nodes) {
			stepNodes[m.Step] = append(stepNodes[m.Step], m.Nodes)
		}
	}
	order := c.Ranks
	if len(order) == 0 {
		order = c.Databases
	}
	var parts []outcome
	var missing []string
	bests := map[string]int{}
	judgedScales := 0
	for _, sc := range scales {
		if len(c.At) > 0 && !slices.Contains(c.At, sc.Nodes) {
			continue
		}
		var at []Measure
		for _, m := range rel {
			if (m.NodesAfter > 0) == transition && m.Nodes > 0 && standsFor(paper, stepNodes[m.Step], m.Nodes) == sc.Nodes {
				at = append(at, m)
			}
		}
		missing = append(missing, missingOf(order, at, "the paper's "+sc.String(), "no step measured a node count standing for it")...)
		if len(c.Ranks) >= 2 {
			if p, ok := compareAll(metric, c.Ranks, at); ok {
				for _, o := range p {
					parts = append(parts, outcome{o.v, "(the paper's " + sc.String() + ") " + o.why})
				}
			}
			continue
		}
		// No ranks: which database is best here, the intervals apart.
		best, o, ok := bestAt(metric, order, at, sc.String())
		if !ok {
			continue
		}
		if best == "" {
			parts = append(parts, o)
			continue
		}
		judgedScales++
		bests[best]++
	}
	if len(c.Ranks) >= 2 {
		return combine(parts, missing)
	}
	// "No database is best at every scale."
	switch {
	case len(bests) >= 2:
		var names []string
		for d := range bests {
			names = append(names, d)
		}
		sort.Strings(names)
		return Held, "different databases are best, the intervals apart, at different scales (" + strings.Join(names, ", ") + ")"
	case len(missing) > 0 || len(parts) > 0:
		v, why := combine(parts, missing)
		if v == NotHeld {
			v = NotJudged // a tie for best says nothing of the other scales
		}
		return v, why
	case judgedScales > 1 && len(bests) == 1:
		for d := range bests {
			return NotHeld, fmt.Sprintf("%s is best at every scale measured, the intervals apart", d)
		}
	}
	return NotJudged, "fewer than two scales with a best database to compare"
}

// bestAt is the database better than every other at one scale with the
// intervals apart ("" with the reason when there is a tie or no
// interval); ok is false when fewer than two databases were measured
// under equal conditions.
func bestAt(metric string, order []string, at []Measure, where string) (string, outcome, bool) {
	g, keys := groups(at)
	for _, k := range keys {
		var present []string
		for _, d := range order {
			if len(g[k][d]) > 0 {
				present = append(present, d)
			}
		}
		if len(present) < 2 {
			continue
		}
		sp := map[string]spread{}
		for _, d := range present {
			sp[d] = spreadOf(g[k][d])
			if !sp[d].ok {
				return "", outcome{NotJudged, fmt.Sprintf("at the paper's %s (here %s), one run of %s, so no interval", where, k, d)}, true
			}
		}
		for _, a := range present {
			wins := true
			for _, b := range present {
				if a != b && better(metric, sp[a], sp[b]) != 1 {
					wins = false
				}
			}
			if wins {
				return a, outcome{Held, ""}, true
			}
		}
		return "", outcome{NotJudged, fmt.Sprintf("at the paper's %s (here %s), a tie for best", where, k)}, true
	}
	if parts, ok := compareAll(metric, order, at); ok {
		return "", parts[0], true
	}
	return "", outcome{}, false
}

// judgeFailure: each database the claim says failed must have failed
// under the claim's conditions, each other one finished everything. A
// database that never ran, or did not reach the claim's conditions (its
// node count, the paper's highest load), is not judged.
func judgeFailure(s *Study, c Claim, ms []Measure, ran map[string]bool) (Verdict, string) {
	c.Databases = claimDatabases(c, ms)
	fails := c.Fails
	if len(fails) == 0 {
		fails = c.Databases
	}
	var parts []outcome
	var missing []string
	for _, d := range c.Databases {
		var dms []Measure
		for _, m := range ms {
			if m.Database == d {
				dms = append(dms, m)
			}
		}
		if !ran[d] {
			missing = append(missing, fmt.Sprintf("%s never ran here: no step of this study's plan runs it", d))
			continue
		}
		if len(dms) == 0 {
			missing = append(missing, fmt.Sprintf("%s: its steps have no complete result", d))
			continue
		}
		var failed []string
		maxLoad, maxNodes := int64(0), 0
		for _, m := range dms {
			if m.Failed != "" {
				failed = append(failed, where(m))
			}
			maxLoad, maxNodes = max(maxLoad, m.Load), max(maxNodes, m.Nodes)
		}
		if !slices.Contains(fails, d) {
			if len(failed) > 0 {
				parts = append(parts, outcome{NotHeld, fmt.Sprintf("%s failed at %s, where the paper says it finished", d, short(strings.Join(failed, ", "), 200))})
			} else {
				parts = append(parts, outcome{Held, d + " finished every measure, as the paper says"})
			}
			continue
		}
		switch {
		case len(failed) > 0:
			parts = append(parts, outcome{Held, fmt.Sprintf("%s failed at %s", d, short(strings.Join(failed, ", "), 200))})
		case c.Conditions.RecordsPerSource > 0 && maxLoad < c.Conditions.RecordsPerSource:
			parts = append(parts, outcome{NotJudged, fmt.Sprintf("%s finished every load it ran, up to %s records per source, below the %s the claim is about",
				d, report.Thousands(float64(maxLoad)), report.Thousands(float64(c.Conditions.RecordsPerSource)))})
		case c.Conditions.Nodes > 0 && maxNodes < c.Conditions.Nodes:
			parts = append(parts, outcome{NotJudged, fmt.Sprintf("%s finished every measure, on up to %d node(s), below the %d the claim is about", d, maxNodes, c.Conditions.Nodes)})
		default:
			parts = append(parts, outcome{NotHeld, d + " finished every measure, where the paper says it failed"})
		}
	}
	v, _ := combine(parts, missing)
	var why []string
	why = append(why, missing...)
	for _, p := range parts {
		why = append(why, p.why)
	}
	return v, strings.Join(why, "; ")
}

// judgeErrors: the failed operations each of the claim's databases had
// against the paper's count (its values of errors; none: 0). A count is
// an observation, not an estimate: no interval is needed.
func judgeErrors(s *Study, c Claim, ms []Measure, ran map[string]bool) (Verdict, string) {
	want := map[string]float64{}
	for _, id := range c.Values {
		if v, ok := s.Value(id); ok && v.Metric == "errors" {
			want[v.Database] = v.Value
		}
	}
	var parts []outcome
	var missing []string
	for _, d := range c.Databases {
		var dms []Measure
		for _, m := range ms {
			if m.Database == d && m.Metric == "errors" && m.Failed == "" {
				dms = append(dms, m)
			}
		}
		if len(dms) == 0 {
			if !ran[d] {
				missing = append(missing, fmt.Sprintf("%s: no step of this study's plan runs it", d))
			} else {
				missing = append(missing, fmt.Sprintf("%s: no step of this plan counted its errors", d))
			}
			continue
		}
		for _, m := range dms {
			here := fmt.Sprintf("%s failed operations in %s (%s)", num(m.Value), m.Step, where(m))
			if m.Value == want[d] {
				parts = append(parts, outcome{Held, fmt.Sprintf("%s: %s, as the paper's %s", d, here, num(want[d]))})
			} else {
				parts = append(parts, outcome{NotHeld, fmt.Sprintf("%s: %s, the paper %s", d, here, num(want[d]))})
			}
		}
	}
	v, _ := combine(parts, missing)
	var why []string
	for _, p := range parts {
		why = append(why, p.why)
	}
	return v, strings.Join(append(why, missing...), "; ")
}

// judgeScaling is a scalability claim without ranks: each of its
// databases' throughput at its smallest and largest node count under
// otherwise equal conditions, by their intervals. The study file says no
// expected change per database, so the changes are stated and the claim
// is not judged; without intervals the reason is the missing runs.
func judgeScaling(c Claim, ms []Measure, op string, ran map[string]bool) (Verdict, string) {
	type k struct {
		db, op string
		c      cond
	}
	by := map[k]map[int][]Measure{}
	for _, m := range ms {
		if m.Metric != "throughput" || m.Failed != "" || (op != "" && m.Operation != op) || !slices.Contains(c.Databases, m.Database) {
			continue
		}
		cc := condOf(m)
		cc.nodes = 0
		kk := k{m.Database, m.Operation, cc}
		if by[kk] == nil {
			by[kk] = map[int][]Measure{}
		}
		by[kk][m.Nodes] = append(by[kk][m.Nodes], m)
	}
	var why []string
	for _, d := range c.Databases {
		if !ran[d] {
			why = append(why, fmt.Sprintf("%s: no step of this study's plan runs it", d))
		}
	}
	var single, changes []string
	for kk, at := range by {
		var ns []int
		for n := range at {
			ns = append(ns, n)
		}
		if len(ns) < 2 {
			continue
		}
		slices.Sort(ns)
		lo, hi := spreadOf(at[ns[0]]), spreadOf(at[ns[len(ns)-1]])
		if !lo.ok || !hi.ok {
			if !slices.Contains(single, kk.db) {
				single = append(single, kk.db)
			}
			continue
		}
		word := "flat (the intervals overlap)"
		switch better("throughput", hi, lo) {
		case 1:
			word = "rises"
		case -1:
			word = "falls"
		}
		changes = append(changes, fmt.Sprintf("%s %s %d → %d nodes (%s): %s", kk.db, kk.op, ns[0], ns[len(ns)-1], kk.c, word))
	}
	sort.Strings(single)
	sort.Strings(changes)
	switch {
	case len(single) > 0:
		why = append(why, "one run per node count of "+strings.Join(single, ", ")+", so no interval to tell a change from noise")
	case len(changes) == 0:
		why = append(why, "no database of the claim was measured at two node counts under otherwise equal conditions")
	default:
		why = append(why, "the study file does not say which change the paper expects of each database; measured: "+strings.Join(changes, "; "))
	}
	if c.Hint {
		why = append(why, "the paper only reports it as hinted at by tests it does not show")
	}
	return NotJudged, strings.Join(why, "; ")
}
