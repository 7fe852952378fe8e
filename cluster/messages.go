package cluster

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/fieldbench/fieldbench/redact"
)

// What the cluster commands print about a cluster, here beside the state
// they print rather than in the CLI (issue 45: internal/cli is wiring
// only).

// WriteUp writes what `cluster up` says once cl is up: its engine, nodes
// and directory, its DSN (WriteDSN), for a cluster on hosts how to reach
// it (from a load host), and the command that stops it.
func WriteUp(w io.Writer, cl *Cluster) {
	fmt.Fprintf(w, "%s cluster of %d node(s) is up in %s\n", cl.Engine, len(cl.Nodes), cl.Dir)
	WriteDSN(w, cl)
	if cl.OnHosts() {
		fmt.Fprintf(w, "the nodes are hosts on the virtual network %s (198.18.0.0/15): their addresses are reachable from that network only, e.g. from a load host: fieldbench run WORKLOAD --load-host %s (docs/network.md)\n", NetworkID(cl.Dir), cl.Dir)
	}
	fmt.Fprintf(w, "stop it with: fieldbench cluster down --dir %s\n", cl.Dir)
}

// WriteDSN writes cl's DSN. One with a secret (the MariaDB password
// fieldbench generated) is written masked, with the command that prints
// it whole (`cluster dsn`): a secret reaches the terminal only when asked
// for.
func WriteDSN(w io.Writer, cl *Cluster) {
	shown := redact.DSN(cl.DSN)
	fmt.Fprintf(w, "DSN: %s\n", shown)
	if shown != cl.DSN {
		fmt.Fprintf(w, "the whole DSN, password included, is in %s (readable by you only): --db \"$(fieldbench cluster dsn --dir %s)\"\n",
			filepath.Join(cl.Dir, StateFile), cl.Dir)
	}
}

// WriteStatusOf writes `cluster status`: cl's engine, version, directory
// and DSN (redacted), its network when on hosts, then st's table
// (WriteStatus).
func WriteStatusOf(w io.Writer, cl *Cluster, st []NodeStatus) error {
	fmt.Fprintf(w, "%s %s in %s\nDSN: %s\n", cl.Engine, cl.Version, cl.Dir, redact.DSN(cl.DSN))
	if cl.OnHosts() {
		fmt.Fprintf(w, "network: hosts, each node a network namespace of its own on the virtual network %s (docs/network.md)\n", NetworkID(cl.Dir))
	}
	fmt.Fprintln(w)
	return WriteStatus(w, st)
}
