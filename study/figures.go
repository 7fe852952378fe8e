package study

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// The figures over time and by group that the HTML report draws beside
// the claims (microblog's latency by follower count, its join and crash
// timelines): read from a run's intervals, for drawing only — no verdict
// rests on them.

// GroupLatency is one operation's latency by group over a run's measured
// (post-warm-up) intervals: microblog's post latency by the author's
// follower count.
type GroupLatency struct {
	Run string
	Op  string
	By  string // what the groups are (the header's Groups: "author followers")
	// Points are one per group, in the groups' order: Y the mean latency
	// (ms), N the operations, the group in the "category" label.
	Points []result.Point
}

// timelineEvents are the events that make a microblog run a timeline to
// draw: a crash (kill, stop, restart) or a join.
var timelineEvents = map[string]bool{"kill": true, "stop-node": true, "restart": true, "remove": true,
	"add": true, "join": true, "joined": true, "node-added": true}

// opTimelines are, for a run with a crash or a join, each operation's p99
// latency (ms) per interval, with the run's events: nil for another run.
func opTimelines(r *result.Run) []Timeline {
	var ev []result.Event
	moved := false
	for _, e := range r.Events {
		if e.Name != boundEvent {
			ev = append(ev, e)
		}
		moved = moved || timelineEvents[e.Name]
	}
	if !moved {
		return nil
	}
	byOp := map[string][]result.Point{}
	for _, iv := range r.Intervals {
		for op, oi := range iv.Ops {
			if oi.Count == 0 || oi.Hist == "" {
				continue
			}
			h, err := result.DecodeHist(oi.Hist)
			if err != nil || h.TotalCount() == 0 {
				continue
			}
			byOp[op] = append(byOp[op], result.Point{X: (iv.Start + iv.End) / 2, Y: float64(h.ValueAtQuantile(99)) / 1000, N: int(oi.Count), Warmup: iv.Warmup})
		}
	}
	ops := make([]string, 0, len(byOp))
	for op := range byOp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var out []Timeline
	for _, op := range ops {
		out = append(out, Timeline{Run: r.Dir, Label: op + " p99", Points: byOp[op], Events: ev})
	}
	return out
}

// groupLatencies merges each grouped operation's histograms by group over
// the run's measured intervals.
func groupLatencies(r *result.Run) []GroupLatency {
	type acc struct {
		sum float64
		n   int64
	}
	by := map[string]map[string]*acc{}
	for _, iv := range r.Intervals {
		if iv.Warmup {
			continue
		}
		for op, labels := range iv.Groups {
			for label, enc := range labels {
				h, err := result.DecodeHist(enc)
				if err != nil || h.TotalCount() == 0 {
					continue
				}
				if by[op] == nil {
					by[op] = map[string]*acc{}
				}
				a := by[op][label]
				if a == nil {
					a = &acc{}
					by[op][label] = a
				}
				a.sum += h.Mean() * float64(h.TotalCount())
				a.n += h.TotalCount()
			}
		}
	}
	ops := make([]string, 0, len(by))
	for op := range by {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var out []GroupLatency
	for _, op := range ops {
		labels := make([]string, 0, len(by[op]))
		for l := range by[op] {
			labels = append(labels, l)
		}
		sort.Slice(labels, func(i, j int) bool { return groupLess(labels[i], labels[j]) })
		g := GroupLatency{Run: r.Dir, Op: op, By: r.Header.Groups[op]}
		for _, l := range labels {
			a := by[op][l]
			g.Points = append(g.Points, result.Point{Y: a.sum / float64(a.n) / 1000, N: int(a.n), Labels: map[string]string{"category": l}})
		}
		out = append(out, g)
	}
	return out
}

// groupLess orders group labels by their leading number ("8-15" before
// "16-31"), then as text.
func groupLess(a, b string) bool {
	na, ea := leadingNumber(a)
	nb, eb := leadingNumber(b)
	if ea && eb && na != nb {
		return na < nb
	}
	return a < b
}

func leadingNumber(s string) (float64, bool) {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end == 0 {
		return math.NaN(), false
	}
	if end < 0 {
		end = len(s)
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	return v, err == nil
}
