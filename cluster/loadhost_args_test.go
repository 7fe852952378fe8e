package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// runFlags is a run's flags as the CLI declares them, set to args.
func runFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.String("db", "", "")
	fs.String("cluster", "", "")
	fs.StringArray("cluster-opt", nil, "")
	fs.String("cluster-network", "loopback", "")
	fs.String("shard", "", "")
	fs.Int("shards", 0, "")
	fs.Int("clients", 10, "")
	fs.StringSlice("mix", nil, "")
	fs.Duration("duration", 0, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// The child's command line: the set flags only, each as --name=value, a
// list once per value, --cluster's left out, --db the cluster's unless
// one was given.
func TestLoadHostArgs(t *testing.T) {
	t.Parallel()
	path := []string{"run", "microblog"}
	for _, c := range []struct {
		args, want []string
	}{
		{nil, []string{"run", "microblog", "--db=redis://198.18.0.1:6379"}},
		{[]string{"--clients", "4", "--mix=post=1,timeline=2", "--duration", "30s"},
			[]string{"run", "microblog", "--clients=4", "--duration=30s", "--mix=post=1", "--mix=timeline=2", "--db=redis://198.18.0.1:6379"}},
		{[]string{"--cluster", "redis:3", "--cluster-opt", "replicas=1", "--cluster-network", "hosts", "--clients", "2"},
			[]string{"run", "microblog", "--clients=2", "--db=redis://198.18.0.1:6379"}},
		{[]string{"--db", "postgres://u@h/db", "--shard", "1/2"}, []string{"run", "microblog", "--db=postgres://u@h/db", "--shard=1/2"}},
	} {
		if got := LoadHostArgs(path, runFlags(t, c.args...), "redis://198.18.0.1:6379"); !slices.Equal(got, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	if !slices.Equal(path, []string{"run", "microblog"}) {
		t.Errorf("LoadHostArgs changed its path: %q", path)
	}
}

// The load host: --load-host-index when given, else 1, or I+1 for shard
// I (--shard I/N, or --shards N with JOB_COMPLETION_INDEX); outside
// 1..254 is bad input. Not parallel: it sets JOB_COMPLETION_INDEX.
func TestLoadHostIndex(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "3")
	for _, c := range []struct {
		args  []string
		index int
		want  int // 0: refused
	}{
		{nil, 0, 1},
		{nil, 7, 7},
		{nil, 254, 254},
		{[]string{"--shard", "2/4"}, 0, 3},
		{[]string{"--shard", "2/4"}, 9, 9},
		{[]string{"--shard", "x/4"}, 0, 1},
		{[]string{"--shard", "254/300"}, 0, 1},
		{[]string{"--shards", "4"}, 0, 4},
		{nil, 255, 0},
		{nil, -1, 0},
	} {
		got, err := LoadHostIndex(runFlags(t, c.args...), c.index)
		switch {
		case c.want == 0 && (err == nil || !errors.Is(err, ErrBadInput) || err.Error() != "--load-host-index "+strconv.Itoa(c.index)+": want 1..254"):
			t.Errorf("%q, index %d: %d, %v, want it refused", c.args, c.index, got, err)
		case c.want != 0 && (err != nil || got != c.want):
			t.Errorf("%q, index %d: %d, %v, want %d", c.args, c.index, got, err, c.want)
		}
	}
}

// --load-host DIR: a directory without a cluster and a cluster on
// loopback are bad input.
func TestLoadForLoadHost(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, network := range []string{NetworkHosts, NetworkLoopback} {
		dir := filepath.Join(root, network)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := (&Cluster{Engine: "redis", Dir: dir, Network: network, Started: time.Now().UTC()}).Save(); err != nil {
			t.Fatal(err)
		}
	}
	if cl, err := LoadForLoadHost(filepath.Join(root, NetworkHosts)); err != nil || !cl.OnHosts() {
		t.Errorf("a cluster on hosts: %v, %v", cl, err)
	}
	loopback := filepath.Join(root, NetworkLoopback)
	if _, err := LoadForLoadHost(loopback); !errors.Is(err, ErrBadInput) || !strings.HasPrefix(err.Error(), "--load-host "+loopback+": that cluster is on loopback, not on hosts") {
		t.Errorf("a cluster on loopback: %v", err)
	}
	if _, err := LoadForLoadHost(filepath.Join(root, "none")); !errors.Is(err, ErrBadInput) || !strings.HasPrefix(err.Error(), "--load-host: ") {
		t.Errorf("no cluster: %v", err)
	}
}
