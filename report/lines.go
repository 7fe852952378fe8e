package report

import "github.com/fieldbench/fieldbench/result"

// Charts for pages other than a run's report (the study report's shapes:
// a paper's published figures beside fieldbench's), drawn by the same
// code as a run's Point series, so that they look alike and the chart
// code stays in one place.

// Line is one named line (or, when every point has a "category" label,
// one set of bars) of a chart drawn by LinesSVG.
type Line struct {
	Name string
	// Group picks the colour: lines of one group share it (a database's
	// published figures and fieldbench's).
	Group int
	// Dashed draws the line dashed (the published figures).
	Dashed bool
	// Points are drawn as a Point series is: error bars from Lo–Hi when
	// the chart's Band is "ci" (SD when "sd"), failed points as crosses.
	Points []result.Point
	// Events are drawn as numbered markers on a chart over time.
	Events []result.Event
}

// LinesSVG draws lines as one inline SVG chart, titled and labelled by
// meta, as a run's report draws a Point series (axes, legend, error bars,
// failures, tooltips); "" when no line has a point to draw.
func LinesSVG(meta result.SeriesMeta, lines []Line) string {
	const name = "lines"
	data := make([]*runData, len(lines))
	for i, l := range lines {
		pts := make([]result.Point, len(l.Points))
		for j, p := range l.Points {
			p.Series = name
			pts[j] = p
		}
		r := &result.Run{Header: result.Header{Series: map[string]result.SeriesMeta{name: meta}}, Points: pts, Events: l.Events}
		data[i] = &runData{run: r, name: l.Name, color: palette[l.Group%len(palette)]}
	}
	numberEvents(data)
	s := seriesOf(data, name)
	if len(s.runs) == 0 {
		return ""
	}
	for i := range s.runs {
		for j, d := range data {
			if s.runs[i].d == d && lines[j].Dashed {
				s.runs[i].dash = runDashes[1]
			}
		}
	}
	return pointChart(s)
}

// Style is the run report's stylesheet, for another page in its style.
func Style() string { return css }
