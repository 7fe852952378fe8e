package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/analysis/score"
)

// The elasticity section redraws the study's Figures 5–12 for every join of
// a run with request-set points (seed 002): request-set time against time,
// the cubic spline through it with its ±SD band, the ramp a perfectly elastic
// cluster would follow from (bootstrap, Av1) to (stable, Av2), and the two
// areas the score adds up, A (between curve and ramp) and B (the SD band
// above the curve), over [bootstrap, stable]. Every figure comes from
// package score, which recomputes it from the result file alone; the report
// only draws and tabulates what score returns, so the page and the scores
// subcommand cannot disagree.

const (
	areaAColor  = "#fdae6b" // A: curve vs ramp
	areaBColor  = "#9e9ac8" // B: SD band above the curve
	rampColor   = "#222"
	momentColor = "#444"
	splineSteps = 240 // samples of a spline across the chart
)

// runScores is one run's recomputed scores.
type runScores struct {
	d   *runData
	sc  score.Scores
	err error
}

// scoredRuns recomputes the scores of every run with request-set points.
func scoredRuns(data []*runData) []runScores {
	var out []runScores
	for _, d := range data {
		has := false
		for _, p := range d.run.Points {
			if p.Series == score.SeriesRequestSet {
				has = true
				break
			}
		}
		if !has {
			continue
		}
		sc, err := score.FromRun(d.run)
		out = append(out, runScores{d: d, sc: sc, err: err})
	}
	return out
}

// elasticity writes the "Elasticity and scalability" section.
func (p *page) elasticity() {
	runs := scoredRuns(p.data)
	if len(runs) == 0 {
		return
	}
	show := false
	for _, r := range runs {
		show = show || r.err != nil || len(r.sc.Elasticity) > 0 || len(r.sc.Steps) > 1
	}
	if !show {
		return // request sets without a join or steps: the series chart says it all
	}
	p.printf("<h2>Elasticity and scalability</h2>\n")
	for _, r := range runs {
		if r.err != nil {
			p.printf("<div class=\"note\">%s: scores could not be computed: %s</div>\n", esc(r.d.name), esc(r.err.Error()))
			continue
		}
		for _, n := range r.sc.Notes {
			p.printf("<div class=\"note\">%s: %s</div>\n", esc(r.d.name), esc(n))
		}
		if len(r.sc.Elasticity) > 0 {
			p.printf("<div class=\"charts\">\n")
			for i, js := range r.sc.Elasticity {
				p.printf("<div class=\"series\">\n%s", elasticityChart(r.d, js, i, len(r.sc.Elasticity)))
				p.elasticityTable(js)
				p.printf("</div>\n")
			}
			p.printf("</div>\n")
		}
		if len(r.sc.Steps) > 1 {
			p.scalabilityTable(r.d, r.sc)
		}
	}
}

// joinTitle names a join: "run-x: elasticity, join +2 nodes (3 → 6 nodes)".
func joinTitle(d *runData, js score.JoinScore, i, n int) string {
	t := d.name + ": elasticity"
	if n > 1 {
		t += " " + strconv.Itoa(i+1) + " of " + strconv.Itoa(n)
	}
	if js.Detail != "" {
		t += ", join " + js.Detail
	}
	if js.NodesBefore != "" && js.NodesAfter != "" {
		t += " (" + js.NodesBefore + " → " + js.NodesAfter + " nodes)"
	}
	return t
}

// elasticityChart draws one join.
func elasticityChart(d *runData, js score.JoinScore, i, n int) string {
	e := js.Elasticity
	xs := make([]float64, len(e.Sets))
	ys := make([]float64, len(e.Sets))
	sds := make([]float64, len(e.Sets))
	hiY, hiX := 0.0, 0.0
	for k, s := range e.Sets {
		xs[k], ys[k], sds[k] = s.X, s.Y, s.SD
		hiY, hiX = math.Max(hiY, s.Y+s.SD), math.Max(hiX, s.X)
	}
	curve, cerr := score.NewSpline(xs, ys)
	band, berr := score.NewSpline(xs, sds)
	splines := cerr == nil && berr == nil
	// The splines can swing above every point between two of them.
	if splines {
		for k := 0; k <= splineSteps; k++ {
			t := xs[0] + (xs[len(xs)-1]-xs[0])*float64(k)/splineSteps
			hiY = math.Max(hiY, curve.At(t)+math.Max(0, band.At(t)))
		}
	}
	if e.Stable {
		hiY = math.Max(hiY, math.Max(e.Av1, e.Av2))
	}
	c := timeChart(joinTitle(d, js, i, n), linearAxis("request-set time (s)", 0, hiY, 5, fmtNumber), []*runData{d}, hiX)
	c.x.title = "request set end (s since start)"
	if splines {
		sample := func(from, to float64, f func(float64) float64) ([]float64, []float64) {
			var ts, vs []float64
			// Bounded whatever the figures: an extreme or NaN ratio gives
			// at most ten times the whole curve's steps, at least two.
			steps := 2
			if r := splineSteps * (to - from) / (xs[len(xs)-1] - xs[0]); r > 2 {
				steps = int(math.Min(r, 10*splineSteps))
			}
			for k := 0; k <= steps; k++ {
				t := from + (to-from)*float64(k)/float64(steps)
				ts, vs = append(ts, t), append(vs, f(t))
			}
			return ts, vs
		}
		ts, cv := sample(xs[0], xs[len(xs)-1], curve.At)
		_, up := sample(xs[0], xs[len(xs)-1], func(t float64) float64 { return curve.At(t) + math.Max(0, band.At(t)) })
		_, dn := sample(xs[0], xs[len(xs)-1], func(t float64) float64 { return curve.At(t) - math.Max(0, band.At(t)) })
		c.band(ts, dn, up, d.color)
		if e.Stable && e.To > e.From {
			ramp := func(t float64) float64 {
				return e.RampFrom.Y + (e.RampTo.Y-e.RampFrom.Y)*(t-e.RampFrom.X)/(e.RampTo.X-e.RampFrom.X)
			}
			at, acurve := sample(e.From, e.To, curve.At)
			_, aramp := sample(e.From, e.To, ramp)
			_, bup := sample(e.From, e.To, func(t float64) float64 { return curve.At(t) + math.Max(0, band.At(t)) })
			c.area(at, aramp, acurve, areaAColor, 0.55, fmt.Sprintf("A = %s s² (above the ramp %s, below %s)", fmtFigure(e.A), fmtFigure(e.AAbove), fmtFigure(e.ABelow)))
			c.area(at, acurve, bup, areaBColor, 0.55, fmt.Sprintf("B = %s s²", fmtFigure(e.B)))
			c.line([]pt{{e.RampFrom.X, e.RampFrom.Y}, {e.RampTo.X, e.RampTo.Y}}, rampColor, "6 3")
		}
		curvePts := make([]pt, len(ts))
		for k := range ts {
			curvePts[k] = pt{ts[k], cv[k]}
		}
		c.line(curvePts, d.color, "")
	}
	for _, s := range e.Sets {
		tip := fmt.Sprintf("%s, set ending at %s: %s s ± %s, %s", d.name, fmtSeconds(s.X), fmtFigure(s.Y), fmtFigure(s.SD), s.Phase)
		if finite(s.Delta) {
			tip += fmt.Sprintf(", delta %s s", fmtFigure(s.Delta))
			if s.Below {
				tip += " (below the baseline)"
			}
		}
		c.dot(c.px(s.X), c.py(s.Y), d.color, false, tip)
	}
	var moments []moment
	moments = append(moments, moment{e.Join, "bootstrap"})
	if e.SettledKnown && finite(e.Settled) {
		moments = append(moments, moment{e.Settled, "data settled"})
	}
	if e.Stable {
		moments = append(moments, moment{e.StableAt, "stable (" + e.Detector + ")"})
	}
	for _, v := range e.Verdicts {
		if v.Detector != e.Detector && v.Stable && v.StableAt != e.StableAt {
			moments = append(moments, moment{v.StableAt, "stable (" + v.Detector + ")"})
		}
	}
	c.moments(moments)
	c.legend = append(c.legend,
		legendEntry{label: "request sets, spline", color: d.color},
		legendEntry{label: "± SD", color: d.color, box: true, opacity: 0.18})
	if e.Stable {
		c.legend = append(c.legend,
			legendEntry{label: "ramp (bootstrap, Av1) → (stable, Av2)", color: rampColor, dash: "6 3"},
			legendEntry{label: "A: curve vs ramp", color: areaAColor, box: true, opacity: 0.55},
			legendEntry{label: "B: SD band above the curve", color: areaBColor, box: true, opacity: 0.55})
	}
	return c.svg()
}

// moment is a labelled instant of the score (bootstrap, data settled,
// stable), drawn as a solid line labelled along the bottom of the plot, apart
// from the numbered event markers at the top.
type moment struct {
	at    float64
	label string
}

// moments draws the lines, their labels stacked in rows upwards from the
// bottom where they would touch.
func (c *chart) moments(ms []moment) {
	var rowEnd []float64
	for _, m := range ms {
		x := c.px(m.at)
		w := textWidth(m.label) + 4
		r := 0
		for r < len(rowEnd) && rowEnd[r] > x-w/2 {
			r++
		}
		if r == len(rowEnd) {
			rowEnd = append(rowEnd, 0)
		}
		rowEnd[r] = x + w/2
		c.printf(`<g><title>%s at %s</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.4"/>`,
			esc(m.label), esc(fmtSeconds(m.at)), num(x), num(c.top()), num(x), num(c.bottom()), momentColor)
		c.printf(`<text x="%s" y="%s" text-anchor="middle" font-size="10" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text></g>`+"\n",
			num(x), num(c.bottom()-5-float64(r)*eventRowH), momentColor, esc(m.label))
	}
}

// area fills the region between lo and hi over xs (data units) with a
// tooltip; lo and hi may cross.
func (c *chart) area(xs, lo, hi []float64, color string, opacity float64, tip string) {
	coords := make([]string, 0, 2*len(xs))
	for i, x := range xs {
		coords = append(coords, num(c.px(x))+","+num(c.py(hi[i])))
	}
	for i := len(xs) - 1; i >= 0; i-- {
		coords = append(coords, num(c.px(xs[i]))+","+num(c.py(lo[i])))
	}
	c.printf(`<polygon points="%s" fill="%s" fill-opacity="%s"><title>%s</title></polygon>`+"\n", strings.Join(coords, " "), color, num(opacity), esc(tip))
}

// fmtOrDash formats a figure, or "—" when it is not a number.
func fmtOrDash(v float64, f func(float64) string) string {
	if !finite(v) {
		return "—"
	}
	return f(v)
}

func fmtSecs(v float64) string { return fmtFigure(v) + " s" }

// fmtSecondsUS formats a short time given in seconds as a latency: 5.94ms.
func fmtSecondsUS(v float64) string { return fmtUS(v * 1e6) }

// elasticityTable lists every intermediate value of one join's score.
func (p *page) elasticityTable(js score.JoinScore) {
	e := js.Elasticity
	ops := func(n int64) string {
		if n == 0 {
			return ""
		}
		return " (" + fmtCount(n) + " requests)"
	}
	rows := [][2]string{
		{"bootstrap (join)", fmtOrDash(e.Join, fmtSeconds)},
		{"data settled", fmtOrDash(e.Settled, fmtSeconds)},
		{"stability detector (drives the figures below)", detectorName(e.Detector)},
		{"stable (recomputed)", fmtOrDash(stableAt(e), fmtSeconds)},
		{"stable (runner)", fmtOrDash(js.OnlineStable, fmtSeconds)},
		{"baseline variability (median delta)", fmtOrDash(e.Baseline, fmtSecs)},
		{"Av1: mean request-set time before", fmtOrDash(e.Av1, fmtSecs) + " (" + strconv.Itoa(e.BeforeSets) + " sets)"},
		{"Av2: mean request-set time once stable", fmtOrDash(e.Av2, fmtSecs) + " (" + strconv.Itoa(e.AfterSets) + " sets)"},
		{"Rt1: mean time of one request before", fmtOrDash(e.Rt1, fmtSecondsUS) + ops(js.Rt1Ops)},
		{"Rt2: mean time of one request once stable", fmtOrDash(e.Rt2, fmtSecondsUS) + ops(js.Rt2Ops)},
		{"A: area between curve and ramp", fmtOrDash(e.A, fmtFigure) + " s²" + areaSplit(e)},
		{"B: area of the SD band, one SD above the curve (the study's reading)", fmtOrDash(e.B, fmtFigure) + " s²"},
		{"B': the whole ±SD band, 2B (the other reading)", fmtOrDash(e.BBand, fmtFigure) + " s²"},
		{"elasticity score (A + B) / ((Rt1 + Rt2)(Av1 + Av2))", fmtOrDash(e.Score, fmtFigure)},
		{"elasticity score with B' = 2B", fmtOrDash(e.ScoreBand, fmtFigure)},
		{"data-transfer time (settled − join)", fmtOrDash(e.DataTransfer, fmtSeconds)},
		{"additional time (stable − settled)", fmtOrDash(e.Additional, fmtSeconds)},
		{"time to stabilize (stable − join)", fmtOrDash(e.Total, fmtSeconds)},
	}
	p.printf("<table>\n<tr><th>figure</th><th>value</th></tr>\n")
	for _, r := range rows {
		if r[0] == "stable (runner)" && !finite(js.OnlineStable) {
			continue // the runner recorded no stable event
		}
		p.printf("<tr><td>%s</td><td class=\"n\">%s</td></tr>\n", esc(r[0]), esc(r[1]))
	}
	p.printf("</table>\n")
	p.verdictTable(e)
	for _, n := range e.Notes {
		p.printf("<div class=\"note\">%s</div>\n", esc(n))
	}
}

// verdictTable puts every detector's verdict side by side: its threshold,
// stable moment and the scores its moment gives, with both readings of B.
func (p *page) verdictTable(e score.Elasticity) {
	if len(e.Verdicts) == 0 {
		return
	}
	p.printf("<table>\n<tr><th>detector</th><th>threshold</th><th>stable at</th><th>time to stabilize</th><th>Av2</th><th>score (B)</th><th>score (2B)</th></tr>\n")
	for _, v := range e.Verdicts {
		name := detectorName(v.Detector)
		if v.Detector == e.Detector {
			name += " ◂"
		}
		stable := "never"
		if v.Stable {
			stable = fmtSeconds(v.StableAt)
		}
		p.printf("<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n",
			esc(name), esc(fmtOrDash(v.Threshold, fmtSecs)), esc(stable), esc(fmtOrDash(v.Total, fmtSeconds)), esc(fmtOrDash(v.Av2, fmtSecs)),
			esc(fmtOrDash(v.Score, fmtFigure)), esc(fmtOrDash(v.ScoreBand, fmtFigure)))
	}
	p.printf("</table>\n")
}

// detectorName is a detector in words: the study's rule is named as such.
func detectorName(d string) string {
	switch d {
	case score.DetectorStudy:
		return "study (every delta of the window below the median baseline delta)"
	case score.DetectorMeanDelta:
		return "mean-delta (the window's mean delta and slope within the baseline's bounds)"
	}
	return orDash(d)
}

func stableAt(e score.Elasticity) float64 {
	if !e.Stable {
		return math.NaN()
	}
	return e.StableAt
}

// areaSplit is " (above the ramp x, below y)" when A has both parts.
func areaSplit(e score.Elasticity) string {
	if !finite(e.A) || e.AAbove == 0 || e.ABelow == 0 {
		return ""
	}
	return " (above the ramp " + fmtFigure(e.AAbove) + ", below " + fmtFigure(e.ABelow) + ")"
}

// scalabilityTable lists each step's mean request-set time and each
// transition's score (Avg_2N − Avg_N) / Avg_N.
func (p *page) scalabilityTable(d *runData, sc score.Scores) {
	p.printf("<div class=\"tables\" style=\"margin-top:16px\">\n<table>\n<tr><th colspan=\"5\">%s%s: scalability steps</th></tr>\n", swatch(d.color), esc(d.name))
	p.printf("<tr><th>step</th><th>nodes</th><th>Avg request-set time</th><th>SD</th><th>sets</th></tr>\n")
	for _, s := range sc.Steps {
		p.printf("<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%d</td></tr>\n",
			esc(s.Label), esc(orDash(s.Nodes)), fmtOrDash(s.Avg, fmtSecs), fmtOrDash(s.SD, fmtSecs), s.N)
	}
	p.printf("</table>\n<table>\n<tr><th>transition</th><th>nodes</th><th>score (Avg<sub>2N</sub> − Avg<sub>N</sub>) / Avg<sub>N</sub></th></tr>\n")
	for _, t := range sc.Scalability {
		p.printf("<tr><td>step %s → %s</td><td class=\"n\">%s → %s</td><td class=\"n\">%s</td></tr>\n",
			esc(t.From.Label), esc(t.To.Label), esc(orDash(t.From.Nodes)), esc(orDash(t.To.Nodes)), fmtOrDash(t.Score, fmtFigure))
	}
	p.printf("</table>\n</div>\n<p style=\"font-size:13px;color:#555\">0 is perfect scaling, negative is superlinear, lower is better; each Avg counts the request sets of its step before any join.</p>\n")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
