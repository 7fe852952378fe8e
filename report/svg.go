package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Chart geometry in the viewBox's units (pixels at a column of chartW).
// Every chart has the same width so they line up in the page grid; the
// height grows with the x tick labels and the legend.
const (
	chartW     = 640
	plotH      = 230
	marginL    = 72
	marginR    = 24
	marginT    = 36
	legendRowH = 18
	charW      = 6.2 // rough width of one 11px character, for layout only
)

// tick is one labelled position on an axis.
type tick struct {
	v     float64
	label string
}

// axis is a data range with its ticks. A log axis maps values through log10.
type axis struct {
	title    string
	min, max float64
	ticks    []tick
	log      bool
}

// project maps v into [0,1] along the axis, clamped.
func (a axis) project(v float64) float64 {
	lo, hi := a.min, a.max
	if a.log {
		v, lo, hi = math.Log10(math.Max(v, 1e-9)), math.Log10(lo), math.Log10(hi)
	}
	p := (v - lo) / (hi - lo)
	if !(hi > lo) || math.IsNaN(p) {
		return 0 // no range, or no value: the axis start
	}
	return math.Max(0, math.Min(1, p))
}

// legendEntry is one key of a chart legend: a line (optionally dashed), a
// filled box, or a point mark ("hollow" marker, failure "cross", "errbar").
type legendEntry struct {
	label, color, dash string
	box                bool
	opacity            float64
	mark               string
}

// pt is a point in data coordinates; a NaN y breaks a polyline.
type pt struct{ x, y float64 }

// chart accumulates the plotted marks of one SVG chart.
type chart struct {
	title  string
	x, y   axis
	body   strings.Builder
	legend []legendEntry
}

func newChart(title string, x, y axis) *chart {
	return &chart{title: title, x: x, y: y}
}

// Plot area in pixels.
func (c *chart) left() float64   { return marginL }
func (c *chart) right() float64  { return chartW - marginR }
func (c *chart) top() float64    { return marginT }
func (c *chart) bottom() float64 { return marginT + plotH }

func (c *chart) px(v float64) float64 { return c.left() + c.x.project(v)*(c.right()-c.left()) }
func (c *chart) py(v float64) float64 { return c.bottom() - c.y.project(v)*(c.bottom()-c.top()) }

// num formats a pixel coordinate with fixed precision (deterministic output).
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }

func (c *chart) printf(format string, args ...any) { fmt.Fprintf(&c.body, format, args...) }

// line draws a polyline through pts, broken at NaN values; isolated points
// are drawn as dots so they stay visible.
func (c *chart) line(pts []pt, color, dash string) {
	var seg []pt
	flush := func() {
		switch len(seg) {
		case 0:
		case 1:
			c.printf(`<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", num(c.px(seg[0].x)), num(c.py(seg[0].y)), color)
		default:
			coords := make([]string, len(seg))
			for i, p := range seg {
				coords[i] = num(c.px(p.x)) + "," + num(c.py(p.y))
			}
			c.printf(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6"%s/>`+"\n",
				strings.Join(coords, " "), color, dashAttr(dash))
		}
		seg = seg[:0]
	}
	for _, p := range pts {
		if math.IsNaN(p.y) || math.IsNaN(p.x) {
			flush()
			continue
		}
		seg = append(seg, p)
	}
	flush()
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

// bar draws a bar from the bottom of the plot up to value y, between pixel
// columns x0 and x1; tip is its tooltip.
func (c *chart) bar(x0, x1, y float64, color string, opacity float64, tip string) {
	top := c.py(y)
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="%s"><title>%s</title></rect>`+"\n",
		num(x0), num(top), num(x1-x0), num(c.bottom()-top), color, num(opacity), esc(tip))
}

// errBar draws a vertical error bar with caps at pixel column x, from data
// value lo to hi.
func (c *chart) errBar(x, lo, hi float64, color string) {
	c.raw(errBarPath(x, c.py(lo), c.py(hi), color))
}

func errBarPath(x, y0, y1 float64, color string) string {
	return fmt.Sprintf(`<path d="M%s %sV%sM%s %sh8M%s %sh8" fill="none" stroke="%s" stroke-width="1.2"/>`+"\n",
		num(x), num(y0), num(y1), num(x-4), num(y0), num(x-4), num(y1), color)
}

// dot draws a point marker at pixel (x,y), filled or hollow, with a tooltip.
func (c *chart) dot(x, y float64, color string, hollow bool, tip string) {
	c.dotR(x, y, 3.5, color, hollow, tip)
}

// dotR is dot with radius r.
func (c *chart) dotR(x, y, r float64, color string, hollow bool, tip string) {
	paint := `fill="` + color + `"`
	if hollow {
		paint = `fill="#fff" stroke="` + color + `" stroke-width="1.5"`
	}
	c.printf(`<circle cx="%s" cy="%s" r="%s" %s><title>%s</title></circle>`+"\n", num(x), num(y), strconv.FormatFloat(r, 'f', -1, 64), paint, esc(tip))
}

// cross draws a × marker centred at pixel (x,y) with a tooltip.
func (c *chart) cross(x, y float64, color, tip string) {
	c.printf("<g><title>%s</title>%s</g>\n", esc(tip), strings.TrimSuffix(crossPath(x, y, color), "\n"))
}

func crossPath(x, y float64, color string) string {
	return fmt.Sprintf(`<path d="M%s %sl8 8m0 -8l-8 8" fill="none" stroke="%s" stroke-width="2.2"/>`+"\n", num(x-4), num(y-4), color)
}

// band fills the area between lo and hi over xs (sorted), in data units.
func (c *chart) band(xs, lo, hi []float64, color string) {
	coords := make([]string, 0, 2*len(xs))
	for i, x := range xs {
		coords = append(coords, num(c.px(x))+","+num(c.py(hi[i])))
	}
	for i := len(xs) - 1; i >= 0; i-- {
		coords = append(coords, num(c.px(xs[i]))+","+num(c.py(lo[i])))
	}
	c.printf(`<polygon points="%s" fill="%s" fill-opacity="0.18"/>`+"\n", strings.Join(coords, " "), color)
}

func (c *chart) raw(s string) { c.body.WriteString(s) }

// shade draws a translucent band over the x range [x0,x1] with a label.
func (c *chart) shade(x0, x1 float64, label string) {
	p0, p1 := c.px(x0), c.px(x1)
	c.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#000" fill-opacity="0.07"/>`+"\n",
		num(p0), num(c.top()), num(p1-p0), num(c.bottom()-c.top()))
	c.printf(`<text x="%s" y="%s" text-anchor="middle" font-size="10" fill="#666">%s</text>`+"\n",
		num((p0+p1)/2), num(c.bottom()-6), esc(label))
}

// xTickRotated reports whether the x tick labels are too wide to sit
// horizontally side by side.
func (c *chart) xTickRotated() bool {
	if len(c.x.ticks) < 2 {
		return false
	}
	room := (c.right() - c.left()) / float64(len(c.x.ticks))
	for _, t := range c.x.ticks {
		if textW(t.label)+6 > room {
			return true
		}
	}
	return false
}

func textW(s string) float64 { return float64(len([]rune(s))) * charW }

// xAxisH is the height below the plot for x tick labels and the axis title.
func (c *chart) xAxisH() float64 {
	h := 40.0
	if c.xTickRotated() {
		w := 0.0
		for _, t := range c.x.ticks {
			w = math.Max(w, textW(t.label))
		}
		h = 28 + w*math.Sin(40*math.Pi/180)
	}
	return h
}

// legendRows lays the legend entries out in rows that fit the chart width.
func (c *chart) legendRows() [][]legendEntry {
	var rows [][]legendEntry
	var row []legendEntry
	w := 0.0
	for _, e := range c.legend {
		ew := legendEntryW(e)
		if len(row) > 0 && w+ew > chartW-2*marginR {
			rows, row, w = append(rows, row), nil, 0
		}
		row = append(row, e)
		w += ew
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

func legendEntryW(e legendEntry) float64 { return 28 + textW(e.label) + 14 }

// svg renders the whole chart.
func (c *chart) svg() string {
	rows := c.legendRows()
	legendTop := c.bottom() + c.xAxisH()
	height := legendTop + float64(len(rows))*legendRowH + 6
	var b strings.Builder
	// The width of its column (the page's CSS lays the columns out), the
	// height from the viewBox's proportions: fixed at 640 px, two charts
	// took 40 % of a 1300 px page side by side with white beside them.
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="100%%" viewBox="0 0 %d %s" font-family="sans-serif" font-size="11" role="img">`+"\n",
		chartW, num(height))
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(c.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%s" fill="#fff"/>`+"\n", chartW, num(height))
	fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-size="13" font-weight="bold">%s</text>`+"\n", chartW/2, esc(c.title))
	c.writeYAxis(&b)
	c.writeXAxis(&b)
	b.WriteString(c.body.String())
	fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#444"/>`+"\n",
		num(c.left()), num(c.top()), num(c.right()-c.left()), num(c.bottom()-c.top()))
	writeLegend(&b, rows, legendTop)
	b.WriteString("</svg>\n")
	return b.String()
}

func (c *chart) writeYAxis(b *strings.Builder) {
	for _, t := range c.y.ticks {
		y := num(c.py(t.v))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, num(c.left()), y, num(c.right()), y)
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", num(c.left()-6), y, esc(t.label))
	}
	mid := num((c.top() + c.bottom()) / 2)
	fmt.Fprintf(b, `<text transform="translate(14,%s) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n", mid, esc(c.y.title))
}

func (c *chart) writeXAxis(b *strings.Builder) {
	rotated := c.xTickRotated()
	for _, t := range c.x.ticks {
		x := num(c.px(t.v))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e3e3e3"/>`, x, num(c.top()), x, num(c.bottom()))
		if rotated {
			fmt.Fprintf(b, `<text transform="translate(%s,%s) rotate(-40)" text-anchor="end">%s</text>`+"\n", x, num(c.bottom()+14), esc(t.label))
			continue
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", x, num(c.bottom()+15), esc(t.label))
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#333">%s</text>`+"\n",
		num((c.left()+c.right())/2), num(c.bottom()+c.xAxisH()-8), esc(c.x.title))
}

func writeLegend(b *strings.Builder, rows [][]legendEntry, top float64) {
	for i, row := range rows {
		y := top + float64(i)*legendRowH + 9
		x := float64(marginL)
		for _, e := range row {
			switch {
			case e.mark == "hollow":
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="#fff" stroke="%s" stroke-width="1.5"/>`, num(x+10), num(y), e.color)
			case e.mark == "cross":
				b.WriteString(crossPath(x+10, y, e.color))
			case e.mark == "errbar":
				b.WriteString(errBarPath(x+10, y+6, y-6, e.color))
			case e.box:
				fmt.Fprintf(b, `<rect x="%s" y="%s" width="20" height="10" fill="%s" fill-opacity="%s"/>`,
					num(x), num(y-5), e.color, num(e.opacity))
			default:
				fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`,
					num(x), num(y), num(x+20), num(y), e.color, dashAttr(e.dash))
			}
			fmt.Fprintf(b, `<text x="%s" y="%s" dominant-baseline="middle">%s</text>`+"\n", num(x+26), num(y), esc(e.label))
			x += legendEntryW(e)
		}
	}
}

// niceStep is a 1-2-5 step giving about n intervals over span.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag*1.000001 {
			return m * mag
		}
	}
	return 10 * mag
}

// maxTicks bounds the ticks of any axis: whatever the data, an axis is
// built in bounded time and memory.
const maxTicks = 100

// axisLimit is the largest magnitude an axis spans. Values beyond it (and
// infinities) are clamped so that spans, steps and rounded ends stay finite.
const axisLimit = 1e300

// drawableRange turns [lo,hi] into a finite range wide enough to be cut
// into distinct ticks: a NaN end takes the other end (0 when both are NaN),
// infinities are clamped to ±axisLimit, an empty or reversed range is
// [lo, lo+1], and a range narrower than a billionth of its magnitude (where
// lo+step == lo in float64, as with -1e16 alone) is widened to that.
func drawableRange(lo, hi float64) (float64, float64) {
	switch {
	case math.IsNaN(lo) && math.IsNaN(hi):
		lo, hi = 0, 0
	case math.IsNaN(lo):
		lo = hi
	case math.IsNaN(hi):
		hi = lo
	}
	lo = math.Max(-axisLimit, math.Min(axisLimit, lo))
	hi = math.Max(-axisLimit, math.Min(axisLimit, hi))
	if !(hi > lo) {
		hi = lo + 1
	}
	mag := math.Max(math.Abs(lo), math.Abs(hi))
	if minSpan := math.Max(mag*1e-9, 1e-12); hi-lo < minSpan {
		hi = lo + minSpan
	}
	return lo, hi
}

// linearAxis spans [lo,hi] rounded out to about n nice ticks. Extreme, NaN
// or infinite ends are made drawable first (see drawableRange), and the
// ticks are counted, never stepped through by adding to a float, so the
// axis is built in bounded time and memory for any input.
func linearAxis(title string, lo, hi float64, n int, label func(float64) string) axis {
	lo, hi = drawableRange(lo, hi)
	n = max(1, min(n, maxTicks))
	step := niceStep(hi-lo, n)
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	a := axis{title: title, min: first * step, max: last * step}
	for k := 0; k < maxTicks && float64(k) <= last-first; k++ {
		v := (first + float64(k)) * step
		a.ticks = append(a.ticks, tick{v: v, label: label(v)})
	}
	return a
}

// endAxis is linearAxis with the far end not rounded out: the axis ends
// at hi itself and the ticks stop at the last one within it. A time axis
// ends at the run's last second: a 5 s run whose last interval closed at
// 5.001 s was drawn to 6 s, a second that was never run.
func endAxis(title string, lo, hi float64, n int, label func(float64) string) axis {
	lo, hi = drawableRange(lo, hi)
	a := linearAxis(title, lo, hi, n, label)
	if a.max <= hi {
		return a
	}
	a.max = hi
	// A tick a hair past hi (float rounding of k·step) still counts.
	slack := (hi - a.min) * 1e-9
	for len(a.ticks) > 1 && a.ticks[len(a.ticks)-1].v > hi+slack {
		a.ticks = a.ticks[:len(a.ticks)-1]
	}
	return a
}

// logAxis spans [lo,hi] (lo > 0) rounded out to ticks at 1, 2, 5 times a
// power of ten, or powers of ten only when it covers many decades. Values
// below 1 (µs) are raised to 1.
func logAxis(title string, lo, hi float64, label func(float64) string) axis {
	return logAxisFloor(title, lo, hi, 1, label)
}

// logAxisFloor is logAxis with values below floor raised to floor.
func logAxisFloor(title string, lo, hi, floor float64, label func(float64) string) axis {
	if !(floor > 0) || floor > axisLimit {
		floor = 1e-9
	}
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		lo, hi = floor, floor*1000 // no data
	}
	// NaN or infinite ends would make the decade loop below endless or
	// empty: clamp to the largest drawable value.
	lo = math.Min(math.Max(lo, floor), axisLimit)
	if math.IsNaN(hi) {
		hi = lo
	}
	hi = math.Min(math.Max(hi, lo), axisLimit)
	d0, d1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	mults := []float64{1, 2, 5}
	if d1-d0 > 3 {
		mults = []float64{1}
	}
	var cand []float64
	for e := d0; e <= d1; e++ {
		for _, m := range mults {
			cand = append(cand, m*math.Pow(10, e))
		}
	}
	a := axis{title: title, log: true, min: cand[0], max: cand[len(cand)-1]}
	for _, v := range cand {
		if v <= lo {
			a.min = v
		}
	}
	for i := len(cand) - 1; i >= 0; i-- {
		if cand[i] >= hi {
			a.max = cand[i]
		}
	}
	if a.max <= a.min {
		a.max = a.min * 10
	}
	for _, v := range cand {
		if v >= a.min && v <= a.max {
			a.ticks = append(a.ticks, tick{v: v, label: label(v)})
		}
	}
	return a
}

// categoryAxis places n labelled categories at 0..n-1.
func categoryAxis(title string, labels []string) axis {
	a := axis{title: title, min: -0.5, max: float64(len(labels)) - 0.5}
	for i, l := range labels {
		a.ticks = append(a.ticks, tick{v: float64(i), label: l})
	}
	return a
}
