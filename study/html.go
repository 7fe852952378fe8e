package study

import (
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

// HTMLFile is the HTML study report's name in the study's results
// directory, beside ReportFile: the same report for a browser, with the
// paper's shapes drawn (inline SVG, no script, nothing fetched: it opens
// offline).
const HTMLFile = "study-report.html"

// htmlCSS is what the study page adds to the run report's stylesheet.
const htmlCSS = `.tally{font-size:15px;margin:8px 0 14px}.tally b{margin-right:10px}
.v-held{color:#1a7f1a;font-weight:600}.v-not-held{color:#b00;font-weight:600}.v-not-judged-here{color:#666;font-weight:600}
td.why,td.said{max-width:520px;overflow-wrap:anywhere}
.none{color:#666;font-style:italic}
.shape h3{margin-top:8px}
`

// WriteHTML writes the HTML study report: the tally, the steps with their
// budgets and what bound their nodes, every claim with its verdict, reason
// and evidence, the matched values, the study file's notes, and the
// paper's shapes drawn beside fieldbench's.
func WriteHTML(w io.Writer, s *Study, p Plan, results string, ms []Measure, states []StepState) error {
	ran, incomplete := stepDatabases(states)
	rows := Match(s, ms, ran, incomplete)
	claims := Claims(s, ms, ran)
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	e := html.EscapeString

	pf("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s%s</style>\n</head>\n<body>\n",
		e("fieldbench study "+s.Name+": the paper's figures beside fieldbench's"), report.Style(), htmlCSS)
	pf("<h1>Study %s: the paper's figures beside fieldbench's</h1>\n", e(s.Name))
	pf("<p>%s (%s, %d; seed %s). Plan size <b>%s</b>, results in <code>%s</code>. Built by <code>fieldbench study %s --report-only --results %s</code> from the result files alone; the Markdown report beside it is <code>%s</code>.</p>\n",
		e(s.Title), e(s.Authors), s.Year, e(s.Seed), e(p.Size), e(results), e(s.Name), e(results), ReportFile)
	tally := Tally(claims)
	pf("<p class=\"tally\" id=\"tally\">Claims: <b class=\"v-held\">%d held</b><b class=\"v-not-held\">%d not held</b><b class=\"v-not-judged-here\">%d not judged here</b> (of %d)</p>\n",
		tally[Held], tally[NotHeld], tally[NotJudged], len(claims))
	pf("<p>A claim is held when every comparison it makes was measured under equal conditions and came out as the paper says with the 95 %% intervals apart; not held when one came out the other way or the intervals overlap (a tie: fieldbench could not confirm the paper's order); not judged here when the measures cannot answer it, with the reason — among them a run where the machine ran out of CPU before the nodes' budgets, and, for a claim about how a figure changes with node count, nodes without budgets sharing the machine's cores (docs/studies.md).</p>\n")

	pf("<h2>Steps</h2>\n<table>\n<tr><th>#</th><th>step</th><th>for</th><th>state</th><th>server(s)</th><th>runs</th><th>budget</th><th>what bound the nodes</th></tr>\n")
	for i, st := range states {
		state := "no complete result"
		if st.Experiment != "" {
			r := rel(results, st.Experiment)
			state = fmt.Sprintf("<a href=\"%s\">%s</a>", e(filepath.ToSlash(filepath.Join(r, CompleteFile))), e(r))
		}
		budget, bound := stepBudget(st)
		pf("<tr><td class=\"n\">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%d</td><td>%s</td><td class=\"why\">%s</td></tr>\n",
			i+1, e(st.Step.Name), e(st.Step.For), state, e(strings.Join(st.Servers, ", ")), len(st.Runs), e(budget), e(bound))
	}
	pf("</table>\n")

	pf("<h2>Claims</h2>\n<table>\n<tr><th>claim</th><th>the paper</th><th>verdict</th><th>why</th><th>fieldbench's evidence</th></tr>\n")
	for _, c := range claims {
		said := e(strings.Join(strings.Fields(c.Claim.Claim), " "))
		if c.Claim.Hint {
			said += " <i>(A hint: the paper reports it from tests it does not show.)</i>"
		}
		if c.Claim.Note != "" {
			said += " Note: " + e(strings.Join(strings.Fields(c.Claim.Note), " "))
		}
		pf("<tr id=\"%s\"><td><code>%s</code></td><td class=\"said\">%s</td><td class=\"%s\">%s</td><td class=\"why\">%s</td><td class=\"why\">%s</td></tr>\n",
			e(c.Claim.ID), e(c.Claim.ID), said, verdictClass(c.Verdict), e(string(c.Verdict)), e(c.Reason), e(c.Found))
	}
	pf("</table>\n")

	measured, comparable := 0, 0
	for _, r := range rows {
		if !math.IsNaN(r.Measured) {
			measured++
			if r.Comparable {
				comparable++
			}
		}
	}
	pf("<h2>Published values</h2>\n<p>%d values; fieldbench measured %d of them, %d under comparable conditions. The ratio is fieldbench's figure over the paper's; a ratio of an incomparable figure is for orientation, not a finding.</p>\n", len(rows), measured, comparable)
	pf("<table>\n<tr><th>id</th><th>source</th><th>metric</th><th>conditions (paper)</th><th>paper</th><th>fieldbench</th><th>ratio</th><th>comparable</th><th>why not / how</th></tr>\n")
	for _, r := range rows {
		c := valueCells(r)
		pf("<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>%s</td><td class=\"why\">%s</td></tr>\n",
			e(r.Value.ID), e(r.Value.Source.String()), e(c.what), e(condText(r.Cond)), e(c.paper), e(c.fb), e(c.ratio), e(c.comp), e(c.why))
	}
	pf("</table>\n")

	if len(s.Notes) > 0 {
		pf("<h2>The study file's notes</h2>\n<p>What the study file says of the paper as a whole: its own contradictions and what it leaves out.</p>\n<ul>\n")
		for _, n := range s.Notes {
			pf("<li>%s</li>\n", e(strings.Join(strings.Fields(n), " ")))
		}
		pf("</ul>\n")
	}

	pf("<h2>The paper's shapes</h2>\n<p>The paper's published figures (dashed) beside fieldbench's (solid), one colour per database; a shape over node count is the database's only on runs bound by their nodes' budgets (the steps table says which).</p>\n")
	var shapes []shape
	switch s.Name {
	case "trajectory":
		shapes = trajectoryShapes(s, ms)
	case "ingest":
		shapes = ingestShapes(ms)
	case "wiki":
		shapes = wikiShapes(s, rows, states)
	case "microblog":
		shapes = microblogShapes(results, states)
	}
	pf("<div class=\"charts\">\n")
	for _, sh := range shapes {
		pf("<div class=\"shape series\" id=\"%s\">\n<h3>%s</h3>\n", e(sh.id), e(sh.title))
		if sh.svg != "" {
			b.WriteString(sh.svg)
		}
		if sh.note != "" {
			pf("<p class=\"none\">%s</p>\n", sh.note) // already escaped
		}
		pf("</div>\n")
	}
	pf("</div>\n<footer>Generated by fieldbench from the study's result files.</footer>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// stepDatabases are the databases the plan has a step for, and those
// whose every step has no complete result (a database with one complete
// step is measured).
func stepDatabases(states []StepState) (ran, incomplete map[string]bool) {
	ran, incomplete = map[string]bool{}, map[string]bool{}
	for _, st := range states {
		ran[st.Step.For] = true
		if st.Experiment == "" {
			incomplete[st.Step.For] = true
		}
	}
	for _, st := range states {
		if st.Experiment != "" {
			delete(incomplete, st.Step.For)
		}
	}
	return ran, incomplete
}

// verdictClass is a verdict's CSS class: "v-held", "v-not-held",
// "v-not-judged-here".
func verdictClass(v Verdict) string { return "v-" + strings.ReplaceAll(string(v), " ", "-") }

// cells are a value row's cells as both reports print them.
type cells struct{ what, paper, fb, ratio, comp, why string }

func valueCells(r Row) cells {
	v := r.Value
	c := cells{what: v.Metric, paper: paperFig(v), fb: "not measured", ratio: "–", comp: "–", why: r.NotMeasured}
	if v.Operation != "" {
		c.what += " (" + v.Operation + ")"
	}
	c.what += ", " + v.Database
	if v.Versus != "" {
		c.what += " vs " + v.Versus
	}
	if !math.IsNaN(r.Measured) {
		c.fb = fig(r.Measured, v.Unit)
		if !math.IsNaN(r.MeasuredSD) {
			c.fb += " ± " + num(r.MeasuredSD) + " SD"
		}
		if !math.IsNaN(r.Ratio) {
			c.ratio = strconv.FormatFloat(r.Ratio, 'g', 3, 64)
		}
		c.comp, c.why = "yes", r.How
		if !r.Comparable {
			c.comp = "no"
			c.why = strings.Join(r.Reasons, "; ") + ". From: " + r.How
		}
	}
	return c
}

// shape is one of the paper's shapes in the HTML report: a chart (svg),
// or a note saying why there is none, or both (a chart of the paper's
// side alone says what fieldbench did not measure).
type shape struct {
	id, title string
	svg       string
	note      string // HTML, escaped
}

// paperLine and fbLine are a database's two lines: the published
// figures dashed, fieldbench's solid, in the database's colour.
func paperLine(db string, i int, pts []result.Point) report.Line {
	return report.Line{Name: db + " (paper)", Group: i, Dashed: true, Points: pts}
}

func fbLine(db string, i int, pts []result.Point) report.Line {
	return report.Line{Name: db + " (fieldbench)", Group: i, Points: pts}
}

// logWhenSpread sets a log y axis when the figures span more than two
// orders of magnitude (a paper's and fieldbench's on other hardware).
func logWhenSpread(meta *result.SeriesMeta, lines []report.Line) {
	lo, hi := math.Inf(1), 0.0
	for _, l := range lines {
		for _, p := range l.Points {
			if p.Failed == "" && p.Y > 0 {
				lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
			}
		}
	}
	meta.LogY = hi > 0 && hi/lo > 100
}

// trajectoryShapes: throughput and latency against node count per
// dataset and access order, per database, the paper's Tables 3–14 beside
// fieldbench's runs (means over the runs at each node count).
func trajectoryShapes(s *Study, ms []Measure) []shape {
	var out []shape
	for _, op := range []string{"write", "distance"} {
		for _, metric := range []string{"throughput", "latency"} {
			for _, ds := range []string{"dataset0", "dataset1"} {
				for _, acc := range []string{"sequential", "random"} {
					var lines []report.Line
					unit := ""
					var missing []string
					for i, db := range s.Databases {
						paper := map[int]float64{}
						for _, v := range s.Values {
							c := s.Effective(v)
							if v.Metric == metric && v.Operation == op && v.Database == db && c.Dataset == ds && c.Access == acc && c.Nodes > 0 {
								paper[c.Nodes], unit = v.Value, v.Unit
							}
						}
						var pp []result.Point
						for _, n := range sortedInts(paper) {
							pp = append(pp, result.Point{X: float64(n), Y: paper[n]})
						}
						fb := map[int][]float64{}
						failed := map[int]string{}
						for _, m := range ms {
							if m.Metric != metric || m.Operation != op || m.Database != db || m.Dataset != ds || m.Access != acc {
								continue
							}
							if m.Failed != "" {
								failed[m.Nodes] = m.Failed
								continue
							}
							to := unit
							if to == "" {
								to = m.Unit
							}
							if v, ok := convert(m.Value, m.Unit, to); ok && !math.IsNaN(v) {
								fb[m.Nodes] = append(fb[m.Nodes], v)
							}
							if unit == "" {
								unit = m.Unit
							}
						}
						var fp []result.Point
						for _, n := range sortedInts(fb) {
							var sum float64
							for _, v := range fb[n] {
								sum += v
							}
							fp = append(fp, result.Point{X: float64(n), Y: sum / float64(len(fb[n])), N: len(fb[n])})
						}
						for _, n := range sortedInts(failed) {
							if _, ok := fb[n]; !ok {
								fp = append(fp, result.Point{X: float64(n), Failed: failed[n]})
							}
						}
						if len(pp) > 0 {
							lines = append(lines, paperLine(db, i, pp))
						}
						if len(fp) > 0 {
							lines = append(lines, fbLine(db, i, fp))
						} else if len(pp) > 0 {
							missing = append(missing, db)
						}
					}
					if len(lines) == 0 {
						continue
					}
					title := fmt.Sprintf("%s %s against nodes: %s, %s", op, metric, ds, acc)
					meta := result.SeriesMeta{Title: title, XLabel: "nodes", YLabel: fmt.Sprintf("%s (%s)", metric, unit)}
					logWhenSpread(&meta, lines)
					sh := shape{id: "shape-" + strings.Join([]string{op, metric, ds, acc}, "-"), title: title + " (Tables 3–14)", svg: report.LinesSVG(meta, lines)}
					if len(missing) > 0 {
						sh.note = html.EscapeString("fieldbench: not measured for " + strings.Join(missing, ", ") + " (the paper's side alone is drawn).")
					}
					out = append(out, sh)
				}
			}
		}
	}
	if len(out) == 0 {
		out = append(out, shape{id: "shape-trajectory", title: "Throughput and latency against nodes", note: "not measured: no figure of the paper or of fieldbench to draw."})
	}
	return out
}

// ingestShapes: throughput against load with the 95 % intervals per
// database (the paper's Figures 3–4, which it publishes as plots only).
func ingestShapes(ms []Measure) []shape {
	byDB := map[string][]result.Point{}
	server := map[string]string{}
	for _, m := range ms {
		if m.Metric != "throughput" || m.Operation != "batch" {
			continue
		}
		p := result.Point{X: float64(m.Load), Y: m.Value, Lo: m.Lo, Hi: m.Hi, N: m.N, Failed: m.Failed}
		if m.Failed != "" {
			p.Y = 0
		}
		byDB[m.Database] = append(byDB[m.Database], p)
		server[m.Database] = m.Server
	}
	sh := shape{id: "shape-ingest-throughput", title: "Throughput against load, mean and 95 % interval per database (Figures 3–4)"}
	dbs := make([]string, 0, len(byDB))
	for db := range byDB {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	var lines []report.Line
	for i, db := range dbs {
		pts := byDB[db]
		sort.SliceStable(pts, func(a, b int) bool { return pts[a].X < pts[b].X })
		lines = append(lines, report.Line{Name: db + ": " + server[db] + " (fieldbench)", Group: i, Points: pts})
	}
	note := "The paper publishes Figures 3–4 as plots only (no throughput in records per second anywhere in its text): fieldbench's side alone is drawn."
	if len(lines) == 0 {
		note = "not measured: no sweep measured yet. " + note
	} else {
		sh.svg = report.LinesSVG(result.SeriesMeta{Title: "ingest throughput against load", XLabel: "records per source", YLabel: "throughput (records/s)", Band: "ci"}, lines)
	}
	sh.note = html.EscapeString(note)
	return []shape{sh}
}

// wikiShapes: the request-set time of each step's runs over time, joins
// marked (the paper's Figures 5–12, published as plots only), and Tables
// 1–4 against the paper's node counts: each of fieldbench's figures at
// the paper's count it stands for (the value table's matching).
func wikiShapes(s *Study, rows []Row, states []StepState) []shape {
	var out []shape
	drawn := false
	for _, st := range states {
		for _, tl := range st.Timelines {
			title := fmt.Sprintf("request-set time during %s (%s)", st.Step.Name, filepath.Base(tl.Run))
			svg := report.LinesSVG(result.SeriesMeta{Title: title, XLabel: "seconds since start", YLabel: "request-set time (s)", XIsTime: true, Band: "sd"},
				[]report.Line{{Name: st.Step.For + " (fieldbench)", Points: tl.Points, Events: tl.Events}})
			if svg == "" {
				continue
			}
			drawn = true
			out = append(out, shape{id: "shape-wiki-timeline-" + st.Step.Name + "-" + filepath.Base(tl.Run), title: title + ", each join a numbered marker",
				svg: svg, note: "The paper's Figures 5–12 are plots without published data: fieldbench's side alone."})
		}
	}
	if !drawn {
		out = append(out, shape{id: "shape-wiki-timeline", title: "Request-set time during each doubling (Figures 5–12)",
			note: "not measured: no complete wiki step holds request-set times. The paper publishes these figures as plots only."})
	}
	for _, t := range []struct{ metric, table, label string }{
		{"request_set_time", "Table 4", "mean request-set time (s)"},
		{"elasticity_score", "Table 2", "elasticity score"},
		{"scalability_score", "Table 3", "scalability score"},
		{"stabilization_time", "Table 1", "stabilisation time (min)"},
	} {
		var lines []report.Line
		var unmeasured []string
		for i, db := range s.Databases {
			var pp, fp []result.Point
			for _, r := range rows {
				if r.Value.Metric != t.metric || r.Value.Database != db || r.Cond.Nodes == 0 || r.Value.Unit == "%" {
					continue
				}
				x := float64(r.Cond.Nodes)
				pp = append(pp, result.Point{X: x, Y: r.Value.Value})
				if !math.IsNaN(r.Measured) {
					fp = append(fp, result.Point{X: x, Y: r.Measured})
				}
			}
			if len(pp) > 0 {
				lines = append(lines, paperLine(db, i, pp))
			}
			if len(fp) > 0 {
				lines = append(lines, fbLine(db, i, fp))
			} else if len(pp) > 0 {
				unmeasured = append(unmeasured, db)
			}
		}
		x := "nodes (the paper's; before the doubling for a transition)"
		title := fmt.Sprintf("%s against nodes (%s)", t.label, t.table)
		sh := shape{id: "shape-wiki-" + t.metric, title: title}
		if len(lines) > 0 {
			sh.svg = report.LinesSVG(result.SeriesMeta{Title: title, XLabel: x, YLabel: t.label}, lines)
		}
		note := "fieldbench's figures stand at the paper's node count each measured count stands for (the value table's reasons give fieldbench's own)."
		if len(unmeasured) > 0 {
			note += " fieldbench: not measured for " + strings.Join(unmeasured, ", ") + "."
		}
		sh.note = html.EscapeString(note)
		out = append(out, sh)
	}
	return out
}

// microblogShapes: the paper's figures for microblog (latency by the
// author's follower count, the join and crash timelines) are plots
// without published data, so fieldbench's side alone is drawn: each
// grouped operation's mean latency by group, and each operation's p99
// latency over a run with a join or a crash, its events numbered. What no
// complete step measured is "not measured", with the steps' own reports.
func microblogShapes(results string, states []StepState) []shape {
	var links []string
	for _, st := range states {
		if st.Experiment != "" {
			r := filepath.ToSlash(filepath.Join(rel(results, st.Experiment), CompleteFile))
			links = append(links, fmt.Sprintf("<a href=\"%s\">%s</a>", html.EscapeString(r), html.EscapeString(st.Step.Name)))
		}
	}
	where := "no step has a complete report yet"
	if len(links) > 0 {
		where = "each step's own report draws what its runs recorded: " + strings.Join(links, ", ")
	}
	const plots = "The paper publishes these figures as plots only: fieldbench's side alone."
	var out []shape
	for _, st := range states {
		for _, g := range st.Groups {
			by := g.By
			if by == "" {
				by = "group"
			}
			title := fmt.Sprintf("%s latency by %s: %s (%s)", g.Op, by, st.Step.Name, filepath.Base(g.Run))
			svg := report.LinesSVG(result.SeriesMeta{Title: title, XLabel: by, YLabel: "mean latency (ms)"},
				[]report.Line{{Name: st.Step.For + " (fieldbench)", Points: g.Points}})
			if svg != "" {
				out = append(out, shape{id: "shape-microblog-groups-" + st.Step.Name + "-" + filepath.Base(g.Run) + "-" + g.Op, title: title, svg: svg, note: html.EscapeString(plots)})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, shape{id: "shape-microblog-latency-by-followers", title: "Post latency by the author's follower count (the paper's figures)",
			note: "not measured: no complete step recorded latency by follower count; " + where + "."})
	}
	for _, kind := range []struct{ name, title string }{
		{"join", "Latency during the join of two nodes (the paper's figures)"},
		{"crash", "Latency while 2 of 6 nodes crash (the paper's figures)"},
	} {
		drawn := false
		for _, st := range states {
			var runs []string
			byRun := map[string][]Timeline{}
			for _, tl := range st.Timelines {
				if _, ok := byRun[tl.Run]; !ok {
					runs = append(runs, tl.Run)
				}
				byRun[tl.Run] = append(byRun[tl.Run], tl)
			}
			for _, run := range runs {
				tls := byRun[run]
				if timelineKind(tls[0].Events) != kind.name {
					continue
				}
				var lines []report.Line
				for i, tl := range tls {
					l := report.Line{Name: tl.Label, Group: i, Points: tl.Points}
					if i == 0 {
						l.Events = tl.Events // once: every line of the run has the same
					}
					lines = append(lines, l)
				}
				title := fmt.Sprintf("p99 latency per second through the %s: %s (%s)", kind.name, st.Step.Name, filepath.Base(run))
				svg := report.LinesSVG(result.SeriesMeta{Title: title, XLabel: "seconds since start", YLabel: "p99 latency (ms)", XIsTime: true}, lines)
				if svg == "" {
					continue
				}
				drawn = true
				out = append(out, shape{id: "shape-microblog-" + kind.name + "-" + st.Step.Name + "-" + filepath.Base(run), title: title + ", each event a numbered marker", svg: svg, note: html.EscapeString(plots)})
			}
		}
		if !drawn {
			out = append(out, shape{id: "shape-microblog-" + kind.name + "-timeline", title: kind.title,
				note: "not measured: no complete step recorded a run with a " + kind.name + "; " + where + "."})
		}
	}
	return out
}

// timelineKind is "crash" for a run whose events stop or kill a node,
// else "join".
func timelineKind(ev []result.Event) string {
	for _, e := range ev {
		switch e.Name {
		case "kill", "stop-node", "restart", "remove":
			return "crash"
		}
	}
	return "join"
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
