package cassandra

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
)

// TestCassandraArgsTempDir: a Cassandra node's JVM keeps its scratch
// files (the LZ4 and Snappy native libraries it unpacks) in the node's
// own tmp/, which exists before the JVM starts, not in /tmp.
func TestCassandraArgsTempDir(t *testing.T) {
	jars := t.TempDir()
	for _, f := range []string{"jamm-0.4.0.jar", "cassandra-all-5.0.9.jar"} {
		if err := os.WriteFile(filepath.Join(jars, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := &cluster.Node{Name: "node1", DataDir: filepath.Join(t.TempDir(), "node1"), Ports: []int{19042, 17199}}
	c := &cluster.Cluster{Options: map[string]string{"jars": jars, "heap": "512m"}, Nodes: []*cluster.Node{n}}
	args, err := cassandraArgs(c, n)
	if err != nil {
		t.Fatal(err)
	}
	want := "-Djava.io.tmpdir=" + filepath.Join(n.DataDir, "tmp")
	if !slices.Contains(args, want) {
		t.Errorf("cassandraArgs has no %s: %q", want, args)
	}
	if fi, err := os.Stat(filepath.Join(n.DataDir, "tmp")); err != nil || !fi.IsDir() {
		t.Errorf("the node's tmp/ was not made: %v", err)
	}
}
