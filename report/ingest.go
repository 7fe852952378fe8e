package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// IngestTable prints the terminal table of an ingest sweep, one row per
// load: the sample size, mean, standard deviation, confidence interval (and
// its half-width relative to the mean, the figure the study quotes: ~5 %)
// and failures.
func IngestTable(w io.Writer, points []ingest.PointStats, cfg ingest.SweepConfig) error {
	fmt.Fprintf(w, "ingest throughput (records/s) per load: %d sources, %d runs per load of which %d warm-up, 95 %% CI (Student t)\n",
		cfg.Run.Sources, cfg.Runs, cfg.WarmupRuns)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "records/source\tn\tmean\tsd\t95% CI\t±\tfailed\t")
	for _, p := range points {
		ci, rel, sd := "-", "-", "-"
		if p.CIDefined {
			ci = "[" + Thousands(p.Lo) + ", " + Thousands(p.Hi) + "]"
			sd = Thousands(p.SD)
			if p.Mean > 0 {
				rel = strconv.FormatFloat(100*(p.Hi-p.Mean)/p.Mean, 'f', 1, 64) + "%"
			}
		}
		mean := "-"
		if p.N > 0 {
			mean = Thousands(p.Mean)
		}
		failed := strconv.Itoa(p.Failed)
		if p.WarmupFailed > 0 {
			failed += fmt.Sprintf(" (+%d warm-up)", p.WarmupFailed)
		}
		if p.Partial {
			failed += " partial"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", Thousands(float64(p.Records)), p.N, mean, sd, ci, rel, failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var causes []string
	for _, p := range points {
		if p.Cause != "" {
			causes = append(causes, fmt.Sprintf("  load %s: %s", Thousands(float64(p.Records)), p.Cause))
		}
	}
	if len(causes) > 0 {
		fmt.Fprintf(w, "first failure per load:\n%s\n", strings.Join(causes, "\n"))
	}
	return nil
}

// Thousands formats a figure rounded to an integer with thousands
// separators: 241,433.
func Thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
