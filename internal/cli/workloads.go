package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/job"
)

// jobCmds returns, for one verb, a subcommand per registered job that offers
// it: the flags, help and action all come from the job's declaration.
func jobCmds(verb string) []*cobra.Command {
	var out []*cobra.Command
	for _, name := range job.Names() {
		j, err := job.New(name)
		if err != nil {
			continue
		}
		if c, ok := job.Find(j, verb); ok {
			out = append(out, jobCmd(j, name, c))
		}
	}
	return out
}

// jobCmd is the cobra command of one job command (use is the workload's
// name, or an operation's under op).
func jobCmd(j job.Job, use string, c job.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: c.Short, Long: c.Long, Example: c.Example, Args: cobra.NoArgs}
	for _, f := range j.Opts().For(c.Verb) {
		cmd.Flags().AddFlag(f)
	}
	if len(c.Subs) > 0 {
		names := make([]string, len(c.Subs))
		for i, sub := range c.Subs {
			names[i] = strings.TrimPrefix(sub.Verb, c.Verb+" ")
			cmd.AddCommand(jobCmd(j, names[i], sub))
		}
		if c.Run == nil { // a job's own Run may word the refusal itself
			cmd.RunE = func(*cobra.Command, []string) error {
				return usagef("%s %s needs an operation: %s", c.Verb, use, strings.Join(names, ", "))
			}
			return cmd
		}
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		env := &job.Env{Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Version: Version, Cluster: clusterInfo(activeCluster)}
		if x := hooksFrom(cmd.Context()); x != nil {
			env.Observer = &expObserver{x: x}
		}
		return c.Run(cmd.Context(), env)
	}
	if c.Measured {
		withCluster(cmd)
	}
	return cmd
}
