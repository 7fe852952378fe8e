package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/report"
)

// The history read back: what `history list`, `show`, `trend`, `changes`
// and `export` do once their flags are checked, each one call from the
// CLI, which keeps the flags and the exit codes (issue 45: internal/cli is
// wiring only). Their refusals of the user's input wrap ErrSelection,
// ErrNoHistory or ErrNewerSchema, as Open's and Load's do.

// withSelection opens the history at target (never creating one), reads
// sel's series and their runs, and gives both to f; the store is closed
// when f returns.
func withSelection(ctx context.Context, target string, sel Selection, f func(*Store, []Chosen) error) error {
	s, err := Open(ctx, target, false)
	if err != nil {
		return err
	}
	defer s.Close()
	sets, err := sel.Load(ctx, s)
	if err != nil {
		return err
	}
	return f(s, sets)
}

// List writes `history list`: where the history is and how many runs and
// series it holds, then each selected series with its last runs (all when
// last is 0; PrintSeries).
func List(ctx context.Context, w io.Writer, target string, sel Selection, last int) error {
	return withSelection(ctx, target, sel, func(s *Store, sets []Chosen) error {
		total := 0
		for _, c := range sets {
			total += len(c.Runs)
		}
		fmt.Fprintf(w, "history %s: %d run(s) in %d series\n", s.Where, total, len(sets))
		for _, c := range sets {
			PrintSeries(w, c, last)
		}
		return nil
	})
}

// Show writes `history show RUN`: the run an ID or a unique prefix of it
// names, with percentiles recomputed from its stored histograms
// (PrintRun). No such run, or several, is a selection refused
// (ErrSelection), and so is any other failure to find it, as the CLI had it.
func Show(ctx context.Context, w io.Writer, target, run string, percentiles []float64) error {
	s, err := Open(ctx, target, false)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.Run(ctx, run)
	if err != nil {
		return selectionError{err}
	}
	return PrintRun(ctx, w, s, r, percentiles)
}

// TrendReport writes `history trend`: the trend page of the selected series
// (Trends) on the terminal, each figure's last runs (all when last is 0),
// and, with html not "", the page itself to that file, named on w.
func TrendReport(ctx context.Context, w io.Writer, target string, sel Selection, o Options, last int, html string) error {
	return withSelection(ctx, target, sel, func(_ *Store, sets []Chosen) error {
		t, _, err := Trends(sets, sel, o)
		if err != nil {
			return err
		}
		if err := report.TrendTerminal(w, t, last); err != nil {
			return err
		}
		if html == "" {
			return nil
		}
		if err := report.WriteTrendFile(html, t); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nreport: %s\n", html)
		return nil
	})
}

// Changes writes `history changes`: the change points of the selected
// series' figures (as JSON with asJSON), and returns the gates' violations
// on the newest segments (SelectionRegressions), which the CLI makes exit
// 3. A gate naming an operation none of the series' runs has is a
// selection refused (ErrSelection) before any analysis.
func Changes(ctx context.Context, w io.Writer, target string, sel Selection, o Options, gates []compare.Gate, asJSON bool) (broken []string, err error) {
	err = withSelection(ctx, target, sel, func(_ *Store, sets []Chosen) error {
		if err := CheckSelectionGates(gates, sets); err != nil {
			return selectionError{err}
		}
		_, all, err := Trends(sets, sel, o)
		if err != nil {
			return err
		}
		if asJSON {
			if err := WriteChangesJSON(w, all); err != nil {
				return err
			}
		} else {
			PrintChanges(w, sets, all, o)
		}
		broken, err = SelectionRegressions(sets, gates, o)
		return err
	})
	return broken, err
}

// Export writes `history export`: the one selected series as CSV
// (WriteCSV; with sel.Op, that operation's columns alone) to the file out,
// or to stdout when out is "". Several series selected is a selection
// refused (ErrSelection) naming them; the columns left out are named on
// stderr, and a file written on stdout.
func Export(ctx context.Context, stdout, stderr io.Writer, target string, sel Selection, out string) error {
	return withSelection(ctx, target, sel, func(_ *Store, sets []Chosen) error {
		if len(sets) != 1 {
			ids := make([]string, len(sets))
			for i, c := range sets {
				ids[i] = c.Series.ID
			}
			return selectionError{fmt.Errorf("export writes one series: give --series (the history has %d: %s)", len(sets), strings.Join(ids, ", "))}
		}
		runs := sets[0].Runs
		if sel.Op != "" {
			runs = OnlyOp(runs, sel.Op)
		}
		w := stdout
		var f *os.File
		if out != "" {
			var err error
			if f, err = os.Create(out); err != nil {
				return err
			}
			w = f
		}
		written, omitted, err := WriteCSV(w, runs, sel.Figures)
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return err
		}
		if len(omitted) > 0 {
			fmt.Fprintf(stderr, "fieldbench: columns left out (not in every run of the series): %s\n", strings.Join(omitted, ", "))
		}
		if out != "" {
			fmt.Fprintf(stdout, "%d run(s), %d column(s): %s\n", len(runs), len(written), out)
		}
		return nil
	})
}
