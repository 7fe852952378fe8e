package report

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/report/export"
	"github.com/fieldbench/fieldbench/result"
)

// Comparison is one new run against the base run.
type Comparison struct {
	New  *result.Run
	Rows []compare.Row
}

// runLabel names a run in a comparison: its directory's base name, workload
// and database. The directory is cleaned first, so "new/" (as a shell's
// completion writes it) is named "new", not "".
func runLabel(r *result.Run) string {
	name := filepath.Base(filepath.Clean(r.Dir))
	return fmt.Sprintf("%s (%s on %s %s)", name, r.Header.Workload, r.Header.Database.Name, r.Header.Database.Version)
}

func fmtFig(fig string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if fig == "throughput" {
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmtUSFloat(v)
}

func fmtUSFloat(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.3fs", us/1e6)
	case us >= 1000:
		return fmt.Sprintf("%.2fms", us/1000)
	}
	return fmt.Sprintf("%.0fµs", us)
}

func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

// verdict is what a row says in words.
func verdict(r compare.Row) string {
	switch {
	case r.Note != "":
		return r.Note
	case !r.Significant:
		return "no significant change"
	case r.Better():
		return "better"
	}
	return "WORSE"
}

// CompareTerminal prints one table per new run: each operation's figures in
// both runs, the whole-run change, the change of the per-second mean with
// its confidence interval, and the verdict.
func CompareTerminal(w io.Writer, base *result.Run, cs []Comparison, level float64) error {
	for _, c := range cs {
		fmt.Fprintf(w, "base: %s\nnew:  %s\n", runLabel(base), runLabel(c.New))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "op\tfigure\tbase\tnew\tchange\tper second\t%.0f%% CI\tp\tverdict\n", 100*level)
		for _, r := range c.Rows {
			p := "-"
			if !math.IsNaN(r.P) {
				p = fmt.Sprintf("%.3g", r.P)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t[%s, %s]\t%s\t%s\n", r.Op, r.Figure, fmtFig(r.Figure, r.Base), fmtFig(r.Figure, r.New),
				pct(r.Change), pct(r.Shift), pct(r.Lo), pct(r.Hi), p, verdict(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// CompareHTML writes the comparison as one self-contained page.
func CompareHTML(w io.Writer, base *result.Run, cs []Comparison, level float64, violations []string) error {
	p := &page{}
	t := "fieldbench comparison"
	p.printf("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s.worse{background:#fde2e2}.better{background:#e2f5e2}</style>\n</head>\n<body>\n<h1>%s</h1>\n", t, css, t)
	p.printf("<p>Base: %s</p>\n", esc(runLabel(base)))
	p.printf("<p style=\"font-size:13px;color:#555\">Change is that of the whole-run figure. Per second is the change of the mean of the per-second figure (for a percentile, of each second's percentile): the %.0f %% interval (on the log scale) and p qualify it, from Welch's t-test on the log ratio of the per-second means, each mean's variance inflated for its lag-1 autocorrelation (docs/compare.md). A change whose interval holds 0 is within the runs' noise; one stalled second moves the whole-run percentile, not the verdict.</p>\n", 100*level)
	if len(violations) > 0 {
		p.printf("<h2>Gates broken</h2>\n<ul>\n")
		for _, v := range violations {
			p.printf("<li>%s</li>\n", esc(v))
		}
		p.printf("</ul>\n")
	}
	for _, c := range cs {
		p.printf("<h2>%s</h2>\n<table>\n<tr><th>op</th><th>figure</th><th>base</th><th>new</th><th>change</th><th>per second</th><th>%.0f %% CI</th><th>p</th><th>verdict</th></tr>\n", esc(runLabel(c.New)), 100*level)
		for _, r := range c.Rows {
			class := ""
			if r.Significant && r.Note == "" {
				class = " class=\"worse\""
				if r.Better() {
					class = " class=\"better\""
				}
			}
			pv := "-"
			if !math.IsNaN(r.P) {
				pv = fmt.Sprintf("%.3g", r.P)
			}
			p.printf("<tr%s><td>%s</td><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">[%s, %s]</td><td class=\"n\">%s</td><td>%s</td></tr>\n",
				class, esc(r.Op), esc(r.Figure), esc(fmtFig(r.Figure, r.Base)), esc(fmtFig(r.Figure, r.New)), pct(r.Change), pct(r.Shift), pct(r.Lo), pct(r.Hi), pv, esc(verdict(r)))
		}
		p.printf("</table>\n")
	}
	p.printf("</body>\n</html>\n")
	_, err := io.WriteString(w, p.b.String())
	return err
}

// Compare compares each of news with base (compare.All at level, with
// gates), prints the tables to w (CompareTerminal) and, with html set,
// writes the page there too (CompareHTML) and says where: the whole of
// `fieldbench compare` once its input is checked. It returns the gates
// broken; an unevaluated gate is compare.ErrUnevaluated, before anything
// is printed.
func Compare(w io.Writer, base *result.Run, news []*result.Run, level float64, gates []compare.Gate, html string) (broken []string, err error) {
	rows, broken, err := compare.All(base, news, level, gates)
	if err != nil {
		return nil, err
	}
	cs := make([]Comparison, len(rows))
	for i := range rows {
		cs[i] = Comparison{New: news[i], Rows: rows[i]}
	}
	if err := CompareTerminal(w, base, cs, level); err != nil {
		return nil, err
	}
	if html != "" {
		// Through a temporary file: a failed render leaves no half page,
		// and never an emptied file.
		if err := export.WriteFile(html, func(f io.Writer) error {
			return CompareHTML(f, base, cs, level, broken)
		}); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "report: %s\n", html)
	}
	return broken, nil
}
