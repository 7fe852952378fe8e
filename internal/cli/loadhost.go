package cli

import (
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/probe"
)

// withLoadHost adds --load-host DIR to a load or run command: the command
// runs on a load host of the virtual network of the cluster in DIR (one
// started with `cluster up --network hosts`), a network namespace of its
// own with an address 198.18.1.K on the cluster's bridge. fieldbench
// creates the host, re-executes itself inside it (`ip netns exec NS
// fieldbench ...` with probe.LoadHostEnv set, which stops it doing so
// again and makes the result record the host), waits, removes the host
// and exits as the child did. Every database driver then dials the
// cluster's addresses as on a real network. Without --db the cluster's DSN
// is used.
func withLoadHost(c *cobra.Command) *cobra.Command {
	if c.Flags().Lookup("db") == nil || c.RunE == nil {
		return c
	}
	var dir string
	var index int
	c.Flags().StringVar(&dir, "load-host", "", "run on a load host of the virtual network of the cluster in DIR (cluster up --network hosts): a network namespace of its own, address 198.18.1.K; --db defaults to the cluster's DSN (docs/network.md)")
	c.Flags().IntVar(&index, "load-host-index", 0, "K of --load-host's load host (load<K>, 198.18.1.K); default 1, or I+1 for shard I (--shard I/N, or --shards N with JOB_COMPLETION_INDEX), so each shard is a host of its own")
	inner := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if dir == "" {
			if cmd.Flags().Changed("load-host-index") {
				return usagef("--load-host-index needs --load-host")
			}
			return inner(cmd, args)
		}
		if _, on := probe.CurrentLoadHost(); on {
			return inner(cmd, args) // the child, already on its host
		}
		return runOnLoadHost(cmd, dir, index)
	}
	return c
}

// childExit is the exit code of fieldbench re-executed on a load host,
// which has already said what happened: Execute exits with it silently.
type childExit struct{ code int }

func (e childExit) Error() string { return fmt.Sprintf("exit status %d on the load host", e.code) }

func runOnLoadHost(cmd *cobra.Command, dir string, index int) (err error) {
	if f := cmd.Flags().Lookup("cluster"); f != nil && f.Changed {
		return usagef("give --load-host or --cluster, not both")
	}
	cl, err := cluster.LoadForLoadHost(dir)
	if err != nil {
		return clusterUsage(err)
	}
	return reexecOnLoadHost(cmd, cl, index)
}

// reexecOnLoadHost runs cmd again inside load host load<index> of cl's
// virtual network (index 0: 1, or I+1 for shard I) with
// cluster.RunOnLoadHost, and returns the child's exit as childExit (a
// signal's as an interrupt's).
func reexecOnLoadHost(cmd *cobra.Command, cl *cluster.Cluster, index int) error {
	if err := vnet.Check(); err != nil {
		return job.Usage(fmt.Errorf("--load-host: %w", err))
	}
	index, err := cluster.LoadHostIndex(cmd.Flags(), index)
	if err != nil {
		return clusterUsage(err)
	}
	// With --cpuprofile the child profiles itself into the same file: this
	// process's own (tiny) profile is written first and then replaced.
	pprof.StopCPUProfile()
	args := cluster.LoadHostArgs(strings.Fields(cmd.CommandPath())[1:], cmd.Flags(), cl.DSN)
	exit, err := cluster.RunOnLoadHost(cmd.Context(), cl, index, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
	code := exit
	if exit < 0 {
		code = ExitInterrupted // killed by a signal
	}
	switch {
	case code == 0:
		return clusterUsage(err)
	case err != nil:
		return errors.Join(childExit{code}, err)
	}
	return childExit{code}
}

// loadHostDone is for Execute: the child's exit code, or false.
func loadHostDone(err error) (int, bool) {
	var ce childExit
	if errors.As(err, &ce) {
		return ce.code, true
	}
	return 0, false
}
