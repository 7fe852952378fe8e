package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	_ "github.com/fieldbench/fieldbench/db/all" // the engines of the database folders, which package cluster's own tests cannot link
)

// bareEngine is an engine that can neither add, remove, kill nor
// restart a node.
type bareEngine struct{ cluster.Engine }

// The actions on one node: a node the cluster lacks and an engine that
// cannot do what is asked are bad input, named as `cluster add`,
// `remove`, `kill` and `restart` always named them; stop needs no engine
// of its own and saves the node stopped.
func TestNodeActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cl := &cluster.Cluster{Engine: "redis", Dir: dir, Started: time.Now().UTC(), Nodes: []*cluster.Node{{Name: "redis1", Host: "127.0.0.1", Port: 1}}}
	if err := cl.Save(); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	e := bareEngine{}
	for _, c := range []struct {
		name string
		err  error
		want string // "": succeeds
	}{
		{"find a node", func() error { _, _, err := cluster.FindNode(root, "", "redis1"); return err }(), ""},
		{"find no such node", func() error { _, _, err := cluster.FindNode(root, dir, "redis9"); return err }(), `no node "redis9" in the redis cluster (nodes: [redis1])`},
		{"find no cluster", func() error { _, _, err := cluster.FindNode(filepath.Join(root, "none"), "", "redis1"); return err }(), "no cluster found under "},
		{"add", func() error { _, err := cluster.AddNode(ctx, cl, e); return err }(), "the redis engine cannot add nodes yet"},
		{"remove", cluster.RemoveNode(ctx, cl, e, "redis1", &progress), "the redis engine cannot remove (decommission) nodes: use 'cluster kill' to stop one abruptly"},
		{"kill", cluster.NodeAction(ctx, cl, e, "kill", "redis1"), "the redis engine cannot kill nodes yet"},
		{"restart", cluster.NodeAction(ctx, cl, e, "restart", "redis1"), "the redis engine cannot restart nodes yet"},
		{"stop", cluster.NodeAction(ctx, cl, e, "stop", "redis1"), ""},
	} {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.want != "" && (c.err == nil || !strings.HasPrefix(c.err.Error(), c.want) || !errors.Is(c.err, cluster.ErrBadInput)):
			t.Errorf("%s: %v, want %q wrapping ErrBadInput", c.name, c.err, c.want)
		}
	}
	if progress.Len() > 0 {
		t.Errorf("a refused remove said %q", progress.String())
	}
	if err := cluster.NodeAction(ctx, cl, e, "explode", "redis1"); err == nil || errors.Is(err, cluster.ErrBadInput) {
		t.Errorf("an unknown action: %v, want an error of the caller's", err)
	}
	back, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := back.Node("redis1"); err != nil || !n.Stopped {
		t.Errorf("after stop the saved node is %+v (%v), want it stopped", n, err)
	}
}

// Down removes the state (and with purge the directory); a stop that
// fails keeps the state for another try. TeardownAfter, for a cluster a
// run started, does the same and names the directory.
func TestDownAndTeardownAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		engine     string
		down       func(cl *cluster.Cluster) error
		err        string // "": succeeds
		dir, state bool   // left after it
	}{
		{"down", "redis", func(cl *cluster.Cluster) error { return cluster.Down(ctx, cl, false, os.Stderr) }, "", true, false},
		{"down --purge", "redis", func(cl *cluster.Cluster) error { return cluster.Down(ctx, cl, true, os.Stderr) }, "", false, false},
		{"down fails", "nosuchdb", func(cl *cluster.Cluster) error { return cluster.Down(ctx, cl, true, os.Stderr) }, "stop ", true, true},
		{"after a run", "redis", func(cl *cluster.Cluster) error { return cluster.TeardownAfter(ctx, cl, time.Minute) }, "", true, false},
		{"after a run, fails", "nosuchdb", func(cl *cluster.Cluster) error { return cluster.TeardownAfter(ctx, cl, time.Minute) }, "stop the cluster in ", true, true},
	} {
		dir := filepath.Join(t.TempDir(), "c")
		cl, err := cluster.Prepare(dir, c.engine)
		if err != nil {
			t.Fatal(err)
		}
		err = c.down(cl)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err+dir+": unknown engine")):
			t.Errorf("%s: %v, want %q naming %s", c.name, err, c.err, dir)
		}
		_, derr := os.Stat(dir)
		_, serr := os.Stat(filepath.Join(dir, cluster.StateFile))
		if (derr == nil) != c.dir || (serr == nil) != c.state {
			t.Errorf("%s: directory left %v, state left %v; want %v, %v", c.name, derr == nil, serr == nil, c.dir, c.state)
		}
	}
}
