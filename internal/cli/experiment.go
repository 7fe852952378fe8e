package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/experiment"
	"github.com/fieldbench/fieldbench/history"
	"github.com/fieldbench/fieldbench/job"
)

func newExperimentCmd() *cobra.Command {
	var results string
	var dryRun, noBudgets bool
	var hist historyFlags
	c := &cobra.Command{
		Use:   "experiment FILE.yaml",
		Short: "Run a scenario: start a cluster, drive a workload, fire a timeline of node joins, crashes and restarts, probe every node, audit",
		Long: fmt.Sprintf(`experiment runs the scenario in FILE.yaml (see scenarios/ for one per study;
a path under scenarios/ that is not on disk is the copy built into
fieldbench, so they run from anywhere):

%s

Every action is an event in the result file, drawn on every time chart of
the report. Join experiments end with the elasticity score, scalability
experiments with one score per step; 'fieldbench scores' recomputes them from
the result files alone. Results go to results/<time>-experiment-<name>/.`, experiment.Keys()),
		Example: `  fieldbench experiment scenarios/microblog/crash.yaml
  fieldbench experiment scenarios/wiki/elasticity-cassandra.yaml --results out/
  fieldbench experiment scenarios/wiki/elasticity-cassandra.yaml --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			sc, err := experiment.Open(args[0])
			if err != nil {
				return job.Usage(err)
			}
			if sc.BuiltIn {
				fmt.Fprintf(cmd.ErrOrStderr(), "fieldbench: %s is not on disk here: running the copy built into this fieldbench\n", sc.Path)
			}
			if noBudgets {
				if dropped := sc.DropBudgets(); dropped != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "fieldbench: --no-budgets: the nodes run without their budgets (%s): they share this machine's cores\n", dropped)
				}
			} else if err := sc.NeedBudgets(); err != nil {
				return job.Usage(err)
			}
			if dryRun {
				return sc.WritePlan(cmd.OutOrStdout())
			}
			if err := hist.check(); err != nil {
				return err
			}
			before := history.DirNames(results)
			defer func() { err = hist.finish(cmd, err, history.NewDirs(results, before, "-experiment-")...) }()
			err = experiment.Run(cmd.Context(), sc, experiment.Config{
				Results: results, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Version: Version,
				StartCluster: startCluster,
			})
			if err != nil && cmd.Context().Err() != nil && !errors.Is(err, errInterrupted) {
				// Ctrl-C in the middle of an action (a node joining): say
				// what was cut short, and exit as interrupted; what was
				// measured is saved.
				line, _, _ := strings.Cut(err.Error(), "\n")
				fmt.Fprintf(cmd.ErrOrStderr(), "fieldbench: %s\n", line)
				return errInterrupted
			}
			return err
		},
	}
	c.Flags().StringVar(&results, "results", "results", "directory under which the experiment's directory is created")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check the scenario and print what it would do, without starting anything")
	c.Flags().BoolVar(&noBudgets, "no-budgets", false, "run the cluster without the scenario's node budgets (where budgets cannot be held: not root, no control groups); the nodes then share this machine's cores")
	hist.bind(c)
	return c
}

// startCluster is `cluster up` for an experiment's or a study's scenario.
func startCluster(ctx context.Context, engine string, opts cluster.Options, dir string, progress io.Writer) (*cluster.Cluster, error) {
	return clusterUp(ctx, engine, opts, dir, progress)
}
