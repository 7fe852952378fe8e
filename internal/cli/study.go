package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/study"
	"github.com/fieldbench/fieldbench/studyrun"
)

// studyLines is one line per study that has a plan: its name and paper,
// from the study registry (package study), never a hand-kept list.
func studyLines(indent string) string {
	var b strings.Builder
	for _, n := range studyrun.Names() {
		s, err := study.Load(n)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s%-11s %s %d, %q (%d published values, %d claims)\n", indent, n, firstAuthor(s.Authors), s.Year, s.Title, len(s.Values), len(s.Claims))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstAuthor(a string) string {
	first, _, more := strings.Cut(a, ",")
	if more {
		return strings.TrimSpace(first) + " et al."
	}
	return a
}

func newStudyCmd() *cobra.Command {
	var results, size, scenarios string
	var dryRun, reportOnly bool
	var hist historyFlags
	c := &cobra.Command{
		Use:   "study NAME",
		Short: "Run a published study's experiments in sequence and set every published figure beside fieldbench's",
		Long: fmt.Sprintf(`study runs the scenarios that reproduce one published study, one after
another, each into DIR/<step>/, then writes DIR/%s: for every value
the paper published (study/published/NAME.yaml), the paper's figure,
fieldbench's, their ratio, and whether they are comparable here and why
not (a stand-in server, fewer nodes, shared cores, another consistency
level); each qualitative claim beside what fieldbench found; and the
paper's shapes (throughput against nodes or load, the elasticity tables).

The studies:

%s

Sizes: quick (the scenarios as scaled to this machine) and study (the
paper's repeats and load range; hours). A step whose directory already
holds a complete experiment is skipped, so an interrupted study resumes
where it stopped; Ctrl-C leaves completed steps intact.`, studyrun.ReportFile, studyLines("  ")),
		Example: `  fieldbench study ingest --results results/ingest
  fieldbench study wiki --size quick --dry-run
  fieldbench study ingest --report-only --results results/ingest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			p, err := studyrun.PlanFor(args[0], size)
			if err != nil {
				return usagef("%v", err)
			}
			if results == "" {
				results = filepath.Join("results", "study-"+p.Study+"-"+p.Size)
			}
			stderr := cmd.ErrOrStderr()
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
			var runErr error
			if !reportOnly {
				defer func() { err = hist.finish(cmd, err, results) }()
				runErr = studyrun.Run(cmd.Context(), p, studyrun.Config{
					Results: results, Scenarios: scenarios, Stdout: cmd.OutOrStdout(), Stderr: stderr, Version: Version,
					StartCluster: startCluster,
				})
				if cmd.Context().Err() != nil {
					// The report of what completed is cheap (files only).
					if out, err := studyrun.Report(p, results); err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "study %s (completed steps only): %s\n", p.Study, out)
					}
					fmt.Fprintf(stderr, "fieldbench: study %s interrupted; completed steps are kept in %s, run the same command again to resume\n", p.Study, results)
					return errInterrupted
				}
			}
			out, err := studyrun.Report(p, results)
			if err != nil {
				return errors.Join(runErr, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "study %s: %s\n", p.Study, out)
			return runErr
		},
	}
	c.Flags().StringVar(&results, "results", "", "the study's results directory (default results/study-NAME-SIZE)")
	c.Flags().StringVar(&size, "size", studyrun.SizeQuick, "plan size: "+strings.Join(studyrun.Sizes(), " or "))
	c.Flags().StringVar(&scenarios, "scenarios", "", "directory holding the scenario files, and nothing else is read (default: ./scenarios where a file is there, else the copy built into fieldbench)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list the steps and which are already complete, without running anything")
	c.Flags().BoolVar(&reportOnly, "report-only", false, "rebuild the report from --results without running any step")
	hist.bind(c)
	return c
}
