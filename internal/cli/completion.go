package cli

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// completionCmd makes cobra's `completion` command (which cobra adds
// itself) refuse a shell it has no script for as bad input, naming the
// ones it has: `completion tcsh` printed the help and exited 0. Without a
// shell it shows its help, as before.
func completionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			var shells []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					shells = append(shells, sub.Name())
				}
			}
			sort.Strings(shells)
			return usagef("completion: no script for the shell %q (shells: %s)", args[0], strings.Join(shells, ", "))
		}
	}
}
