package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fieldbench/fieldbench/result"
)

// Terminal writes a plain-text summary of run: a heading, one aligned row per
// operation, one line per Point series with its failures, and the
// workload-specific figures.
func Terminal(w io.Writer, run *result.Run) error {
	d, err := loadRun(run, 0)
	if err != nil {
		return fmt.Errorf("report %s: %w", runName(run, 0), err)
	}
	h := run.Header
	db := strings.TrimSpace(h.Database.Name + " " + h.Database.Version)
	if len(run.Intervals) > 0 {
		fmt.Fprintf(w, "%s: %s on %s, %s measured after %s warm-up\n", d.name, h.Workload,
			db, fmtSeconds(d.summary.DurationSeconds), fmtSeconds(h.WarmupSeconds))
	} else {
		what := "nothing measured"
		if pt := pointsText(run); pt != "" {
			what = "points: " + pt
		}
		fmt.Fprintf(w, "%s: %s on %s, %s\n", d.name, h.Workload, db, what)
	}
	for _, n := range runNotes(d) {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if c := clientText(d.summary.Client); c != "" {
		fmt.Fprintf(w, "client: %s\n", c)
	}
	if l := latenessText(d.summary.Schedule); l != "" {
		fmt.Fprintf(w, "schedule: %s\n", l)
	}
	if ops := measuredOps([]*runData{d}); len(ops) > 0 {
		fmt.Fprintln(w)
		if err := opTable(w, d, ops); err != nil {
			return err
		}
	}
	if err := seriesList(w, d); err != nil {
		return err
	}
	return extrasList(w, d.summary.Extra)
}

func opTable(w io.Writer, d *runData, ops []string) error {
	width := len("operation")
	for _, op := range ops {
		width = max(width, len(op))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Right alignment suits the numbers; padding the first column by hand
	// keeps the names left-aligned.
	fmt.Fprintf(tw, "%-*s\tcount\tops/s\terrors\tmean\tp50\tp99\tp99.9\tmax\t\n", width, "operation")
	var kinds []string
	for _, op := range ops {
		s, ok := d.summary.Ops[op]
		if !ok {
			fmt.Fprintf(tw, "%-*s\t-\t-\t-\t-\t-\t-\t-\t-\t\n", width, op)
			continue
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, op,
			fmtCount(s.Count), fmtRate(s.OpsPerSec), fmtCount(errorTotal(s.Errors)), fmtUS(s.MeanUS),
			fmtUS(float64(s.P50US)), fmtUS(float64(s.P99US)), fmtUS(float64(s.P999US)), fmtUS(float64(s.MaxUS)))
		kinds = append(kinds, errorKindLines(op, s.Errors)...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(kinds) > 0 {
		fmt.Fprintln(w, "\nerrors by kind:")
		for _, l := range kinds {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// seriesList writes one line per Point series (its title and point count),
// then one line per failed point.
func seriesList(w io.Writer, d *runData) error {
	names := seriesNames([]*runData{d})
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range names {
		s := seriesOf([]*runData{d}, name)
		if len(s.runs) == 0 {
			continue
		}
		var pts []result.Point // every node's, for a per-node series
		for _, sr := range s.runs {
			pts = append(pts, sr.pts...)
		}
		fmt.Fprintf(tw, "%s\t%s points%s\n", s.meta.Title, strconv.Itoa(len(pts)), warmFailed(pts))
		for _, p := range pts {
			if p.Failed != "" {
				fmt.Fprintf(tw, "  failed at %s %s\t%s\n", s.xLabel(), s.xText(p), p.Failed)
			}
		}
	}
	return tw.Flush()
}

func extrasList(w io.Writer, extra map[string]float64) error {
	if len(extra) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range sortedKeys(extra) {
		fmt.Fprintf(tw, "%s\t%s\n", k, fmtExtra(k, extra[k]))
	}
	return tw.Flush()
}
