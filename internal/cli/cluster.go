package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/redact"
)

// clustersDir is where `cluster up` creates clusters when --dir is not given.
const clustersDir = "clusters"

func newClusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "Start, inspect, grow, break and stop real database servers on this machine",
		Long: `cluster starts real database servers on this machine, bound to loopback
(127.0.0.1) on ports checked free, with data, configuration and logs under one
directory, and prints the DSN to pass to --db. The directory's cluster.json
describes the cluster, so status, add, kill, restart and down work from any
later fieldbench process.

Install the servers first on a fresh machine: scripts/install-servers.sh.`,
		Example: `  fieldbench cluster up postgres --nodes 2 --dir clusters/pg   # primary + 1 streaming replica
  fieldbench cluster status --dir clusters/pg
  fieldbench cluster down --dir clusters/pg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("cluster needs a subcommand: up, status, add, remove, kill, restart or down")
		},
	}
	c.AddCommand(newClusterUpCmd(), newClusterDSNCmd(), newClusterStatusCmd(), newClusterDownCmd(), newClusterAddCmd(), newClusterRemoveCmd(),
		newClusterNodeCmd("kill", "Kill a node with SIGKILL (it keeps its data)"),
		newClusterNodeCmd("stop", "Stop a node gracefully (SIGTERM, SIGKILL after a minute; it keeps its data, restart brings it back)"),
		newClusterNodeCmd("restart", "Restart a killed or stopped node on its data"))
	return c
}

func newClusterUpCmd() *cobra.Command {
	var nodes int
	var dir string
	var opts []string
	var network string
	var budgets []string
	c := &cobra.Command{
		Use:   "up ENGINE",
		Short: "Start a cluster of ENGINE (" + strings.Join(cluster.Engines(), ", ") + ")",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("cluster up needs one engine (one of: %s)", strings.Join(cluster.Engines(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := cluster.NewOptions(nodes, opts, network, budgets)
			if err != nil {
				return clusterUsage(err)
			}
			cl, err := clusterUp(cmd.Context(), args[0], o, dir, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cluster.WriteUp(cmd.OutOrStdout(), cl)
			return nil
		},
	}
	c.Flags().IntVar(&nodes, "nodes", 1, "number of nodes")
	c.Flags().StringVar(&dir, "dir", "", "directory for data, configuration and logs (default: clusters/ENGINE-TIME)")
	c.Flags().StringArrayVar(&opts, "opt", nil, "engine option key=value (repeatable), e.g. --opt replicas=1 for redis")
	c.Flags().StringVar(&network, "network", cluster.NetworkLoopback,
		"where the nodes live: loopback (127.0.0.1, nodes differ by port) or hosts (each node a network namespace of its own with an address from 198.18.0.0/15 on a virtual network; needs root; "+cluster.HostsPhrase()+"; docs/network.md)")
	c.Flags().StringArrayVar(&budgets, "budget", nil, budgetHelp)
	return c
}

// budgetHelp is --budget's and --cluster-budget's help.
const budgetHelp = "size every node as a machine of its own: cpu=CPUS,memory=SIZE,disk=RATE,net=BITS (e.g. cpu=0.5,memory=1GiB,disk=40MiB/s), a control group holding the node's processes from their start (as root), net= the link of its host (--network hosts, e.g. net=100mbit); NODE:... sizes one node over it (repeatable; docs/scale-model.md)"

// clusterUp is cluster.Up for every command that starts a cluster
// (cluster up, run --cluster, experiment and study through startCluster),
// with `cluster up`'s default directory (clusters/ENGINE-TIME) and the
// exit codes decided here: Up's refusals are bad input (exit 2), its
// interrupt an interrupt (exit 130).
func clusterUp(ctx context.Context, engine string, opts cluster.Options, dir string, progress io.Writer) (*cluster.Cluster, error) {
	if dir == "" {
		dir = filepath.Join(clustersDir, fmt.Sprintf("%s-%s", engine, time.Now().Format("20060102-150405")))
	}
	cl, err := cluster.Up(ctx, engine, opts, dir, progress)
	if errors.Is(err, cluster.ErrInterrupted) {
		return nil, interruptedError{err}
	}
	return cl, clusterUsage(err)
}

// interruptedError keeps its error's message ("start redis:
// interrupted") and is errInterrupted to errors.Is, so Main exits 130.
type interruptedError struct{ error }

func (e interruptedError) Is(target error) bool { return target == errInterrupted }
func (e interruptedError) Unwrap() error        { return e.error }

// newClusterDSNCmd prints a cluster's whole DSN, password included: the
// one place fieldbench shows a secret, because the user asked for it.
func newClusterDSNCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "dsn",
		Short: "Print the cluster's DSN whole, password included (for --db)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, _, err := loadCluster(dir)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), cl.DSN)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	return c
}

// loadClusterNode is cluster.FindNode, its refusals bad input.
func loadClusterNode(dir, node string) (*cluster.Cluster, cluster.Engine, error) {
	cl, e, err := cluster.FindNode(clustersDir, dir, node)
	return cl, e, clusterUsage(err)
}

// loadCluster finds the cluster of --dir, or the only one under clusters/
// (cluster.Find), its refusals bad input.
func loadCluster(dir string) (*cluster.Cluster, cluster.Engine, error) {
	cl, e, err := cluster.Find(clustersDir, dir)
	return cl, e, clusterUsage(err)
}

// clusterUsage makes the cluster package's refusals of the user's input
// (cluster.ErrBadInput) bad input (exit 2).
func clusterUsage(err error) error {
	if errors.Is(err, cluster.ErrBadInput) {
		return job.Usage(err)
	}
	return err
}

func newClusterStatusCmd() *cobra.Command {
	var dir string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show every node's role, state and engine facts (replication, slots, state transfer)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, e, err := loadCluster(dir)
			if err != nil {
				return err
			}
			st, err := e.Status(cmd.Context(), cl)
			if err != nil {
				return fmt.Errorf("status of %s: %w", cl.Dir, err)
			}
			cluster.AddBudgets(cl, st)
			cluster.AddJVMs(cmd.Context(), cl, st)
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(st)
			}
			return cluster.WriteStatusOf(cmd.OutOrStdout(), cl, st)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newClusterDownCmd() *cobra.Command {
	var dir string
	var purge bool
	c := &cobra.Command{
		Use:   "down",
		Short: "Stop every node of a cluster (by the PIDs fieldbench started); data and logs stay unless --purge",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, _, err := loadCluster(dir)
			if err != nil {
				return err
			}
			ctx, cancel := job.Detached(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := cluster.Down(ctx, cl, purge, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if purge {
				fmt.Fprintf(cmd.OutOrStdout(), "%s cluster stopped and %s removed\n", cl.Engine, cl.Dir)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s cluster stopped; data and logs kept in %s\n", cl.Engine, cl.Dir)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	c.Flags().BoolVar(&purge, "purge", false, "also delete the cluster's data and logs")
	return c
}

func newClusterAddCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "add",
		Short: "Add a node to a running cluster (it joins and takes its share of the data)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, e, err := loadCluster(dir)
			if err != nil {
				return err
			}
			n, err := cluster.AddNode(cmd.Context(), cl, e)
			if err != nil {
				return clusterUsage(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s at %s\n", n.Name, n.Addr())
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	return c
}

func newClusterRemoveCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "remove NODE",
		Short: "Take a node out of a running cluster gracefully: it hands its data to the others, then stops",
		Long: `remove decommissions NODE: the node streams the data it holds to the nodes
that take over its share, leaves the cluster, and its process is stopped.
Its data directory stays; the node is marked removed in cluster.json and
cannot be restarted (add a new node instead). This is the graceful
opposite of 'cluster add'; 'cluster kill' is the crash.

Engines: cassandra (nodetool decommission, run from the cached jars: no
nodetool to install). Other engines say that they cannot.`,
		Example: `  fieldbench cluster remove cass2 --dir clusters/cassandra`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("cluster remove needs one node name (see cluster status)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, e, err := loadClusterNode(dir, args[0])
			if err != nil {
				return err
			}
			t0 := time.Now()
			if err := cluster.RemoveNode(cmd.Context(), cl, e, args[0], cmd.ErrOrStderr()); err != nil {
				return clusterUsage(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: removed in %s\nDSN: %s\n", args[0], time.Since(t0).Round(100*time.Millisecond), redact.DSN(cl.DSN))
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	return c
}

func newClusterNodeCmd(verb, short string) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   verb + " NODE",
		Short: short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("cluster %s needs one node name (see cluster status)", verb)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, e, err := loadClusterNode(dir, args[0])
			if err != nil {
				return err
			}
			if err := cluster.NodeAction(cmd.Context(), cl, e, verb, args[0]); err != nil {
				return clusterUsage(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s done\n", args[0], verb)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: the only one under clusters/)")
	return c
}

// withCluster adds --cluster ENGINE:N to a run or sweep subcommand: it
// starts the cluster in the results directory (so server logs stay with the
// results), points --db at it, tells started (the run records it), runs,
// and stops it whatever happened.
//
// check (nil: none) validates the command's own options first: bad input
// is refused before a server is started for it.
func withCluster(c *cobra.Command, check func() error, started func(*cluster.Cluster)) *cobra.Command {
	if c.Flags().Lookup("db") == nil || c.RunE == nil {
		return c
	}
	var spec, network string
	var opts, budgets []string
	c.Flags().StringVar(&spec, "cluster", "", "start a cluster ENGINE:NODES for this run and stop it afterwards (e.g. postgres:2); overrides --db")
	c.Flags().StringArrayVar(&opts, "cluster-opt", nil, "engine option key=value for --cluster (repeatable)")
	c.Flags().StringVar(&network, "cluster-network", cluster.NetworkLoopback, "where --cluster's nodes live: loopback, or hosts (as root; "+cluster.HostsPhrase()+": each node a host of its own on a virtual network, and the run on a load host of it, load1; docs/network.md)")
	c.Flags().StringArrayVar(&budgets, "cluster-budget", nil, "with --cluster: "+budgetHelp)
	inner := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) (err error) {
		if spec == "" {
			for _, f := range []string{"cluster-network", "cluster-budget"} {
				if cmd.Flags().Changed(f) {
					return usagef("--%s needs --cluster", f)
				}
			}
			return inner(cmd, args)
		}
		onHosts := network == cluster.NetworkHosts
		if onHosts && cmd.Flags().Lookup("load-host") == nil {
			return usagef("--cluster-network hosts: %s cannot run on a load host (run and load can)", cmd.CommandPath())
		}
		if onHosts && cmd.Flags().Changed("load-host") {
			return usagef("give --load-host or --cluster, not both")
		}
		engine, nodes, err := cluster.ParseSpec(spec)
		if err != nil {
			return clusterUsage(err)
		}
		if cmd.Flags().Changed("db") {
			return usagef("give --db or --cluster, not both")
		}
		o, err := cluster.NewOptions(nodes, opts, network, budgets)
		if err != nil {
			return clusterUsage(err)
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		results := "results"
		if f := cmd.Flags().Lookup("results"); f != nil {
			results = f.Value.String()
		}
		dir := filepath.Join(results, fmt.Sprintf("cluster-%s-%s", engine, time.Now().Format("20060102-150405")))
		o.Load = job.LoadBudget(cmd.Flags())
		cl, err := clusterUp(cmd.Context(), engine, o, dir, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer func() {
			if derr := cluster.TeardownAfter(cmd.Context(), cl, 2*time.Minute); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
		if err := cmd.Flags().Set("db", cl.DSN); err != nil {
			return err
		}
		if onHosts {
			// The run re-executes itself on load host load1 of the
			// cluster's network, as --load-host does, without the
			// --cluster flags (the child must not start another).
			return reexecOnLoadHost(cmd, cl, 0)
		}
		started(cl)
		defer started(nil)
		return inner(cmd, args)
	}
	return c
}
