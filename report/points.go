package report

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// Point series (result.Point) are drawn one chart per series, every run that
// has points in it as one coloured line with markers. Warm-up points are
// hollow grey markers off the line; failed points are red crosses at the
// bottom of the plot, also listed under the chart. When every point carries
// a "category" label the series is drawn as grouped bars instead.

const (
	failColor = "#b00"
	warmColor = "#999"
	// categoryLabel is the Point label that turns a series into bars.
	categoryLabel = "category"
)

// seriesRun is one run's points of one series, in file order: all of
// them, or those of one node for a per-node series.
type seriesRun struct {
	d    *runData
	node string // "" unless the points carry a node label
	pts  []result.Point
	// How the line is drawn and named in the legend.
	color, dash, label string
}

// series is one Point series prepared for drawing.
type series struct {
	name string
	meta result.SeriesMeta
	runs []seriesRun // only runs with points in it, one per node when per-node
	cats []string    // categories in order of first appearance, when drawn as bars
	// nodes lists the node labels in natural order, when drawn per node.
	nodes []string
	// byteUnit is "B" or "B/s" when the y label says the figures are bytes.
	byteUnit string
}

// seriesNames lists the Point series of every run, sorted.
func seriesNames(data []*runData) []string {
	set := map[string]bool{}
	for _, d := range data {
		for _, p := range d.run.Points {
			set[p.Series] = true
		}
	}
	return sortedKeys(set)
}

// seriesOf gathers the series name: its description comes from the first run
// that declares it, its points from every run; points with a non-finite
// figure are dropped.
func seriesOf(data []*runData, name string) *series {
	s := &series{name: name, meta: result.SeriesMeta{Title: name}}
	if m, ok := probeSeries[name]; ok {
		s.meta = m
	}
	for _, d := range data {
		if m, ok := d.run.Header.Series[name]; ok {
			s.meta = m
			break
		}
	}
	if s.meta.Title == "" {
		s.meta.Title = name
	}
	if m := byteUnitRE.FindStringSubmatch(s.meta.YLabel); m != nil {
		s.byteUnit = "B" + m[2]
	}
	bars, seen, nodes := true, map[string]bool{}, map[string]bool{}
	for _, d := range data {
		sr := seriesRun{d: d}
		for _, p := range d.run.Points {
			if p.Series != name || !finite(p.X) || (p.Failed == "" && !finite(p.Y)) {
				continue
			}
			sr.pts = append(sr.pts, p)
			cat := s.category(p)
			bars = bars && cat != ""
			if cat != "" && !seen[cat] {
				seen[cat] = true
				s.cats = append(s.cats, cat)
			}
			if n := lineOf(p); n != "" {
				nodes[n] = true
			}
		}
		if len(sr.pts) > 0 {
			s.runs = append(s.runs, sr)
		}
	}
	if !bars {
		s.cats = nil
	} else if len(nodes) > 0 {
		sortNatural(s.cats) // bars per node, in node order
	}
	if !bars && len(nodes) > 0 {
		s.nodes = sortedKeys(nodes)
		sortNatural(s.nodes)
		s.splitNodes()
	}
	for i := range s.runs {
		s.style(&s.runs[i])
	}
	return s
}

// splitNodes replaces each run's points by one group per node, in natural
// node order; points without a node label stay in a group of their own.
func (s *series) splitNodes() {
	var out []seriesRun
	for _, sr := range s.runs {
		byNode := map[string][]result.Point{}
		for _, p := range sr.pts {
			byNode[lineOf(p)] = append(byNode[lineOf(p)], p)
		}
		for _, n := range append([]string{""}, s.nodes...) {
			if len(byNode[n]) > 0 {
				out = append(out, seriesRun{d: sr.d, node: n, pts: byNode[n]})
			}
		}
	}
	s.runs = out
}

// style sets how a group is drawn: in its run's colour, or for a node in
// the node's colour, with a dash per run when several runs share the chart.
func (s *series) style(sr *seriesRun) {
	sr.color, sr.label = sr.d.color, sr.d.name
	if s.nodes == nil {
		return
	}
	runs := s.runData()
	if sr.node != "" {
		for i, n := range s.nodes { // natural order is not sort order
			if n == sr.node {
				sr.color = palette[i%len(palette)]
			}
		}
		sr.label = sr.node
	} else {
		sr.color, sr.label = neutral, "(no node)"
	}
	if len(runs) > 1 {
		for i, d := range runs {
			if d == sr.d {
				sr.dash = runDashes[i%len(runDashes)]
			}
		}
		sr.label = sr.d.name + " · " + sr.label
	}
}

// category is the bar a point belongs to: its "category" label or, in a
// series that is not over time, its node (one bar per node, such as the
// share of data each node owns).
func (s *series) category(p result.Point) string {
	if c := p.Labels[categoryLabel]; c != "" || s.meta.XIsTime {
		return c
	}
	return p.Labels[nodeLabel]
}

// lineLabel is the Point label that splits a series into named lines (as
// the node label does, but never into bars): e.g. one line per operation
// and percentile of a rate search's knee chart.
const lineLabel = "line"

// lineOf is the line a point is drawn on: its node, or its line label.
func lineOf(p result.Point) string {
	if n := p.Labels[nodeLabel]; n != "" {
		return n
	}
	return p.Labels[lineLabel]
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (s *series) bars() bool { return len(s.cats) > 0 }

func (s *series) xLabel() string {
	switch {
	case s.meta.XLabel != "":
		return s.meta.XLabel
	case s.bars():
		return categoryLabel
	case s.meta.XIsTime:
		return "seconds since start"
	}
	return "x"
}

func (s *series) yLabel() string {
	if s.meta.YLabel != "" {
		return s.meta.YLabel
	}
	return "y"
}

// errRange is the error bar or band of p, if it has one: [Lo, Hi] for a
// "ci" series, Y ± SD for an "sd" series or for bars.
func (s *series) errRange(p result.Point) (lo, hi float64, ok bool) {
	switch {
	case s.meta.Band == "ci" && p.Hi > p.Lo && finite(p.Lo) && finite(p.Hi):
		return p.Lo, p.Hi, true
	case (s.meta.Band == "sd" || s.bars()) && p.SD > 0 && finite(p.SD):
		return p.Y - p.SD, p.Y + p.SD, true
	}
	return 0, 0, false
}

func measured(p result.Point) bool { return p.Failed == "" && !p.Warmup }

// yAxis spans every drawn figure and error range, from 0 on a linear axis.
func (s *series) yAxis() axis {
	lo, hi, pos := math.Inf(1), math.Inf(-1), math.Inf(1)
	add := func(v float64) {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
		if v > 0 {
			pos = math.Min(pos, v)
		}
	}
	for _, sr := range s.runs {
		for _, p := range sr.pts {
			if p.Failed != "" {
				continue
			}
			add(p.Y)
			if l, h, ok := s.errRange(p); ok {
				add(l)
				add(h)
			}
		}
	}
	// Bytes are drawn in the binary unit that suits the largest figure,
	// named in the axis title: "RSS (MiB)" with ticks 0, 50, 100...
	factor, title := 1.0, s.yLabel()
	if s.byteUnit != "" && hi > 0 {
		var unit string
		factor, unit = byteScale(hi)
		if s.byteUnit == "B/s" {
			unit += "/s"
		}
		title = byteUnitRE.ReplaceAllLiteralString(title, "("+unit+")")
		lo, hi, pos = lo/factor, hi/factor, pos/factor
	}
	if s.meta.LogY {
		if s.bars() {
			pos /= 2 // room below the smallest bar
		}
		return scaleAxis(logAxisFloor(title, pos, hi, 1e-9/factor, fmtNumber), factor)
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	return scaleAxis(linearAxis(title, math.Min(lo, 0), hi, 5, fmtNumber), factor)
}

// xRange is the smallest and largest X of the series.
func (s *series) xRange() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, sr := range s.runs {
		for _, p := range sr.pts {
			lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
		}
	}
	return lo, hi
}

// runData lists the runs with points in the series, each once.
func (s *series) runData() []*runData {
	var out []*runData
	for i, sr := range s.runs {
		if i == 0 || s.runs[i-1].d != sr.d {
			out = append(out, sr.d)
		}
	}
	return out
}

// legend names each line (run, node, or run · node) or, for bars, each run.
func (s *series) legend(c *chart) {
	for _, sr := range s.runs {
		c.legend = append(c.legend, legendEntry{label: sr.label, color: sr.color, dash: sr.dash, box: s.bars(), opacity: 1})
	}
}

// fmtY formats a figure of the series for a tooltip or table.
func (s *series) fmtY(v float64) string {
	switch s.byteUnit {
	case "B":
		return fmtBytes(v)
	case "B/s":
		return fmtBytes(v) + "/s"
	}
	return fmtFigure(v)
}

// xText describes where p is on the x axis.
func (s *series) xText(p result.Point) string {
	switch {
	case s.bars():
		return s.category(p)
	case s.meta.XIsTime:
		return fmtSeconds(p.X)
	}
	return fmtFigure(p.X)
}

// tip is a point's tooltip.
func (s *series) tip(sr seriesRun, p result.Point) string {
	t := sr.d.name + ", "
	if sr.node != "" {
		t += sr.node + ", "
	}
	t += s.xLabel() + " " + s.xText(p) + ": "
	switch {
	case p.Failed != "":
		return t + "failed: " + p.Failed
	case p.Warmup:
		t = "warm-up, " + t
	}
	t += s.fmtY(p.Y)
	if s.meta.Band == "ci" && p.Hi > p.Lo {
		t += " (95% CI " + ciText(p) + ")"
	} else if p.SD > 0 {
		t += " ± " + s.fmtY(p.SD)
	}
	if p.N > 0 {
		t += " (n=" + strconv.Itoa(p.N) + ")"
	}
	return t
}

// ciText is a confidence interval: "7,221 – 7,779".
func ciText(p result.Point) string { return fmtFigure(p.Lo) + " – " + fmtFigure(p.Hi) }

// pointChart draws the series as an SVG chart.
func pointChart(s *series) string {
	var c *chart
	if s.bars() {
		c = s.barChart()
	} else {
		c = s.lineChart()
	}
	s.legend(c)
	var warm, failed, errs, band bool
	for _, sr := range s.runs {
		for _, p := range sr.pts {
			warm = warm || (p.Warmup && p.Failed == "")
			failed = failed || p.Failed != ""
			if _, _, ok := s.errRange(p); ok && measured(p) {
				band = band || (s.meta.XIsTime && s.meta.Band == "sd" && !s.bars())
				errs = true
			}
		}
	}
	errName := "± SD"
	if s.meta.Band == "ci" {
		errName = "95% CI"
	}
	switch {
	case band:
		c.legend = append(c.legend, legendEntry{label: errName, color: neutral, box: true, opacity: 0.18})
	case errs:
		c.legend = append(c.legend, legendEntry{label: errName, color: neutral, mark: "errbar"})
	}
	if warm {
		c.legend = append(c.legend, legendEntry{label: "warm-up", color: warmColor, mark: "hollow"})
	}
	if failed {
		c.legend = append(c.legend, legendEntry{label: "failed", color: failColor, mark: "cross"})
	}
	return c.svg()
}

// failY is the pixel row of failure crosses: the bottom of the plot.
func (c *chart) failY() float64 { return c.bottom() - 6 }

// lineChart draws X against Y, one line per run.
func (s *series) lineChart() *chart {
	var c *chart
	lo, hi := s.xRange()
	if s.meta.XIsTime {
		c = timeChart(s.meta.Title, s.yAxis(), s.runData(), hi)
		c.x.title = s.xLabel()
	} else {
		// Room to the right so the last markers do not sit on the frame.
		lo = math.Min(lo, 0)
		c = newChart(s.meta.Title, linearAxis(s.xLabel(), lo, hi+(hi-lo)*0.04, 8, fmtNumber), s.yAxis())
	}
	for _, sr := range s.runs {
		var ok []result.Point
		for _, p := range sr.pts {
			if measured(p) {
				ok = append(ok, p)
			}
		}
		sort.SliceStable(ok, func(i, j int) bool { return ok[i].X < ok[j].X })
		// A time series is broken where samples are missing (a node down).
		var segs [][]result.Point
		if s.meta.XIsTime {
			xs := make([]float64, len(ok))
			for i, p := range ok {
				xs[i] = p.X
			}
			from := 0
			for _, b := range gapBreaks(xs) {
				segs, from = append(segs, ok[from:b]), b
			}
			segs = append(segs, ok[from:])
		} else {
			segs = [][]result.Point{ok}
		}
		for _, seg := range segs {
			s.drawSpread(c, sr.color, seg)
			// Repeated x values (several runs per sweep point) are not a line.
			if joined(seg) {
				pts := make([]pt, len(seg))
				for i, p := range seg {
					pts[i] = pt{x: p.X, y: p.Y}
				}
				c.line(pts, sr.color, sr.dash)
			}
		}
		// Dense per-node lines get small dots, so the lines stay visible.
		r := 3.5
		if sr.node != "" && len(ok) > 30 {
			r = 2
		}
		for _, p := range sr.pts {
			switch {
			case p.Failed != "":
				c.cross(c.px(p.X), c.failY(), failColor, s.tip(sr, p))
			case p.Warmup:
				c.dotR(c.px(p.X), c.py(p.Y), r, warmColor, true, s.tip(sr, p))
			default:
				c.dotR(c.px(p.X), c.py(p.Y), r, sr.color, false, s.tip(sr, p))
			}
		}
	}
	return c
}

// drawSpread draws the measured points' band (time series with SD) or
// error bars.
func (s *series) drawSpread(c *chart, color string, ok []result.Point) {
	if s.meta.XIsTime && s.meta.Band == "sd" {
		var xs, los, his []float64
		for _, p := range ok {
			l, h, has := s.errRange(p)
			if !has {
				l, h = p.Y, p.Y
			}
			xs, los, his = append(xs, p.X), append(los, l), append(his, h)
		}
		if len(xs) > 1 {
			c.band(xs, los, his, color)
			return
		}
	}
	for _, p := range ok {
		if l, h, has := s.errRange(p); has {
			c.errBar(c.px(p.X), l, h, color)
		}
	}
}

// joined reports whether points sorted by X have distinct X values.
func joined(pts []result.Point) bool {
	for i := 1; i < len(pts); i++ {
		if pts[i].X == pts[i-1].X {
			return false
		}
	}
	return len(pts) > 1
}

// barChart draws one bar per run per category, like latencyByGroup.
func (s *series) barChart() *chart {
	c := newChart(s.meta.Title, categoryAxis(s.xLabel(), s.cats), s.yAxis())
	slot := (c.right() - c.left()) / float64(len(s.cats)) * 0.8
	w := slot / float64(len(s.runs))
	for j, cat := range s.cats {
		x0 := c.px(float64(j)) - slot/2
		for i, sr := range s.runs {
			bx := x0 + float64(i)*w
			mid := bx + (w-1)/2
			drawn := false
			for _, p := range sr.pts {
				if s.category(p) != cat {
					continue
				}
				tip := s.tip(sr, p)
				switch {
				case p.Failed != "":
					c.cross(mid, c.failY(), failColor, tip)
				case p.Warmup:
					c.dot(mid, c.py(p.Y), warmColor, true, tip)
				case drawn: // a further measurement of the same category
					c.dot(mid, c.py(p.Y), sr.color, false, tip)
				default:
					drawn = true
					c.bar(bx, bx+w-1, p.Y, sr.color, 0.85, tip)
					if l, h, ok := s.errRange(p); ok {
						c.errBar(mid, l, h, neutral)
					}
				}
			}
		}
	}
	return c
}

// measurements writes the "Measurements" section: one chart per series,
// each followed by its failures and, for "ci" series, its statistics.
func (p *page) measurements() {
	names := seriesNames(p.data)
	if len(names) == 0 {
		return
	}
	p.printf("<h2>Measurements</h2>\n<div class=\"charts\">\n")
	for _, name := range names {
		s := seriesOf(p.data, name)
		if len(s.runs) == 0 {
			continue
		}
		p.printf("<div class=\"series\">\n%s", pointChart(s))
		p.failureTable(s)
		if s.meta.Band == "ci" {
			p.ciTable(s)
		}
		p.printf("</div>\n")
	}
	p.printf("</div>\n")
}

// failureTable lists every failed point of the series.
func (p *page) failureTable(s *series) {
	var rows []string
	for _, sr := range s.runs {
		for _, pt := range sr.pts {
			if pt.Failed != "" {
				rows = append(rows, "<tr><td>"+swatch(sr.color)+esc(sr.label)+"</td><td class=\"n\">"+esc(s.xText(pt))+"</td><td>"+esc(pt.Failed)+"</td></tr>\n")
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	p.printf("<table>\n<tr><th>run</th><th>%s</th><th>failure</th></tr>\n%s</table>\n", esc(s.xLabel()), strings.Join(rows, ""))
}

// ciTable lists the measured points of a "ci" series with their statistics.
func (p *page) ciTable(s *series) {
	p.printf("<table>\n<tr><th>run</th><th>%s</th><th>mean</th><th>sd</th><th>95%% CI</th><th>n</th></tr>\n", esc(s.xLabel()))
	for _, sr := range s.runs {
		for _, pt := range sr.pts {
			if !measured(pt) {
				continue
			}
			ci := "—"
			if pt.Hi > pt.Lo {
				ci = ciText(pt)
			}
			n := "—"
			if pt.N > 0 {
				n = strconv.Itoa(pt.N)
			}
			p.printf("<tr><td>%s%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n",
				swatch(sr.color), esc(sr.label), esc(s.xText(pt)), s.fmtY(pt.Y), s.fmtY(pt.SD), ci, n)
		}
	}
	p.printf("</table>\n")
}
