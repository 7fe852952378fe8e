package report

import (
	"math"
	"strconv"
)

const (
	dashP50  = "5 3"
	neutral  = "#555"
	maxNines = 4 // percentile spectrum reaches 99.99%
)

// timeAxis spans every run's intervals and events, from 0 to at least end,
// and ends there (endAxis), not at the next round number.
func timeAxis(data []*runData, end float64) axis {
	for _, d := range data {
		for _, iv := range d.run.Intervals {
			end = math.Max(end, iv.End)
		}
		for _, e := range d.run.Events {
			end = math.Max(end, e.At)
		}
	}
	return endAxis("seconds since start", 0, end, 10, func(v float64) string {
		return strconv.FormatFloat(v, 'f', -1, 64)
	})
}

// timeChart is a chart over time (to at least end seconds) with the warm-up
// shaded and every event drawn as a numbered marker (see events).
func timeChart(title string, y axis, data []*runData, end float64) *chart {
	c := newChart(title, timeAxis(data, end), y)
	shaded := map[float64]bool{}
	for _, d := range data {
		if w := d.run.Header.WarmupSeconds; w > 0 && !shaded[w] {
			shaded[w] = true
			c.shade(0, w, "warm-up")
		}
	}
	c.events(data)
	return c
}

// keyColor is the colour of the legend keys that explain a style (p99
// solid, p50 dashed; mean solid, p99 light): the run's own with one run,
// so the key looks like the marks it explains (they were grey beside blue
// lines); neutral with several, whose colours the run legend names.
func keyColor(data []*runData) string {
	if len(data) == 1 {
		return data[0].color
	}
	return neutral
}

// runLegend names each run's colour, as a line or, for bar charts, a box.
func (c *chart) runLegend(data []*runData, box bool) {
	for _, d := range data {
		c.legend = append(c.legend, legendEntry{label: d.name, color: d.color, box: box, opacity: 1})
	}
}

// latencyOverTime draws p99 (solid) and p50 (dashed) per interval.
func latencyOverTime(data []*runData, op string) string {
	lo, hi := math.Inf(1), 0.0
	for _, d := range data {
		for _, s := range d.samples[op] {
			if !math.IsNaN(s.p50) {
				lo, hi = math.Min(lo, s.p50), math.Max(hi, s.p99)
			}
		}
	}
	c := timeChart(op+": p50 and p99 latency over time", logAxis("latency", lo, hi, fmtTickUS), data, 1)
	for _, d := range data {
		p50, p99 := pointsOf(d.samples[op], func(s sample) float64 { return s.p50 }), pointsOf(d.samples[op], func(s sample) float64 { return s.p99 })
		c.line(p99, d.color, "")
		c.line(p50, d.color, dashP50)
	}
	c.runLegend(data, false)
	c.legend = append(c.legend,
		legendEntry{label: "p99", color: keyColor(data)},
		legendEntry{label: "p50", color: keyColor(data), dash: dashP50})
	return c.svg()
}

// rateOverTime draws a per-second rate (throughput or errors) per run.
func rateOverTime(data []*runData, title, unit string, value func(sample) float64, op string) string {
	hi := 0.0
	for _, d := range data {
		for _, s := range measuredSeconds(d.samples[op]) {
			hi = math.Max(hi, value(s))
		}
	}
	c := timeChart(title, linearAxis(unit, 0, hi, 5, fmtNumber), data, 1)
	for _, d := range data {
		c.line(pointsOf(measuredSeconds(d.samples[op]), value), d.color, "")
	}
	c.runLegend(data, false)
	return c.svg()
}

// measuredSeconds are the samples of measured seconds: a rate over time leaves
// out the drain after the clients stopped (sample.drain).
func measuredSeconds(samples []sample) []sample {
	out := samples[:0:0]
	for _, s := range samples {
		if !s.drain {
			out = append(out, s)
		}
	}
	return out
}

func throughputOverTime(data []*runData, op string) string {
	return rateOverTime(data, op+": throughput over time", "ops/s", func(s sample) float64 { return s.rate }, op)
}

func errorsOverTime(data []*runData, op string) string {
	return rateOverTime(data, op+": errors over time", "errors/s", func(s sample) float64 { return s.errRate }, op)
}

func pointsOf(samples []sample, value func(sample) float64) []pt {
	pts := make([]pt, len(samples))
	for i, s := range samples {
		pts[i] = pt{x: s.t, y: value(s)}
	}
	return pts
}

// latencyDistribution draws the percentile spectrum of the post-warm-up
// histogram, x on the usual 1/(1-q) log scale from 0% to 99.99%.
func latencyDistribution(data []*runData, op string) string {
	const steps = 160
	percentiles := make([]float64, steps+1)
	for i := range percentiles {
		x := float64(i) * maxNines / steps
		percentiles[i] = 100 * (1 - math.Pow(10, -x))
	}
	lo, hi := math.Inf(1), 0.0
	values := make([][]int64, len(data))
	for i, d := range data {
		if h := d.merged[op]; h != nil && h.TotalCount() > 0 {
			values[i] = h.ValueAtPercentilesSlice(percentiles)
			lo, hi = math.Min(lo, float64(values[i][0])), math.Max(hi, float64(values[i][steps]))
		}
	}
	c := newChart(op+": latency by percentile (after warm-up)", percentileAxis(), logAxis("latency", lo, hi, fmtTickUS))
	for i, d := range data {
		pts := make([]pt, len(values[i]))
		for j, v := range values[i] {
			pts[j] = pt{x: float64(j) * maxNines / steps, y: float64(v)}
		}
		c.line(pts, d.color, "")
	}
	c.runLegend(data, false)
	return c.svg()
}

func percentileAxis() axis {
	a := axis{title: "percentile", min: 0, max: maxNines}
	labels := []string{"0%", "90%", "99%", "99.9%", "99.99%"}
	for i, l := range labels {
		a.ticks = append(a.ticks, tick{v: float64(i), label: l})
	}
	return a
}

// groupStat is one run's figures for one group label.
type groupStat struct {
	count     int64
	mean, p99 float64
}

// latencyByGroup draws, per group label, one pair of bars per run: the p99
// (light) with the mean (solid) in front of it.
func latencyByGroup(data []*runData, op string) string {
	labels := groupLabels(data, op)
	stats, lo, hi := groupStats(data, op, labels)
	title := groupTitle(data, op)
	// Bars on a log axis need room below the smallest one to stay visible.
	c := newChart(op+": latency by "+title+" (after warm-up)", categoryAxis(title, labels), logAxis("latency", lo/2, hi, fmtTickUS))
	band := (c.right() - c.left()) / float64(len(labels)) * 0.8
	w := band / float64(len(data))
	for j, label := range labels {
		x0 := c.px(float64(j)) - band/2
		for i, d := range data {
			st := stats[i][j]
			if st.count == 0 {
				continue
			}
			bx := x0 + float64(i)*w
			name := d.name + ", " + title + " " + label + ": " + fmtCount(st.count) + " ops, "
			c.bar(bx, bx+w-1, st.p99, d.color, 0.35, name+"p99 "+fmtUS(st.p99))
			c.bar(bx+w*0.2, bx+w*0.8-1, st.mean, d.color, 1, name+"mean "+fmtUS(st.mean))
		}
	}
	c.runLegend(data, true)
	c.legend = append(c.legend,
		legendEntry{label: "mean", color: keyColor(data), box: true, opacity: 1},
		legendEntry{label: "p99", color: keyColor(data), box: true, opacity: 0.35})
	return c.svg()
}

// groupStats returns stats[run][label] and the latency range they span.
func groupStats(data []*runData, op string, labels []string) ([][]groupStat, float64, float64) {
	lo, hi := math.Inf(1), 0.0
	stats := make([][]groupStat, len(data))
	for i, d := range data {
		stats[i] = make([]groupStat, len(labels))
		for j, l := range labels {
			h := d.groups[op][l]
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			st := groupStat{count: h.TotalCount(), mean: h.Mean(), p99: float64(h.ValueAtQuantile(99))}
			stats[i][j] = st
			lo, hi = math.Min(lo, st.mean), math.Max(hi, st.p99)
		}
	}
	return stats, lo, hi
}
