package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fieldbench/fieldbench/result"
)

// Terminal writes a plain-text summary of run: a heading, one aligned row per
// operation and the workload-specific figures.
func Terminal(w io.Writer, run *result.Run) error {
	d, err := loadRun(run, 0)
	if err != nil {
		return fmt.Errorf("report %s: %w", runName(run, 0), err)
	}
	h := run.Header
	fmt.Fprintf(w, "%s: %s on %s, %s measured after %s warm-up\n", d.name, h.Workload,
		strings.TrimSpace(h.Database.Name+" "+h.Database.Version), fmtSeconds(d.summary.DurationSeconds), fmtSeconds(h.WarmupSeconds))
	for _, n := range runNotes(d) {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w)
	if err := opTable(w, d, operations([]*result.Run{run})); err != nil {
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
	for _, op := range ops {
		s, ok := d.summary.Ops[op]
		if !ok {
			fmt.Fprintf(tw, "%-*s\t-\t-\t-\t-\t-\t-\t-\t-\t\n", width, op)
			continue
		}
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, op,
			fmtCount(s.Count), fmtRate(s.OpsPerSec), fmtErrors(s.Errors), fmtUS(s.MeanUS),
			fmtUS(float64(s.P50US)), fmtUS(float64(s.P99US)), fmtUS(float64(s.P999US)), fmtUS(float64(s.MaxUS)))
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
