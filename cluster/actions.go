package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// The actions on a running cluster that `cluster add`, `remove`, `kill`,
// `stop`, `restart` and `down` take, each one call from the CLI (issue
// 45: internal/cli is wiring only), which prints the outcome and maps
// ErrBadInput to exit 2. The engine's own failures are not ErrBadInput.

// FindNode is Find for a command on one node: a name the cluster does not
// have is bad input too (the names are in its message).
func FindNode(root, dir, node string) (*Cluster, Engine, error) {
	cl, e, err := Find(root, dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := cl.Node(node); err != nil {
		return nil, nil, badInput{err}
	}
	return cl, e, nil
}

// AddNode adds a node to the running cluster cl of engine e (a Grower:
// another engine is bad input) and saves the state with it.
func AddNode(ctx context.Context, cl *Cluster, e Engine) (*Node, error) {
	g, ok := e.(Grower)
	if !ok {
		return nil, badInputf("the %s engine cannot add nodes yet", cl.Engine)
	}
	if err := fitsOneMore(cl, thisMachine()); err != nil {
		return nil, badInput{fmt.Errorf("add a node to %s: %w", cl.Dir, err)}
	}
	n, err := g.Add(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("add a node to %s: %w", cl.Dir, err)
	}
	return n, cl.Save()
}

// RemoveNode decommissions node (a Remover: another engine is bad input,
// told to kill instead), saying so on progress first (it takes a while),
// and saves the state with the node removed.
func RemoveNode(ctx context.Context, cl *Cluster, e Engine, node string, progress io.Writer) error {
	r, ok := e.(Remover)
	if !ok {
		return badInputf("the %s engine cannot remove (decommission) nodes: use 'cluster kill' to stop one abruptly", cl.Engine)
	}
	fmt.Fprintf(progress, "decommissioning %s (its data moves to the other nodes)...\n", node)
	if err := r.Remove(ctx, cl, node); err != nil {
		return fmt.Errorf("remove %s: %w", node, err)
	}
	return cl.Save()
}

// NodeVerbs are the actions on one node that NodeAction takes.
var NodeVerbs = []string{"kill", "stop", "restart"}

// NodeAction kills (SIGKILL), stops (StopNode: gracefully, SIGKILL after
// a minute) or restarts node, as verb says, and saves the state. Stop
// works for every engine; kill and restart need a Killer (another engine
// is bad input). An unknown verb is the caller's mistake.
func NodeAction(ctx context.Context, cl *Cluster, e Engine, verb, node string) error {
	k, ok := e.(Killer)
	var err error
	switch {
	case verb == "stop":
		err = StopNode(cl, node, time.Minute)
	case verb != "kill" && verb != "restart":
		return fmt.Errorf("cluster.NodeAction: no action %q (%v)", verb, NodeVerbs)
	case !ok:
		return badInputf("the %s engine cannot %s nodes yet", cl.Engine, verb)
	case verb == "kill":
		err = k.Kill(ctx, cl, node)
	default:
		err = k.Restart(ctx, cl, node)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, node, err)
	}
	return cl.Save()
}

// Down is `cluster down`: Teardown (its failure names the directory, and
// the state stays for another try), the orphaned virtual networks swept
// for a cluster on hosts (said on progress), and with purge the
// directory, data and logs removed.
func Down(ctx context.Context, cl *Cluster, purge bool, progress io.Writer) error {
	if err := Teardown(ctx, cl); err != nil {
		return fmt.Errorf("stop %s: %w", cl.Dir, err)
	}
	if cl.OnHosts() {
		SweepNetworks(ctx, progress)
	}
	if purge {
		return os.RemoveAll(cl.Dir)
	}
	return nil
}

// TeardownAfter is Teardown for a cluster a command started for its own
// run (run --cluster): with a deadline of d that an interrupt of ctx
// does not cut (it runs after Ctrl-C too), and its error naming the
// directory, whose state file a failed stop keeps (see Teardown).
func TeardownAfter(ctx context.Context, cl *Cluster, d time.Duration) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if err := Teardown(dctx, cl); err != nil {
		return fmt.Errorf("stop the cluster in %s: %w", cl.Dir, err)
	}
	return nil
}
