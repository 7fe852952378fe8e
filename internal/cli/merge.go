package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/merge"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

func newMergeCmd() *cobra.Command {
	var results string
	c := &cobra.Command{
		Use:   "merge SHARD_DIR...",
		Short: "Merge the shards of a run (run --shard I/N on several machines) into one result, exactly",
		Long: `merge reads the result files of every shard of one run and writes one result
file and report: intervals aligned on wall-clock seconds, HDR histograms added
(percentiles are never averaged), counts and errors by kind summed, every
event and point kept with its shard, and per-shard figures (throughput, start
offset, start skew) in the summary. A run that is no shard, a shard given
twice, shards of different runs or options, and a missing shard are refused.`,
		Example: `  fieldbench merge shard0/*-microblog-* shard1/*-microblog-* shard2/*-microblog-*`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("merge needs the shards' run directories")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			runs, err := readRuns(ctx, cmd.ErrOrStderr(), args)
			if ctx.Err() != nil {
				return mergeInterrupted("")
			}
			if err != nil {
				return err
			}
			m, err := merge.Shards(runs)
			if err != nil {
				return job.Usage(err)
			}
			if ctx.Err() != nil {
				return mergeInterrupted("")
			}
			dir, err := job.NewRunDir(results, "merged-"+m.Header.Workload, m.Header.Adapter, time.Now())
			if err != nil {
				return err
			}
			m.Dir = dir
			if err := merge.Write(dir, m); err != nil {
				return err
			}
			out := filepath.Join(dir, "report.html")
			if err := report.WriteFile(out, []*result.Run{m}); err != nil {
				return err
			}
			if ctx.Err() != nil {
				// Written whole, but stopped before it was announced: a
				// merged result is only ever presented complete.
				return mergeInterrupted(dir)
			}
			if err := report.Terminal(cmd.OutOrStdout(), m); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nmerged %d shards (start skew %.1f ms)\nresult: %s\nreport: %s\n",
				len(runs), m.Summary.Extra["shard_start_skew_ms"], filepath.Join(dir, "result.jsonl"), out)
			return nil
		},
	}
	c.Flags().StringVar(&results, "results", "results", "directory under which the merged run's directory is created")
	return c
}

// mergeInterrupted is the error of a merge stopped by Ctrl-C (exit 130).
// A merge has nothing partial worth keeping: a merged directory already
// written is removed, so no half-announced result is taken for a whole one.
func mergeInterrupted(dir string) error {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return fmt.Errorf("merge interrupted: no merged result written: %w", errInterrupted)
}
