package history

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// PrintSeries writes a chosen series as `history list` shows it: what its
// runs share, then its last runs (all when last is 0), with a line where
// something changed inside the series (Marks).
func PrintSeries(w io.Writer, c Chosen, last int) {
	fmt.Fprintf(w, "\nseries %s: %s — %d run(s), %s to %s\n", c.Series.ID, c.Series.Label, c.Series.Runs,
		time.Unix(0, c.Series.First).UTC().Format("2006-01-02 15:04"), time.Unix(0, c.Series.Last).UTC().Format("2006-01-02 15:04"))
	for _, d := range c.Series.Describe() {
		fmt.Fprintf(w, "  %s\n", d)
	}
	first := 0
	if last > 0 && len(c.Runs) > last {
		first = len(c.Runs) - last
		fmt.Fprintf(w, "  (%d earlier runs not shown; --runs 0 shows all)\n", first)
	}
	marks := marksByRun(c.Runs)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tstarted\trun\tcommit\tserver\tfieldbench\thost\tmeasured\t")
	for i := first; i < len(c.Runs); i++ {
		r := c.Runs[i]
		for _, m := range marks[i] {
			fmt.Fprintf(tw, "  ·····\t%s\t\t\t\t\t\t\t\n", m)
		}
		note := ""
		if r.Interrupted {
			note = " (interrupted)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s %s\t%s\t%s\t%.1f s%s\t\n", i+1, r.Started.Format("2006-01-02 15:04:05"), r.Short(), dash(r.Commit),
			r.Server, r.ServerVersion, r.Version, r.Host, r.Duration, note)
	}
	tw.Flush()
}

// marksByRun are the Marks of runs by the index of the run they stand at.
func marksByRun(runs []Run) map[int][]string {
	marks := map[int][]string{}
	for _, m := range Marks(runs) {
		marks[m.Index] = append(marks[m.Index], m.String())
	}
	return marks
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PrintRun writes one run as `history show` shows it: its identity, then
// each operation's count, errors and rate and the percentiles asked for,
// recomputed from the histogram s stored (not the summary's, so any
// percentile can be asked for later).
func PrintRun(ctx context.Context, w io.Writer, s *Store, r Run, percentiles []float64) error {
	fmt.Fprintf(w, "run %s\n  series %s, started %s, %s on %s %s (%s adapter), fieldbench %s\n  host %s (%s), measured %.1f s, commit %s, read from %s\n",
		r.ID, r.Series, r.Started.Format(time.RFC3339), r.Workload, r.Server, r.ServerVersion, r.Adapter, r.Version, r.Host, r.Machine, r.Duration, dash(r.Commit), r.Dir)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := "  operation\tcount\terrors\tops/s"
	for _, p := range percentiles {
		head += "\tp" + strconv.FormatFloat(p, 'f', -1, 64)
	}
	fmt.Fprintln(tw, head+"\t")
	for _, o := range r.Ops {
		line := fmt.Sprintf("  %s\t%d\t%d\t%.1f", o.Name, o.Count, o.Errors, o.Rate)
		b, err := s.Histogram(ctx, r.ID, o.Name)
		if err != nil {
			return err
		}
		h, err := DecodeHist(b)
		if err != nil {
			return err
		}
		for _, p := range percentiles {
			v := "-"
			if h.TotalCount() > 0 {
				v = FormatFigure("p", float64(h.ValueAtQuantile(p)))
			}
			line += "\t" + v
		}
		fmt.Fprintln(tw, line+"\t")
	}
	return tw.Flush()
}

// changeJSON is one change point in `history changes --json`.
type changeJSON struct {
	Series  string  `json:"series"`
	Op      string  `json:"op"`
	Figure  string  `json:"figure"`
	Index   int     `json:"index"` // among the runs that have the figure
	Run     string  `json:"run"`
	Time    string  `json:"time"`
	Commit  string  `json:"commit,omitempty"`
	Before  float64 `json:"before"`
	After   float64 `json:"after"`
	Change  float64 `json:"change"`
	P       float64 `json:"p"`
	NBefore int     `json:"runs_before"`
	NAfter  int     `json:"runs_after"`
	Worse   bool    `json:"worse"`
}

// WriteChangesJSON writes every change point of all as `history changes
// --json` prints it: one indented JSON array ([] when there is none, so a
// script reads an array either way).
func WriteChangesJSON(w io.Writer, all []Analysed) error {
	out := []changeJSON{}
	for _, x := range all {
		for _, cp := range x.Analysis.Changes {
			r := x.Analysis.At(cp)
			out = append(out, changeJSON{Series: x.Series.ID, Op: x.Analysis.Op, Figure: x.Analysis.Figure, Index: cp.Index, Run: r.ID, Time: r.Started.Format(time.RFC3339Nano),
				Commit: r.Commit, Before: cp.Before, After: cp.After, Change: finiteOr0(cp.Change()), P: cp.P, NBefore: cp.NBefore, NAfter: cp.NAfter, Worse: x.Analysis.Worse(cp) > 0})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

// finiteOr0 is v, or 0 where JSON has no number for it (a change from 0).
func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// PrintChanges lists each series' change points as `history changes`
// prints them, and the figures without any in one line.
func PrintChanges(w io.Writer, sets []Chosen, all []Analysed, o Options) {
	fmt.Fprintf(w, "change points: e-divisive means (%s, p ≤ %g, window %d, magnitude ≥ %g)\n", o.MethodName(), o.PValue, o.Window, o.Magnitude)
	for _, c := range sets {
		fmt.Fprintf(w, "\nseries %s: %s (%d runs)\n", c.Series.ID, c.Series.Label, len(c.Runs))
		marks := marksByRun(c.Runs)
		var none []string
		for _, x := range all {
			if x.Series.ID != c.Series.ID {
				continue
			}
			a := x.Analysis
			if len(a.Changes) == 0 {
				none = append(none, a.Op+" "+a.Figure)
				continue
			}
			for _, cp := range a.Changes {
				r := a.At(cp)
				verdict := "better"
				if a.Worse(cp) > 0 {
					verdict = "WORSE"
				}
				commit := ""
				if r.Commit != "" {
					commit = ", commit " + r.Commit
				}
				fmt.Fprintf(w, "  %s %s: %s %+.1f%% from run %d (%s, %s%s): %s → %s, magnitude %.3g, p %.2g, %d run(s) before, %d after\n",
					a.Op, a.Figure, verdict, 100*cp.Change(), a.Points[cp.Index].Index+1, r.Started.Format("2006-01-02 15:04"), r.Short(), commit,
					FormatFigure(a.Figure, cp.Before), FormatFigure(a.Figure, cp.After), cp.Magnitude(), cp.P, cp.NBefore, cp.NAfter)
				if m := marks[a.Points[cp.Index].Index]; len(m) > 0 {
					fmt.Fprintf(w, "      at the same run: %s\n", strings.Join(m, "; "))
				}
			}
		}
		if len(none) > 0 {
			fmt.Fprintf(w, "  no change point: %s\n", strings.Join(none, ", "))
		}
	}
}

// OnlyOp keeps each run's operation op alone, and only the runs that
// have it: `history export --op` writes that operation's columns.
func OnlyOp(runs []Run, op string) []Run {
	out := make([]Run, 0, len(runs))
	for _, r := range runs {
		if o, ok := r.Op(op); ok {
			r.Ops = []Op{o}
			out = append(out, r)
		}
	}
	return out
}
