package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/report"
)

// ExitRegression: compare --fail-on found a significant regression.
const ExitRegression = 3

// errRegression makes Main exit with ExitRegression.
type errRegression struct{ n int }

func (e errRegression) Error() string {
	return fmt.Sprintf("%d gate(s) of --fail-on broken", e.n)
}

func newCompareCmd() *cobra.Command {
	var level float64
	var failOn, out string
	var force bool
	c := &cobra.Command{
		Use:   "compare BASE NEW...",
		Short: "Is NEW faster than BASE, or is it noise? Per operation and figure: change, confidence interval, significance",
		Long:  compare.Help,
		Example: `  fieldbench compare results/run-old results/run-new
  fieldbench compare base/ new/ --fail-on 'p99+10%,throughput-5%' --html compare.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("compare needs a base run and at least one new run")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !(level > 0 && level < 1) {
				return usagef("--level %g must be between 0 and 1 (0.95 for 95 %%)", level)
			}
			gates, err := compare.ParseGates(failOn)
			if err != nil {
				return usageError{Err: err}
			}
			if out != "" {
				if err := checkOutput("--html", out, args); err != nil {
					return err
				}
			}
			runs, err := readRuns(cmd.Context(), cmd.ErrOrStderr(), args)
			if err != nil {
				return err
			}
			if err := compare.Check(cmd.ErrOrStderr(), runs[0], runs[1:], gates, force); err != nil {
				return job.Usage(err)
			}
			broken, err := report.Compare(cmd.OutOrStdout(), runs[0], runs[1:], level, gates, out)
			if errors.Is(err, compare.ErrUnevaluated) {
				return job.Usage(err)
			} else if err != nil {
				return err
			}
			if len(broken) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "regressions:\n  %s\n", strings.Join(broken, "\n  "))
				return errRegression{len(broken)}
			}
			return nil
		},
	}
	c.Flags().Float64Var(&level, "level", 0.95, "confidence level of the intervals and the test")
	c.Flags().StringVar(&failOn, "fail-on", "", "exit 3 when a figure gets significantly worse beyond a limit: FIGURE[:OP]+N% for latency (mean, p50, p99, p99.9), throughput[:OP]-N%; comma-separated")
	c.Flags().BoolVar(&force, "force", false, "compare runs of different workloads, adapters, data models or mixes (with a warning) instead of refusing")
	c.Flags().StringVar(&out, "html", "", "also write the comparison as an HTML page to FILE")
	return c
}
