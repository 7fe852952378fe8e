package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
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
			runs, err := readRuns(cmd.Context(), cmd.ErrOrStderr(), args)
			if err != nil {
				return err
			}
			run := report.MergeRuns(runs...)
			if asJSON {
				sc, err := score.FromRun(run)
				if err != nil {
					return err
				}
				return sc.WriteJSON(cmd.OutOrStdout())
			}
			return report.Scores(cmd.OutOrStdout(), run)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the scores and every intermediate value as JSON (unknown figures are null)")
	return c
}

// readRuns reads run directories or result files (bad input: exit 2), as
// far as it goes: the damaged lines it skipped are named on w (stderr), so
// no command reads a damaged file without a word. A file is read itself,
// whatever its name: `scores /etc/passwd` had read /etc/result.jsonl. A
// done ctx (Ctrl-C) stops the read, and is no bad input.
func readRuns(ctx context.Context, w io.Writer, paths []string) ([]*result.Run, error) {
	runs := make([]*result.Run, 0, len(paths))
	for _, path := range paths {
		r, err := result.ReadContext(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, job.Usage(err)
		}
		report.WarnSkipped(w, r)
		runs = append(runs, r)
	}
	return runs, nil
}
