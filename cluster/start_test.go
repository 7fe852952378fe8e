package cluster_test

import (
	"bytes"
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

// Up's refusals are bad input (ErrBadInput, the CLI's exit 2), with the
// messages `cluster up` always gave, and refused before anything starts:
// a directory that holds a cluster keeps its state as it was.
func TestUpRefusesBadInput(t *testing.T) {
	needRedis(t)
	t.Parallel()
	held := t.TempDir()
	if _, err := cluster.Prepare(held, "redis"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(held, cluster.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, engine string
		opts         cluster.Options
		dir          string
		want         string // the whole message, or a part of it
	}{
		{"a dir holding a cluster", "redis", cluster.Options{Nodes: 1}, held,
			held + " already holds a cluster: use another --dir or 'fieldbench cluster down --dir " + held + "' first"},
		{"unknown engine", "nosuchdb", cluster.Options{Nodes: 1}, t.TempDir(), `unknown engine "nosuchdb"`},
		{"too many nodes", "redis", cluster.Options{Nodes: 1000}, t.TempDir(), "more than the 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress bytes.Buffer
			cl, err := cluster.Up(context.Background(), tc.engine, tc.opts, tc.dir, &progress)
			if cl != nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Up = %v, %v; want bad input saying %q", cl, err, tc.want)
			}
			if progress.Len() > 0 {
				t.Errorf("Up said %q before refusing: it started something", progress.String())
			}
		})
	}
	if after, err := os.ReadFile(filepath.Join(held, cluster.StateFile)); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the held cluster's state changed: %v\n%s\nwas\n%s", err, after, before)
	}
}

// Teardown of what an interrupted `cluster up` left: the state file with
// no node and a server in the SpawnLog only (fieldbench killed before the
// server became a node). Teardown stops it and removes both files, as
// `cluster down` always did; run --cluster and experiments share it now.
func TestTeardownStopsWhatAnInterruptedUpLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prepared, err := cluster.Prepare(dir, "redis")
	if err != nil {
		t.Fatal(err)
	}
	_, done := announcedSleep(t, dir, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Teardown(ctx, prepared); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server in the SpawnLog still runs after Teardown")
	}
	for _, f := range []string{cluster.StateFile, cluster.SpawnLog} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Teardown (%v)", f, err)
		}
	}
}

// A teardown that fails keeps the state file: it is how `cluster down`
// finds what is left to stop when tried again, which the error says.
func TestTeardownKeepsTheStateWhenAStopFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cl := &cluster.Cluster{Engine: "nosuchdb", Dir: dir, Started: time.Now().UTC()}
	if err := cl.Save(); err != nil {
		t.Fatal(err)
	}
	err := cluster.Teardown(context.Background(), cl)
	if err == nil {
		t.Fatal("Teardown of a cluster whose engine is unknown succeeded")
	}
	if want := "fieldbench cluster down --dir " + dir; !strings.Contains(err.Error(), want) {
		t.Errorf("Teardown's error %q does not say how to stop what is left (%q)", err, want)
	}
	if _, err := cluster.Load(dir); err != nil {
		t.Errorf("the state is gone after a failed teardown: %v", err)
	}
}

// The whole sequence against a real redis-server: Up says where the
// state is before the server starts, saves the node, and Teardown stops
// it and removes the state.
func TestUpThenTeardown(t *testing.T) {
	needRedis(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cl, err := cluster.Up(ctx, "redis", cluster.Options{Nodes: 1}, dir, &progress)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cluster.StopSpawned(cl.Dir, time.Second) })
	abs, _ := filepath.Abs(dir)
	if !strings.HasPrefix(progress.String(), cluster.UpNote("redis", 1, abs)) || !strings.Contains(progress.String(), "redis up in ") {
		t.Errorf("Up said %q", progress.String())
	}
	saved, err := cluster.Load(dir)
	if err != nil || len(saved.Nodes) != 1 || saved.Nodes[0].PID == 0 || !cluster.Alive(saved.Nodes[0].PID) {
		t.Fatalf("saved state %+v, %v: want one running node", saved, err)
	}
	if err := cluster.Teardown(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(saved.Nodes[0].PID) {
		t.Errorf("the node (PID %d) runs after Teardown", saved.Nodes[0].PID)
	}
	if _, err := os.Stat(filepath.Join(dir, cluster.StateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state file is still there after Teardown (%v)", err)
	}
}
