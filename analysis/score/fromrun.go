package score

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/stats"
)

// Names shared with the experiment runner: the series of request-set
// points, its labels, and the events of a join experiment.
const (
	SeriesRequestSet = "request-set"
	LabelSet         = "set"
	LabelStep        = "step"
	LabelNodes       = "nodes"
	LabelPartial     = "partial"

	EventJoin    = "join"         // bootstrap: nodes being added
	EventSettled = "data-settled" // the database reports no data moving
	EventStable  = "stable"       // stability detected online (recomputed here, not trusted)
)

// Scores is everything FromRun recomputes from a result file.
type Scores struct {
	Elasticity  []JoinScore
	Steps       []Step
	Scalability []Transition
	Notes       []string
}

// JoinScore is the elasticity of one join with where its inputs came from.
type JoinScore struct {
	Elasticity
	Step   string // the "step" label of its sets
	Detail string // the join event's detail, e.g. "+2 nodes"
	Joins  int    // join events merged into this bootstrap
	// NodesBefore and NodesAfter are the "nodes" labels of the last set
	// before the join and of the last set counted after it.
	NodesBefore, NodesAfter string
	// OnlineStable is when the runner's own detection fired (NaN when it
	// did not record one); StableAt is the recomputed moment.
	OnlineStable float64
	// Rt1Range and Rt2Range are the [from, to] seconds of the intervals
	// behind Rt1 and Rt2, and Rt1Ops, Rt2Ops their operation counts.
	Rt1Range, Rt2Range [2]float64
	Rt1Ops, Rt2Ops     int64
}

// MeanLatency is the mean time of one operation, all operations merged (s),
// over the intervals lying within [from, to] (Start >= from, End <= to),
// leaving out warm-up and drain intervals; with the number of operations.
// NaN when there is none.
func MeanLatency(run *result.Run, from, to float64) (float64, int64, error) {
	const slack = 1e-9 // interval bounds are decimal seconds
	var sum float64
	var n int64
	for _, iv := range run.Intervals {
		if iv.Warmup || iv.Drain || iv.Start < from-slack || iv.End > to+slack {
			continue
		}
		for op, oi := range iv.Ops {
			if oi.Hist == "" {
				continue
			}
			h, err := result.DecodeHist(oi.Hist)
			if err != nil {
				return math.NaN(), 0, fmt.Errorf("interval at %gs, %s: %w", iv.Start, op, err)
			}
			c := h.TotalCount()
			sum += h.Mean() * float64(c)
			n += c
		}
	}
	if n == 0 {
		return math.NaN(), 0, nil
	}
	return sum / float64(n) / 1e6, n, nil // µs → s
}

type rsPoint struct {
	result.Point
	counted bool // not warm-up, not failed, not partial
}

// joinGroup is one bootstrap: join events not separated by a data-settled
// event, in the same step.
type joinGroup struct {
	first, last float64
	detail      string
	joins       int
	step        string
	settled     float64
	online      float64
}

// FromRun recomputes every score from a result file alone: the elasticity
// of each join (stability recomputed from the points by every detector, the
// one named in the header driving the fields; the runner's own "stable"
// event is only reported beside it) and the scalability between
// consecutive steps. A join that cannot be scored is still listed, with
// Stable false and Notes saying why; the error is for a file that cannot be
// read (an undecodable histogram).
func FromRun(run *result.Run) (Scores, error) {
	return FromRunWith(run, OptionsOf(run))
}

// Header options of a result file that say how its experiment detected
// stability (the experiment runner writes them; see
// experiment.Stability.HeaderOptions). A file without them is scored with
// the defaults.
const (
	OptionDetector = "stability_detector"
	OptionWindow   = "stability_window"
)

// Options are the stability settings FromRunWith scores with.
type Options struct {
	// Detector drives the score shown first ("" = DefaultDetector); every
	// detector's verdict is computed anyway.
	Detector string
	// Window is the stability window (0 = DefaultWindow).
	Window int
}

// OptionsOf reads the stability settings from a result header; settings
// it cannot read are left to their defaults.
func OptionsOf(run *result.Run) Options {
	var o Options
	if d, ok := run.Header.Options[OptionDetector].(string); ok && KnownDetector(d) {
		o.Detector = d
	}
	switch w := run.Header.Options[OptionWindow].(type) {
	case float64: // a number read back from JSON
		if w >= 1 && w == math.Trunc(w) {
			o.Window = int(w)
		}
	case int:
		if w >= 1 {
			o.Window = w
		}
	}
	return o
}

// FromRunWith is FromRun with the stability settings given.
func FromRunWith(run *result.Run, opt Options) (Scores, error) {
	var sc Scores
	var pts []rsPoint
	for _, p := range run.Points {
		if p.Series != SeriesRequestSet {
			continue
		}
		counted := !p.Warmup && p.Failed == "" && p.Labels[LabelPartial] != "true" && finite(p.X) && finite(p.Y) && finite(p.SD) && p.SD >= 0
		pts = append(pts, rsPoint{Point: p, counted: counted})
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	if len(pts) == 0 {
		sc.Notes = append(sc.Notes, fmt.Sprintf("no %q points: nothing to score", SeriesRequestSet))
		return sc, nil
	}
	events := slices.Clone(run.Events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].At < events[j].At })

	// stepAt is the step of the last counted set ending at or before t.
	stepAt := func(t float64) (string, bool) {
		step, ok := "", false
		for _, p := range pts {
			if p.X > t {
				break
			}
			if p.counted {
				step, ok = p.Labels[LabelStep], true
			}
		}
		return step, ok
	}
	var groups []*joinGroup
	for _, ev := range events {
		switch ev.Name {
		case EventJoin:
			step, _ := stepAt(ev.At)
			if g := last(groups); g != nil && math.IsNaN(g.settled) && g.step == step {
				g.last = ev.At
				g.joins++
				continue
			}
			groups = append(groups, &joinGroup{first: ev.At, last: ev.At, detail: ev.Detail, joins: 1, step: step, settled: math.NaN(), online: math.NaN()})
		case EventSettled:
			if g := last(groups); g != nil && math.IsNaN(g.settled) {
				g.settled = ev.At
			}
		case EventStable:
			if g := last(groups); g != nil && math.IsNaN(g.online) {
				g.online = ev.At
			}
		}
	}

	var prevEnd float64 // lower bound for the next group's sets in the same step
	prevStep := ""
	for gi, g := range groups {
		js := JoinScore{Step: g.step, Detail: g.detail, Joins: g.joins, OnlineStable: g.online}
		lower := math.Inf(-1)
		if gi > 0 && prevStep == g.step {
			lower = prevEnd
		}
		upper := math.Inf(1)
		if gi+1 < len(groups) {
			upper = groups[gi+1].first
		}
		var sets []Set
		var pre, post []rsPoint
		for _, p := range pts {
			if !p.counted || p.Labels[LabelStep] != g.step || p.X <= lower || p.X >= upper {
				continue
			}
			if p.X <= g.first {
				pre = append(pre, p)
			} else {
				post = append(post, p)
			}
			sets = append(sets, Set{X: p.X, Y: p.Y, SD: p.SD})
		}
		if len(pre) > 0 {
			js.NodesBefore = pre[len(pre)-1].Labels[LabelNodes]
		}
		if len(post) > 0 {
			js.NodesAfter = post[len(post)-1].Labels[LabelNodes]
		}
		in := ElasticityInput{Sets: sets, Join: g.first, Settled: g.settled, Rt1: math.NaN(), Rt2: math.NaN()}

		// Rt1: intervals from the start of the first set before the join
		// (the end of the request-set point preceding it, warm-up ones
		// included) to the join.
		var rt1From float64
		if len(pre) > 0 {
			rt1From = previousX(pts, pre[0].X, lower)
		}
		js.Rt1Range = [2]float64{rt1From, g.first}
		rt1, n1, err := MeanLatency(run, rt1From, g.first)
		if err != nil {
			return sc, err
		}
		in.Rt1, js.Rt1Ops = rt1, n1

		// Rt2 covers the same span as Av2: from the stable window's start
		// (each detector's own) to the last set counted.
		lastX := sets[len(sets)-1].X
		rt2Ops := map[float64]int64{}
		var rt2Err error
		in.Rt2At = func(ws float64) float64 {
			rt2, n2, err := MeanLatency(run, ws, lastX)
			if err != nil && rt2Err == nil {
				rt2Err = err
			}
			rt2Ops[ws] = n2
			return rt2
		}
		in.Window = opt.Window
		in.Detector = opt.Detector
		e, err := ComputeElasticity(in)
		if rt2Err != nil {
			return sc, rt2Err
		}
		if e.Stable {
			js.Rt2Range = [2]float64{e.WindowStart, lastX}
			js.Rt2Ops = rt2Ops[e.WindowStart]
		}
		if err != nil {
			e.notef("%v", err)
		}
		if js.Rt1Ops == 0 {
			e.notef("no per-second interval lies between %gs and the join at %gs: Rt1 unknown", rt1From, g.first)
		}
		if e.Stable && js.Rt2Ops == 0 {
			e.notef("no per-second interval lies between the stable window's start %gs and the last set at %gs: Rt2 unknown", js.Rt2Range[0], js.Rt2Range[1])
		}
		if g.joins > 1 {
			e.notef("%d join events before data settled are one bootstrap, from the first at %gs", g.joins, g.first)
		}
		if finite(g.online) && e.Stable && math.Abs(g.online-e.StableAt) > 1 {
			e.notef("the runner detected stability at %.1fs; recomputed from the points: %.1fs", g.online, e.StableAt)
		}
		js.Elasticity = e
		sc.Elasticity = append(sc.Elasticity, js)

		prevStep = g.step
		switch {
		case e.Stable:
			prevEnd = e.StableAt
		case finite(g.settled):
			prevEnd = g.settled
		default:
			prevEnd = g.last
		}
	}

	sc.Steps = steps(pts, groups)
	sc.Scalability = ScalabilitySteps(sc.Steps)
	if len(sc.Steps) > 1 {
		for _, t := range sc.Scalability {
			if t.From.N == 0 || t.To.N == 0 {
				sc.Notes = append(sc.Notes, fmt.Sprintf("step %s or %s has no request set to average", t.From.Label, t.To.Label))
			}
		}
	}
	return sc, nil
}

// steps averages the counted sets of each step, up to the step's first join
// (the study's Table 4: "only the values measured before the bootstrap of
// the new nodes are taken into account"). Steps are ordered by their label
// as a number when every label is one, else by first appearance.
func steps(pts []rsPoint, groups []*joinGroup) []Step {
	var order []string
	ys := map[string][]float64{}
	nodes := map[string]string{}
	until := map[string]float64{}
	for _, g := range groups {
		if _, ok := until[g.step]; !ok {
			until[g.step] = g.first
		}
	}
	for _, p := range pts {
		if !p.counted {
			continue
		}
		l := p.Labels[LabelStep]
		if _, seen := ys[l]; !seen {
			order = append(order, l)
			ys[l] = nil
			nodes[l] = p.Labels[LabelNodes]
		}
		if u, ok := until[l]; ok && p.X > u {
			continue
		}
		ys[l] = append(ys[l], p.Y)
	}
	numeric := true
	for _, l := range order {
		if _, err := strconv.ParseFloat(l, 64); err != nil {
			numeric = false
		}
	}
	if numeric {
		sort.SliceStable(order, func(i, j int) bool {
			a, _ := strconv.ParseFloat(order[i], 64)
			b, _ := strconv.ParseFloat(order[j], 64)
			return a < b
		})
	}
	out := make([]Step, 0, len(order))
	for _, l := range order {
		s := Step{Label: l, Nodes: nodes[l], Avg: mean(ys[l]), SD: sampleSD(ys[l]), N: len(ys[l]), Until: math.NaN()}
		if u, ok := until[l]; ok {
			s.Until = u
		}
		out = append(out, s)
	}
	return out
}

// previousX is the end of the request-set point just before the one ending
// at x (any point, warm-up included), not earlier than lower; 0 when none.
func previousX(pts []rsPoint, x, lower float64) float64 {
	prev := math.Max(0, lower)
	if math.IsInf(lower, -1) {
		prev = 0
	}
	for _, p := range pts {
		if p.X >= x {
			break
		}
		if p.X > prev {
			prev = p.X
		}
	}
	return prev
}

// sampleSD is stats.SD (divisor n-1; NaN below two values).
func sampleSD(xs []float64) float64 { return stats.SD(xs) }

func last[T any](xs []*T) *T {
	if len(xs) == 0 {
		return nil
	}
	return xs[len(xs)-1]
}
