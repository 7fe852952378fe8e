package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/report"
)

// Selection is which series, operation and figures a command of `history`
// shows (its --series, --op and --figure): one type, so list, trend,
// changes and export select alike.
type Selection struct {
	// Series is a series' ID or a unique prefix of it ("": every series).
	Series string
	// Op is the one operation shown ("": every operation).
	Op      string
	Figures []string
}

// Chosen is a selected series with its runs, in order.
type Chosen struct {
	Series Series
	Runs   []Run
}

// ErrSelection is wrapped by Load's refusals: a series no ID names or
// that a prefix names ambiguously, an operation no run of the series has.
// They are the user's input, not the history's fault: the CLI exits 2.
var ErrSelection = errors.New("nothing in the history answers the selection")

// selectionError keeps its error's message and wraps ErrSelection too.
type selectionError struct{ error }

func (e selectionError) Unwrap() []error { return []error{e.error, ErrSelection} }

// Load reads the selected series and their runs from s.
func (sel Selection) Load(ctx context.Context, s *Store) ([]Chosen, error) {
	all, err := s.SeriesList(ctx)
	if err != nil {
		return nil, err
	}
	if sel.Series != "" {
		one, err := FindSeries(all, sel.Series)
		if err != nil {
			return nil, selectionError{err}
		}
		all = []Series{one}
	}
	var out []Chosen
	for _, x := range all {
		runs, err := s.Runs(ctx, x.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, Chosen{x, runs})
	}
	if sel.Op != "" {
		found := false
		for _, c := range out {
			for _, op := range Ops(c.Runs) {
				found = found || op == sel.Op
			}
		}
		if !found {
			return nil, selectionError{fmt.Errorf("--op %s: no run of the series shown has it", sel.Op)}
		}
	}
	return out, nil
}

// Ops are the operations shown of runs: the selected one, or all of them.
func (sel Selection) Ops(runs []Run) []string {
	if sel.Op != "" {
		return []string{sel.Op}
	}
	return Ops(runs)
}

// Analysed is one figure's analysis in its series: what `history changes`
// lists and gates.
type Analysed struct {
	Series   Series
	Analysis Analysis
}

// Trends is the report's trend page of the chosen series (report.Trend:
// every selected operation's figures, their points, intervals and change
// points) and the analyses it was made of, which `history changes` prints.
func Trends(sets []Chosen, sel Selection, o Options) (report.Trend, []Analysed, error) {
	t := report.Trend{Title: "fieldbench history: trends", Notes: []string{
		"Each point is a run's whole-run figure; its bar, the 95 % interval from the run's per-second figures (autocorrelation-corrected, on the log scale; runs of fewer than 10 measured seconds have none).",
		fmt.Sprintf("Change points: e-divisive means as Apache Otava computes them (%s, p ≤ %g, window %d); a dashed line is the mean of a segment between change points (docs/history.md).", o.MethodName(), o.PValue, o.Window),
	}}
	var all []Analysed
	for _, c := range sets {
		ts := report.TrendSeries{ID: c.Series.ID, Label: c.Series.Label, About: c.Series.Describe()}
		for _, r := range c.Runs {
			tr := report.TrendRun{ID: r.ID, Commit: r.Commit, Server: r.Server + " " + r.ServerVersion, Started: r.Started}
			if r.Interrupted {
				tr.Note = "interrupted"
			}
			ts.Runs = append(ts.Runs, tr)
		}
		for _, m := range Marks(c.Runs) {
			ts.Marks = append(ts.Marks, report.TrendMark{Run: m.Index, Text: m.String()})
		}
		for _, op := range sel.Ops(c.Runs) {
			for _, fig := range sel.Figures {
				a, err := Analyze(c.Runs, op, fig, o)
				if err != nil {
					return t, nil, fmt.Errorf("series %s, %s %s: %w", c.Series.ID, op, fig, err)
				}
				if len(a.Points) == 0 {
					continue
				}
				all = append(all, Analysed{c.Series, a})
				tc := report.TrendChart{Op: op, Figure: fig}
				for _, p := range a.Points {
					tc.Points = append(tc.Points, report.TrendPoint{Run: p.Index, Value: p.Value, Lo: p.Lo, Hi: p.Hi})
				}
				for _, cp := range a.Changes {
					tc.Changes = append(tc.Changes, report.TrendChange{Run: a.Points[cp.Index].Index, Before: cp.Before, After: cp.After, P: cp.P,
						NBefore: cp.NBefore, NAfter: cp.NAfter, Worse: a.Worse(cp) > 0})
				}
				ts.Charts = append(ts.Charts, tc)
			}
		}
		t.Series = append(t.Series, ts)
	}
	return t, all, nil
}

// CheckSelectionGates is CheckGates on the chosen series: a gate naming
// an operation none of their runs has is refused before any analysis.
func CheckSelectionGates(gates []compare.Gate, sets []Chosen) error {
	byID := map[string][]Run{}
	var series []Series
	for _, c := range sets {
		byID[c.Series.ID] = c.Runs
		series = append(series, c.Series)
	}
	return CheckGates(gates, series, byID)
}

// SelectionRegressions are the gates' violations in every chosen series
// (Regressions), each as the line `history changes` prints.
func SelectionRegressions(sets []Chosen, gates []compare.Gate, o Options) ([]string, error) {
	var broken []string
	for _, c := range sets {
		v, err := Regressions(c.Series, c.Runs, gates, o)
		if err != nil {
			return nil, err
		}
		for _, x := range v {
			broken = append(broken, x.String())
		}
	}
	return broken, nil
}
