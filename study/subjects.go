package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// A claim about a subject (Subjects: not a figure of its own) may still
// rest on figures fieldbench measures: sequential against random access
// and the dataset's size are conditions of the trajectory measures, a
// node's share of the data is the microblog runs' ownership, a request
// set's spread is the wiki runs' SD. subjectFigures says which measures
// bear on each such subject; bearing sets them out beside the claim, and
// subjectVerdict says why the claim is still not judged (issue 41: no
// claim says "no mapping" where fieldbench measures what it rests on).
var subjectFigures = map[string][]string{
	"access_order": {"throughput", "latency"},
	"dataset_size": {"throughput", "latency"},
	"load_balance": {"ownership"},
	"stability":    {"request_set_time"},
}

// notRead are subjects fieldbench records in each step's own result but
// the study report does not read, with what it records.
var notRead = map[string]string{
	"disk":         "each node's data directory size (the node-disk series of each step's report)",
	"load_balance": "each node's share of regions, slots or tokens (cluster status, the ownership series)",
}

// bearing sets out the measures of ms that bear on claim c's subject, ok
// false when none does.
func bearing(c Claim, ms []Measure) (string, bool) {
	metrics := subjectFigures[c.About]
	dbs := claimDatabases(c, ms)
	var rel []Measure
	for _, m := range ms {
		if slices.Contains(metrics, m.Metric) && m.Failed == "" && !math.IsNaN(m.Value) && slices.Contains(dbs, m.Database) {
			rel = append(rel, m)
		}
	}
	if len(rel) == 0 {
		if what, ok := notRead[c.About]; ok {
			return "not read: fieldbench records " + what + ", but the study report does not read it", true
		}
		if len(metrics) > 0 {
			return "not measured in this study's completed steps (fieldbench reads it from their " + strings.Join(metrics, " and ") + ")", true
		}
		return "", false
	}
	switch c.About {
	case "access_order":
		return pairs(rel, func(m Measure) string { return m.Access }, "sequential", "random"), true
	case "dataset_size":
		return series(rel, func(m Measure) string { return m.Dataset }), true
	}
	var parts []string
	for _, m := range rel {
		p := fmt.Sprintf("%s %s at %s: %s %s", m.Database, m.Metric, condOf(m), num(m.Value), m.Unit)
		if !math.IsNaN(m.SD) {
			p += " ± " + num(m.SD) + " SD"
			if m.Value != 0 {
				p += fmt.Sprintf(" (%.0f %% of the mean)", 100*m.SD/math.Abs(m.Value))
			}
		}
		parts = append(parts, p+" ("+m.Step+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, "; "), true
}

// subjectVerdict is why a claim about a subject whose figures bearing
// sets out is not judged: the paper states no figure or bound for the
// subject, and one run per condition gives no interval to tell two
// conditions apart.
func subjectVerdict(c Claim, ms []Measure) string {
	if _, ok := bearing(c, ms); !ok {
		return ""
	}
	if !slices.ContainsFunc(ms, func(m Measure) bool { return slices.Contains(subjectFigures[c.About], m.Metric) }) {
		if what, ok := notRead[c.About]; ok {
			return "fieldbench records " + what + ", but the study report does not read it"
		}
		return "nothing measured of it in this study's completed steps"
	}
	switch c.About {
	case "access_order", "dataset_size":
		return "one run per condition: no interval tells the conditions apart (the figures are beside the claim, for orientation)"
	}
	return "the paper states no figure or bound for " + Subjects[c.About] + " that fieldbench could test (its related figures are beside the claim)"
}

// pairs sets the measures of one key's two values side by side, each
// other condition alike: a's figure, b's and b over a.
func pairs(ms []Measure, key func(Measure) string, a, b string) string {
	type at struct{ db, metric, op, cond string }
	by := map[at]map[string]Measure{}
	for _, m := range ms {
		k := m
		k.Access = ""
		if k.Dataset != "" {
			k.Load = 0 // trajectory: the scale, named by the dataset
		}
		id := at{m.Database, m.Metric, m.Operation, condOf(k).String()}
		if by[id] == nil {
			by[id] = map[string]Measure{}
		}
		by[id][key(m)] = m
	}
	var parts []string
	for id, v := range by {
		x, okA := v[a]
		y, okB := v[b]
		if !okA || !okB {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s at %s: %s %s %s, %s %s %s (%.2f×)", id.db, id.op, id.metric, id.cond, a, num(x.Value), x.Unit, b, num(y.Value), y.Unit, y.Value/x.Value))
	}
	if len(parts) == 0 {
		return "no condition measured both " + a + " and " + b
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// series lists each database's figure along key (the dataset), every
// other condition alike, in key's order.
func series(ms []Measure, key func(Measure) string) string {
	type at struct{ db, metric, op, cond string }
	by := map[at][]Measure{}
	for _, m := range ms {
		k := m
		k.Dataset, k.Size, k.Load = "", "", 0
		id := at{m.Database, m.Metric, m.Operation, condOf(k).String()}
		by[id] = append(by[id], m)
	}
	var parts []string
	for id, list := range by {
		if len(list) < 2 {
			continue
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Load < list[j].Load })
		var steps []string
		for _, m := range list {
			steps = append(steps, fmt.Sprintf("%s %s", key(m), num(m.Value)))
		}
		parts = append(parts, fmt.Sprintf("%s %s %s at %s (%s): %s", id.db, id.op, id.metric, id.cond, list[0].Unit, strings.Join(steps, " → ")))
	}
	if len(parts) == 0 {
		return "no database measured at two dataset sizes under otherwise equal conditions"
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
