package study

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/stats"
)

// groupMeasures are op's latency in each of its groups (the result
// header's Groups: microblog's posts by the author's follower count), as
// steadyMeasures reads the operation's: the group's mean over the
// measured seconds, with the SD of its one-second means over the seconds
// in which it had an operation (N of them). Nothing when op has no
// groups.
func groupMeasures(r *result.Run, b Measure, op string) []Measure {
	by := r.Header.Groups[op]
	if by == "" {
		return nil
	}
	merged := map[string]*hdrhistogram.Histogram{}
	means := map[string][]float64{}
	for _, iv := range r.Intervals {
		if iv.Warmup || iv.Drain {
			continue
		}
		for label, enc := range iv.Groups[op] {
			h, err := result.DecodeHist(enc)
			if err != nil || h.TotalCount() == 0 {
				continue
			}
			if merged[label] == nil {
				merged[label] = result.NewHist()
			}
			merged[label].Merge(h)
			means[label] = append(means[label], h.Mean()/1000)
		}
	}
	var out []Measure
	labels := slices.Sorted(maps.Keys(merged))
	report.SortGroupLabels(labels)
	for _, label := range labels {
		h := merged[label]
		m := b
		m.Metric, m.Operation, m.Unit, m.Value = "latency_by_group", op, "ms", h.Mean()/1000
		m.Group, m.GroupBy = label, by
		m.SD = math.NaN()
		m.How = fmt.Sprintf("mean time of one %s of the group %s %s over the measured run (%s operations)", op, by, label, report.Thousands(float64(h.TotalCount())))
		if xs := means[label]; len(xs) >= 2 {
			m.SD, m.N = stats.SD(xs), len(xs)
			m.How += fmt.Sprintf("; SD of its %d one-second means", len(xs))
		}
		out = append(out, m)
	}
	return out
}

// sortedConds are the conditions of a database's sets, in the order the
// report names them.
func sortedConds(sets map[cond][]Measure) []cond {
	return slices.SortedFunc(maps.Keys(sets), func(a, b cond) int { return strings.Compare(a.String(), b.String()) })
}

// trendSets are a claim's latency_by_group measures of op, by database
// and then by the conditions they were taken under (one run's groups),
// each set in group order.
func trendSets(c Claim, ms []Measure, op string) map[string]map[cond][]Measure {
	out := map[string]map[cond][]Measure{}
	for _, m := range ms {
		if m.Metric != "latency_by_group" || (op != "" && m.Operation != op) || m.Failed != "" || math.IsNaN(m.Value) || !slices.Contains(c.Databases, m.Database) {
			continue
		}
		if out[m.Database] == nil {
			out[m.Database] = map[cond][]Measure{}
		}
		k := condOf(m)
		out[m.Database][k] = append(out[m.Database][k], m)
	}
	return out
}

// judgeTrend judges a claim that a figure rises (or falls) from the
// smallest group to the largest, database by database and run by run:
// the first and the last group with operations in trendSeconds or more
// seconds are compared by their intervals. Held where the last is
// apart from the first the way the paper says; not held where it is
// apart the other way or the intervals overlap (a tie: no change this run
// can tell from its noise); not judged where a database of the claim has
// no two groups with an interval.
func judgeTrend(c Claim, ms []Measure, op string, ran map[string]bool) (Verdict, string) {
	c.Databases = claimDatabases(c, ms)
	sets := trendSets(c, ms, op)
	var parts []outcome
	var missing []string
	for _, d := range c.Databases {
		if len(sets[d]) == 0 {
			missing = append(missing, absent(d, ran, msOf(ms, "latency_by_group", op), "latency by group"))
			continue
		}
		for _, k := range sortedConds(sets[d]) {
			parts = append(parts, trendOutcome(c, d, k, sets[d][k]))
		}
	}
	return combine(parts, missing)
}

// trendSeconds is the fewest one-second means a group needs to be
// compared: with two, the t interval is ±12.7 SDs of the mean, so the
// largest groups (a few posts a run) would make every trend a tie.
const trendSeconds = 5

// trendOutcome is one run's comparison of its first and last group with
// trendSeconds or more seconds of operations.
func trendOutcome(c Claim, db string, k cond, set []Measure) outcome {
	var with []Measure
	for _, m := range set {
		if m.N >= trendSeconds && spreadOf([]Measure{m}).ok {
			with = append(with, m)
		}
	}
	where := db
	if s := k.String(); s != "" {
		where += " at " + s
	}
	if len(with) < 2 {
		return outcome{NotJudged, fmt.Sprintf("%s: fewer than two groups of %s with operations in %d or more seconds, so no intervals to compare (%d groups)", where, set[0].GroupBy, trendSeconds, len(set))}
	}
	first, last := with[0], with[len(with)-1]
	a, b := spreadOf([]Measure{first}), spreadOf([]Measure{last})
	pair := fmt.Sprintf("%s %s %s → %s %s (ms, 95 %% intervals over each group's one-second means)", first.GroupBy, first.Group, a, last.Group, b)
	rises := b.lo > a.hi
	falls := a.lo > b.hi
	want := c.Trend == "rises"
	switch {
	case rises && want, falls && !want:
		return outcome{Held, fmt.Sprintf("%s: %s %s, %s", where, first.Operation, c.Trend, pair)}
	case rises || falls:
		word := "falls"
		if rises {
			word = "rises"
		}
		return outcome{NotHeld, fmt.Sprintf("%s: %s %s, against the paper (%s)", where, first.Operation, word, pair)}
	}
	return outcome{NotHeld, fmt.Sprintf("%s: a tie: %s overlap, so fieldbench could not confirm that it %s", where, pair, c.Trend)}
}

// trendFound lists, per database and run, op's figure in every group.
func trendFound(c Claim, ms []Measure, op string) string {
	c.Databases = claimDatabases(c, ms)
	sets := trendSets(c, ms, op)
	var parts []string
	for _, d := range c.Databases {
		for _, k := range sortedConds(sets[d]) {
			set := sets[d][k]
			var list []string
			for _, m := range set {
				list = append(list, fmt.Sprintf("%s %s", m.Group, spreadOf([]Measure{m})))
			}
			where := d + " (" + set[0].Server
			if s := k.String(); s != "" {
				where += ", " + s
			}
			parts = append(parts, fmt.Sprintf("%s) %s latency by %s (ms): %s", where, set[0].Operation, set[0].GroupBy, strings.Join(list, ", ")))
		}
	}
	if len(parts) == 0 {
		return "not measured for " + strings.Join(c.Databases, ", ") + " in this study's completed steps"
	}
	return strings.Join(parts, "; ")
}
