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
	var dryRun bool
	var hist historyFlags
	c := &cobra.Command{
		Use:   "experiment FILE.yaml",
		Short: "Run a scenario: start a cluster, drive a workload, fire a timeline of node joins, crashes and restarts, probe every node, audit",
		Long: fmt.Sprintf(`experiment runs the scenario in FILE.yaml (see scenarios/ for one per study;
a path under scenarios/ that is not on disk is the copy built into
fieldbench, so they run from anywhere):

  name, description, study     what it is
  cluster: {engine, nodes, options, network}
                               the cluster to start (torn down at the end;
                               data and server logs stay in the run directory);
                               network: hosts puts each node on a host of its
                               own and runs the load from load host load1
%s
  cluster: {engine: external, database, members, commands}
                               or a cluster fieldbench did not start: members
                               [{name, host, port, spare}], and node actions as
                               commands, e.g. kill: ssh {host} sudo systemctl
                               kill -s KILL redis (run without a shell; see
                               docs/experiments.md, "External clusters")
  dsn                          or an existing database instead
  workload: {name, options}    %s or none;
                               options are the flags of 'fieldbench run NAME'
  timeline: [...]              actions: do add|remove|kill|stop-node|restart|stop|mark
                               (stop-node: SIGTERM one node; stop: end the load),
                               fired at a time after the load starts (at: 100s)
                               or when a condition holds (when: start|baseline|
                               joined|settled|stable, optionally after: 10s and
                               sets: N request sets later); nodes: [names] or
                               count: N
                               network faults (network: hosts): partition
                               nodes [names] (from: [hosts]: only from those,
                               load1 the load host) / heal; limit nodes, rate: 10mbit
                               (from: [hosts]: between two groups only, each
                               host its own rate; with link: shared, one link
                               whose rate is the groups' total) / unlimit;
                               pause / resume (SIGSTOP/SIGCONT);
                               delay (delay: 50ms): netem, or without it
                               toxiproxy on the load's connections to the
                               node; loss (loss: 5%%) needs the kernel's netem
  steps: [{nodes, options}]    a scalability experiment: the workload once per
                               step on a growing cluster (wiki)
  stability: {warmup_sets, baseline_sets, window, max_sets, after_stable}
                               how the wiki join experiment finds the baseline
                               and the moment the cluster is stable again
  probe_every: 5s              per-node CPU, memory, I/O and disk probes
  audit: true                  read back every acknowledged post (microblog)
  convergence: {rounds, poll, timeout, options}
                               time for a write to become visible on every node

Every action is an event in the result file, drawn on every time chart of
the report. Join experiments end with the elasticity score, scalability
experiments with one score per step; 'fieldbench scores' recomputes them from
the result files alone. Results go to results/<time>-experiment-<name>/.`, experimentHostsHelp(), strings.Join(job.Names(), ", ")),
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
	hist.bind(c)
	return c
}

// startCluster is `cluster up` for an experiment's or a study's scenario.
func startCluster(ctx context.Context, engine string, opts cluster.Options, dir string, progress io.Writer) (*cluster.Cluster, error) {
	return clusterUp(ctx, engine, opts, dir, progress)
}

// experimentHostsHelp says in experiment's help which engines a cluster
// on hosts can run (as cluster.HostsEngines says), in its column: "(root;
// every engine but couchbase: cassandra, couchdb, ...; docs/network.md)".
func experimentHostsHelp() string {
	text := "(root; every engine: "
	if off := cluster.LoopbackEngines(); len(off) > 0 {
		text = "(root; every engine but " + cluster.WordList(off, "and") + ": "
	}
	text += strings.Join(cluster.HostsEngines(), ", ") + "; docs/network.md)"
	const indent, width = 31, 78
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && indent+len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	lines = append(lines, line)
	pad := strings.Repeat(" ", indent)
	return pad + strings.Join(lines, "\n"+pad)
}
