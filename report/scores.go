package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/result"
)

// MergeRuns makes one run of several (the steps of a scalability
// experiment): points, events and intervals on one clock, that of the
// first run, so every time keeps its order.
func MergeRuns(runs ...*result.Run) *result.Run {
	if len(runs) == 1 {
		return runs[0]
	}
	first := runs[0]
	out := &result.Run{Dir: first.Dir, Header: first.Header}
	for _, r := range runs {
		off := r.Header.Started.Sub(first.Header.Started).Seconds()
		for _, p := range r.Points {
			if meta, ok := r.Header.Series[p.Series]; ok && meta.XIsTime || p.Series == score.SeriesRequestSet {
				p.X += off
			}
			out.Points = append(out.Points, p)
		}
		for _, e := range r.Events {
			e.At += off
			out.Events = append(out.Events, e)
		}
		for _, iv := range r.Intervals {
			iv.Start += off
			iv.End += off
			out.Intervals = append(out.Intervals, iv)
		}
	}
	return out
}

// Scores prints the elasticity and scalability scores of run as tables
// (what `fieldbench scores` and an experiment's end show).
func Scores(w io.Writer, run *result.Run) error {
	sc, err := score.FromRun(run)
	if err != nil {
		return err
	}
	f := func(v float64, unit string) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return fmt.Sprintf("%.4g%s", v, unit)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for i, j := range sc.Elasticity {
		e := j.Elasticity
		fmt.Fprintf(tw, "\nJoin %d (%s, nodes %s -> %s)\n", i+1, j.Detail, unknownIfBlank(j.NodesBefore), unknownIfBlank(j.NodesAfter))
		rows := [][2]string{
			{"join (bootstrap) at", f(e.Join, " s")},
			{"data settled at", f(e.Settled, " s")},
			{"stable again at (" + e.Detector + ")", f(e.StableAt, " s")},
			{"data-transfer time", f(e.DataTransfer, " s")},
			{"additional time", f(e.Additional, " s")},
			{"baseline variability", f(e.Baseline, " s")},
			{"Av1 / Av2 (request-set time)", f(e.Av1, " s") + " / " + f(e.Av2, " s")},
			{"Rt1 / Rt2 (one request)", f(e.Rt1*1e3, " ms") + " / " + f(e.Rt2*1e3, " ms")},
			{"A / B (areas; B = one SD, the study's)", f(e.A, " s²") + " / " + f(e.B, " s²")},
			{"elasticity score (lower is better)", f(e.Score, "")},
			{"  with B = the ±SD band (2B)", f(e.ScoreBand, "")},
		}
		for _, v := range e.Verdicts {
			at := "never stable"
			if v.Stable {
				at = "stable at " + f(v.StableAt, " s")
			}
			rows = append(rows, [2]string{"detector " + v.Detector, at + ", score " + f(v.Score, "") + " (2B: " + f(v.ScoreBand, "") + ")"})
		}
		for _, r := range rows {
			fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
		}
		for _, n := range e.Notes {
			fmt.Fprintf(tw, "  note: %s\n", n)
		}
	}
	if len(sc.Steps) > 1 {
		fmt.Fprintf(tw, "\nScalability\n  step\tnodes\tmean request-set time\tsets\n")
		for _, s := range sc.Steps {
			fmt.Fprintf(tw, "  %s\t%s\t%s ± %s\t%d\n", s.Label, s.Nodes, f(s.Avg, " s"), f(s.SD, " s"), s.N)
		}
		for _, t := range sc.Scalability {
			fmt.Fprintf(tw, "  %s -> %s nodes\tscore %s\t(0 perfect, < 0 superlinear)\n", t.From.Nodes, t.To.Nodes, f(t.Score, ""))
		}
	}
	for _, n := range sc.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	if len(sc.Elasticity) == 0 && len(sc.Steps) < 2 {
		fmt.Fprintln(tw, "no join and no scalability steps in these results: nothing to score")
	}
	return tw.Flush()
}

// unknownIfBlank is "?" for a figure the result file does not give.
func unknownIfBlank(s string) string {
	if strings.TrimSpace(s) == "" {
		return "?"
	}
	return s
}
