package report

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// Events (kill, restart, join, data-settled, stable...) are drawn on every
// time chart as dashed vertical lines. Experiments put several of them
// within seconds of each other (two nodes killed at once, data settled just
// before the cluster is stable), so each marker carries a number that the
// page's Events table explains, the numbers are stacked in rows so they never
// overlap, and a marker's name is written down the plot only where it does
// not run over another name.

const (
	eventFont    = 10.0
	eventCharW   = 5.7 // rough width of one 10px character
	eventRowH    = 13.0
	eventNameGap = 6.0  // vertical room between two staggered names
	eventNameW   = 12.0 // horizontal room a rotated name needs beside its line
	// eventDetailMax is the longest detail written beside a marker; longer
	// ones are only in the tooltip and the Events table.
	eventDetailMax = 16
)

// numberEvents gives every event of every run its number on the page: runs
// in order, each run's events by time.
func numberEvents(data []*runData) {
	n := 0
	for _, d := range data {
		d.events = make([]numberedEvent, len(d.run.Events))
		for i, e := range d.run.Events {
			d.events[i] = numberedEvent{Event: e}
		}
		sort.SliceStable(d.events, func(i, j int) bool { return d.events[i].At < d.events[j].At })
		for i := range d.events {
			n++
			d.events[i].num = n
		}
	}
}

// numberedEvent is an event with its number on the page.
type numberedEvent struct {
	result.Event
	num int
}

// label is what is written beside the marker: the name, with a short detail.
func (e numberedEvent) label() string {
	if e.Detail != "" && len([]rune(e.Detail)) <= eventDetailMax {
		return e.Name + " " + e.Detail
	}
	return e.Name
}

// eventMark is one event placed on a chart.
type eventMark struct {
	x            float64 // pixel column
	num          int
	label, tip   string
	color        string
	row          int     // number row, from the top
	nameY        float64 // start of the rotated name; 0 when it is left out
	nameW, numW  float64
	nameFits     bool
	numX0, numX1 float64
}

// events draws every run's events on the chart: numbered markers, names
// staggered down the plot where they fit.
func (c *chart) events(data []*runData) {
	var marks []*eventMark
	for _, d := range data {
		color := neutral
		if len(data) > 1 {
			color = d.color
		}
		for _, e := range d.events {
			tip := "#" + strconv.Itoa(e.num) + " " + d.name + " at " + strconv.FormatFloat(e.At, 'f', 1, 64) + " s: " + e.Name
			if e.Detail != "" {
				tip += " — " + e.Detail
			}
			num := strconv.Itoa(e.num)
			marks = append(marks, &eventMark{x: c.px(e.At), num: e.num, label: e.label(), tip: tip, color: color,
				nameW: textWidth(e.label()), numW: textWidth(num) + 4})
		}
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].x < marks[j].x })
	placeNumbers(marks)
	placeNames(marks, c.top(), c.bottom()-16)
	// Lines first, then every label over them, so no line crosses a label.
	for _, m := range marks {
		c.printf(`<g><title>%s</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.2" stroke-dasharray="4 3"/></g>`+"\n",
			esc(m.tip), num(m.x), num(c.top()), num(m.x), num(c.bottom()), m.color)
	}
	for _, m := range marks {
		c.printf(`<g><title>%s</title><text x="%s" y="%s" text-anchor="middle" font-size="10" font-weight="bold" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%d</text>`,
			esc(m.tip), num((m.numX0+m.numX1)/2), num(c.top()+float64(m.row)*eventRowH+10), m.color, m.num)
		if m.nameFits {
			c.printf(`<text transform="translate(%s,%s) rotate(90)" font-size="10" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`,
				num(m.x+3), num(m.nameY), m.color, esc(m.label))
		}
		c.printf("</g>\n")
	}
}

func textWidth(s string) float64 { return float64(len([]rune(s))) * eventCharW }

// placeNumbers puts each number centred on its line in the first row where
// it does not touch a number already placed, and returns the rows used.
func placeNumbers(marks []*eventMark) int {
	var rowEnd []float64 // right edge of the last number in each row
	for _, m := range marks {
		m.numX0, m.numX1 = m.x-m.numW/2, m.x+m.numW/2
		r := 0
		for r < len(rowEnd) && rowEnd[r] > m.numX0 {
			r++
		}
		if r == len(rowEnd) {
			rowEnd = append(rowEnd, 0)
		}
		rowEnd[r], m.row = m.numX1, r
	}
	return max(1, len(rowEnd))
}

// placeNames gives each marker's rotated name the highest start below the
// numbers near it (plot top at top) where it does not overlap the name of a
// marker less than eventNameW pixels away; a name that would run past bottom
// is left out (its number and the Events table still say what it is).
func placeNames(marks []*eventMark, top, bottom float64) {
	for i, m := range marks {
		rows := 0
		for _, o := range marks {
			if math.Abs(o.x-m.x) < eventNameW+o.numW/2 {
				rows = max(rows, o.row+1)
			}
		}
		y := top + float64(rows)*eventRowH + 6
		for moved := true; moved; {
			moved = false
			for _, o := range marks[:i] {
				if !o.nameFits || math.Abs(o.x-m.x) >= eventNameW {
					continue
				}
				if y < o.nameY+o.nameW+eventNameGap && o.nameY < y+m.nameW+eventNameGap {
					y, moved = o.nameY+o.nameW+eventNameGap, true
				}
			}
		}
		if y+m.nameW <= bottom {
			m.nameY, m.nameFits = y, true
		}
	}
}

// eventsTable lists every event with its number, as drawn on the charts.
func (p *page) eventsTable() {
	total := 0
	for _, d := range p.data {
		total += len(d.events)
	}
	if total == 0 {
		return
	}
	p.printf("<h2>Events</h2>\n<table>\n<tr><th>#</th>")
	if len(p.data) > 1 {
		p.printf("<th>run</th>")
	}
	p.printf("<th>time</th><th>event</th><th>detail</th></tr>\n")
	for _, d := range p.data {
		for _, e := range d.events {
			p.printf("<tr><td class=\"n\">%d</td>", e.num)
			if len(p.data) > 1 {
				p.printf("<td>%s%s</td>", swatch(d.color), esc(d.name))
			}
			p.printf("<td class=\"n\">%s</td><td>%s</td><td>%s</td></tr>\n", esc(fmtSeconds(e.At)), esc(e.Name), esc(strings.TrimSpace(e.Detail)))
		}
	}
	p.printf("</table>\n")
}
