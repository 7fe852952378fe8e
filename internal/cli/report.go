package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/outpath"
	"github.com/fieldbench/fieldbench/report"
)

func newReportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report RESULT_DIR...",
		Short: "Write one offline HTML report from one or more run directories",
		Long: `report reads the result file of each run directory and writes one
self-contained HTML page (SVG charts, no scripts, opens offline). Several
directories are put side by side, e.g. the three microblog data models.`,
		Example: `  fieldbench report results/20261121-101500-microblog-sqlite
  fieldbench report results/*-microblog-* --out models.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("report needs at least one run directory")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if out != "" {
				if err := checkOutput("--out", out, args); err != nil {
					return err
				}
			}
			runs, err := readRuns(ctx, cmd.ErrOrStderr(), args)
			if err != nil {
				if ctx.Err() != nil {
					return reportInterrupted()
				}
				return err
			}
			if out == "" {
				out = filepath.Join(runs[0].Dir, "report.html")
				if len(runs) > 1 {
					out = "report.html"
				}
				if err := outpath.Output(out, args...); err != nil {
					return usagef("the default output %v (pass --out FILE)", err)
				}
			}
			if err := report.WriteFileContext(ctx, out, runs); err != nil {
				if ctx.Err() != nil {
					return reportInterrupted()
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "HTML file to write (default: report.html in the run directory, or in the current directory for several runs)")
	return c
}

// reportInterrupted is the error of a report stopped by Ctrl-C (exit 130).
func reportInterrupted() error {
	return fmt.Errorf("report interrupted: no report written: %w", errInterrupted)
}

// checkOutput refuses, as bad input before any work, an output file that
// would replace a file fieldbench reads or one of inputs (outpath.Output,
// the one rule), or that cannot be written (outpath.Writable). flag names
// it in the message.
func checkOutput(flag, path string, inputs []string) error {
	if err := outpath.Output(path, inputs...); err != nil {
		return usagef("%s %v", flag, err)
	}
	err := outpath.Writable(path)
	if errors.Is(err, outpath.ErrUnwritable) {
		return usagef("%s %v", flag, err)
	}
	return err
}
