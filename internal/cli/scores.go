package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/score"
)

func newScoresCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "scores RESULT...",
		Short: "Recompute the elasticity and scalability scores from result files alone",
		Long: `scores reads result files (run directories or result.jsonl files) and
recomputes every score from them alone: for each node join, the baseline
variability, the moment the cluster was stable again, Av1/Av2, Rt1/Rt2, the
areas A and B and the elasticity score (A + B) / ((Rt1 + Rt2)(Av1 + Av2));
for a scalability experiment (one result file per step, or one file with
step labels), each step's mean request-set time and the score
(Avg_2N - Avg_N) / Avg_N per transition. The method and every interpretation
are in docs/elasticity.md. Several files are taken as the steps of one
experiment, in the order given.`,
		Example: `  fieldbench scores results/20261121-101500-experiment-wiki-join/*/result.jsonl
  fieldbench scores --json step1/result.jsonl step2/result.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*result.Run
			for _, a := range args {
				dir := a
				if st, err := os.Stat(a); err == nil && !st.IsDir() {
					dir = filepath.Dir(a)
				}
				r, err := result.Read(dir)
				if err != nil {
					return job.Usage(err)
				}
				runs = append(runs, r)
			}
			run := mergeRuns(runs...)
			if asJSON {
				sc, err := score.FromRun(run)
				if err != nil {
					return err
				}
				return writeScoresJSON(cmd.OutOrStdout(), sc)
			}
			return printScores(cmd.OutOrStdout(), run)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the scores and every intermediate value as JSON (unknown figures are null)")
	return c
}

// mergeRuns makes one run of several (the steps of a scalability
// experiment): points, events and intervals on one clock, that of the
// first run, so every time keeps its order.
func mergeRuns(runs ...*result.Run) *result.Run {
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

// printScores prints the scores of run as tables.
func printScores(w io.Writer, run *result.Run) error {
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
		fmt.Fprintf(tw, "\nJoin %d (%s, nodes %s -> %s)\n", i+1, j.Detail, orDash(j.NodesBefore), orDash(j.NodesAfter))
		rows := [][2]string{
			{"join (bootstrap) at", f(e.Join, " s")},
			{"data settled at", f(e.Settled, " s")},
			{"stable again at", f(e.StableAt, " s")},
			{"data-transfer time", f(e.DataTransfer, " s")},
			{"additional time", f(e.Additional, " s")},
			{"baseline variability", f(e.Baseline, " s")},
			{"Av1 / Av2 (request-set time)", f(e.Av1, " s") + " / " + f(e.Av2, " s")},
			{"Rt1 / Rt2 (one request)", f(e.Rt1*1e3, " ms") + " / " + f(e.Rt2*1e3, " ms")},
			{"A / B (areas)", f(e.A, " s²") + " / " + f(e.B, " s²")},
			{"elasticity score (lower is better)", f(e.Score, "")},
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

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "?"
	}
	return s
}

// writeScoresJSON writes sc as JSON; NaN (unknown) figures become null,
// which encoding/json cannot do by itself.
func writeScoresJSON(w io.Writer, sc score.Scores) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(nanSafe(reflect.ValueOf(sc)))
}

// nanSafe turns v into plain maps, slices and values with every NaN or
// infinite float replaced by nil (JSON null).
func nanSafe(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Struct:
		m := map[string]any{}
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				if inner, ok := nanSafe(v.Field(i)).(map[string]any); ok {
					for k, x := range inner {
						m[k] = x
					}
				}
				continue
			}
			m[sf.Name] = nanSafe(v.Field(i))
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = nanSafe(v.Index(i))
		}
		return out
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = nanSafe(v.MapIndex(k))
		}
		return m
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nanSafe(v.Elem())
	}
	return v.Interface()
}
