package experiment

import (
	"fmt"
	"strings"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
)

// Keys is the scenario file's keys as `fieldbench experiment --help`
// lists them, kept here beside the parser (scenario.go) so that a key is
// described where it is read. The engines that run on hosts and the
// workloads come from the registries.
func Keys() string {
	return fmt.Sprintf(`  name, description, study     what it is
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
                               time for a write to become visible on every node`, hostsHelp(), strings.Join(job.Names(), ", "))
}

// hostsHelp says in experiment's help which engines a cluster
// on hosts can run (as cluster.HostsEngines says), in its column: "(root;
// every engine but couchbase: cassandra, couchdb, ...; docs/network.md)".
func hostsHelp() string {
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
