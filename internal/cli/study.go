package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fieldbench/fieldbench/study"

	"github.com/spf13/cobra"
)

func newStudyCmd() *cobra.Command {
	var results, size, scenarios string
	var dryRun, reportOnly, noBudgets bool
	var hist historyFlags
	c := &cobra.Command{
		Use:   "study NAME",
		Short: "Run a published study's experiments in sequence and set every published figure beside fieldbench's",
		Long: fmt.Sprintf(`study runs the scenarios that reproduce one published study, one after
another, each into DIR/<step>/, then writes DIR/%s and
DIR/%s: the tally of the paper's claims (held, not held, not judged here) and each
claim's verdict with its reason and evidence; for every value the paper
published (study/published/NAME.yaml), the paper's figure, fieldbench's,
their ratio, and whether they are comparable here and why not (a stand-in
server, fewer nodes, a step the machine bound rather than its budgets,
another consistency level); each step's budget and what bound its nodes;
and the paper's shapes beside fieldbench's (drawn in the HTML page).

The studies:

%s

Sizes: quick (the scenarios as scaled to this machine) and study (the
paper's repeats and load range; hours). A step whose directory already
holds a complete experiment is skipped, so an interrupted study resumes
where it stopped; Ctrl-C leaves completed steps intact.`, study.ReportFile, study.HTMLFile, study.Lines("  ")),
		Example: `  fieldbench study ingest --results results/ingest
  fieldbench study wiki --size quick --dry-run
  fieldbench study ingest --report-only --results results/ingest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			p, err := study.PlanFor(args[0], size)
			if err != nil {
				return usagef("%v", err)
			}
			p.NoBudgets = noBudgets
			if noBudgets && !reportOnly {
				fmt.Fprintln(cmd.ErrOrStderr(), "fieldbench: --no-budgets: every step's nodes run without their budgets: they share this machine's cores")
			}
			if results == "" {
				results = filepath.Join("results", "study-"+p.Study+"-"+p.Size)
			}
			// The dry run's check, before anything starts: a step's
			// scenario that would be refused is bad input (exit 2) for
			// the real run too, not a failure found as it goes.
			if !dryRun && !reportOnly {
				if err := hist.check(); err != nil {
					return err
				}
			}
			if dryRun || !reportOnly {
				if err := p.Check(scenarios); err != nil {
					return usagef("%v", err)
				}
			}
			if dryRun {
				return p.WritePlan(cmd.OutOrStdout(), results, scenarios)
			}
			if !reportOnly {
				defer func() { err = hist.finish(cmd, err, results) }()
			}
			err = study.RunThenReport(cmd.Context(), p, study.Config{
				Results: results, Scenarios: scenarios, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Version: Version,
				StartCluster: startCluster,
			}, !reportOnly)
			if errors.Is(err, study.ErrInterrupted) {
				return errInterrupted
			}
			return err
		},
	}
	c.Flags().StringVar(&results, "results", "", "the study's results directory (default results/study-NAME-SIZE)")
	c.Flags().StringVar(&size, "size", study.SizeQuick, "plan size: "+strings.Join(study.Sizes(), " or "))
	c.Flags().StringVar(&scenarios, "scenarios", "", "directory holding the scenario files, and nothing else is read (default: ./scenarios where a file is there, else the copy built into fieldbench)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list the steps and which are already complete, without running anything")
	c.Flags().BoolVar(&reportOnly, "report-only", false, "rebuild the report from --results without running any step")
	c.Flags().BoolVar(&noBudgets, "no-budgets", false, "run every step without its nodes' budgets (where budgets cannot be held: not root, no control groups); the nodes then share this machine's cores, and the report's verdicts say so")
	hist.bind(c)
	return c
}
