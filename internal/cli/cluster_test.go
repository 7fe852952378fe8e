package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
)

func TestClusterBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken")
	if err := os.MkdirAll(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taken, "cluster.json"), []byte(`{"engine":"postgres"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"cluster"}, "needs a subcommand"},
		{"no engine", []string{"cluster", "up"}, "needs one engine"},
		{"unknown engine", []string{"cluster", "up", "oracle"}, `unknown engine "oracle"`},
		{"too many nodes", []string{"cluster", "up", "redis", "--nodes", "1000", "--dir", filepath.Join(dir, "big")}, "more than the 64"},
		{"status without cluster", []string{"cluster", "status", "--dir", filepath.Join(dir, "none")}, "no cluster in"},
		{"down without cluster", []string{"cluster", "down", "--dir", filepath.Join(dir, "none")}, "no cluster in"},
		{"kill without node", []string{"cluster", "kill", "--dir", taken}, "needs one node name"},
		{"kill unknown node", []string{"cluster", "kill", "nodeX", "--dir", taken}, `no node "nodeX"`},
		{"bad --cluster", []string{"run", "microblog", "--cluster", "postgres", "--results", dir}, "is not ENGINE:NODES"},
		{"--cluster and --db", []string{"run", "wiki", "--cluster", "postgres:1", "--db", "sqlite:///tmp/x.db", "--results", dir}, "not both"},
		{"bad --cluster-opt", []string{"run", "microblog", "--cluster", "redis:1", "--cluster-opt", "replicas", "--results", dir}, "not key=value"},
		// Budgets (issue 44): refused before anything starts, with why.
		{"bad --budget", []string{"cluster", "up", "redis", "--budget", "cpu=lots", "--dir", filepath.Join(dir, "b1")}, "want a number of CPUs"},
		{"--budget key", []string{"cluster", "up", "redis", "--budget", "nett=10mbit", "--dir", filepath.Join(dir, "b2")}, `unknown key "nett"`},
		{"--budget net= on loopback", []string{"cluster", "up", "redis", "--budget", "net=10mbit", "--dir", filepath.Join(dir, "b6")}, "only for a cluster on hosts (--network hosts)"},
		{"bad --budget net=", []string{"cluster", "up", "redis", "--network", "hosts", "--budget", "net=fast", "--dir", filepath.Join(dir, "b7")}, "bits a second"},
		{"--budget on couchbase", []string{"cluster", "up", "couchbase", "--budget", "cpu=0.5", "--dir", filepath.Join(dir, "b3")}, "one JVM"},
		{"--budget for no node", []string{"cluster", "up", "redis", "--nodes", "2", "--budget", "redis9:cpu=0.5", "--dir", filepath.Join(dir, "b4")}, `no node "redis9"`},
		{"--cluster-budget without --cluster", []string{"run", "microblog", "--cluster-budget", "cpu=1", "--results", dir}, "--cluster-budget needs --cluster"},
		{"bad --cluster-budget", []string{"run", "microblog", "--cluster", "redis:1", "--cluster-budget", "memory=1KiB", "--results", dir}, "at least 16MiB"},
		{"budgets over the machine", []string{"cluster", "up", "redis", "--nodes", "64", "--budget", "cpu=1", "--dir", filepath.Join(dir, "b5")}, "do not fit this machine: 64 node(s) ask 64 CPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
		})
	}
}

// TestClusterRemoveUnsupported: an engine that cannot decommission says so
// with the usage exit code, before touching any server (none runs here:
// the cluster.json names a postgres node that was never started).
func TestClusterRemoveUnsupported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(`{"engine":"postgres","nodes":[{"name":"pg1","host":"127.0.0.1","port":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unsupported engine", []string{"cluster", "remove", "pg1", "--dir", dir}, "the postgres engine cannot remove (decommission) nodes"},
		{"no node", []string{"cluster", "remove", "--dir", dir}, "cluster remove needs one node name"},
		{"unknown node", []string{"cluster", "remove", "pg9", "--dir", dir}, `no node "pg9"`},
		{"no cluster", []string{"cluster", "remove", "pg1", "--dir", filepath.Join(dir, "none")}, "no cluster in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d saying %q", code, out, stderr, cli.ExitUsage, tc.want)
			}
		})
	}
}

// TestClusterLifecycle drives a real single-node PostgreSQL through the
// commands a user types: up, status, a run against its DSN, down.
func TestClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL (install with scripts/install-servers.sh)")
	}
	t.Parallel()
	base, err := os.MkdirTemp("", "fieldbench-cli-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755) // the server runs as the postgres user
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "pg")
	ctx := context.Background()
	code, out, stderr := execute(ctx, "cluster", "up", "postgres", "--nodes", "1", "--dir", dir)
	t.Cleanup(func() { execute(ctx, "cluster", "down", "--dir", dir) })
	if code != 0 || !strings.Contains(out, "DSN: postgres://") {
		t.Fatalf("up: exit %d\n%s\n%s", code, out, stderr)
	}
	dsn := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "DSN: ", 2)[1], "\n", 2)[0])
	if code, out, _ := execute(ctx, "cluster", "status", "--dir", dir); code != 0 || !strings.Contains(out, "primary") || !strings.Contains(out, " up ") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	if code, _, stderr := execute(ctx, "cluster", "up", "postgres", "--dir", dir); code != cli.ExitUsage || !strings.Contains(stderr, "already holds a cluster") {
		t.Fatalf("second up in the same dir: exit %d %s", code, stderr)
	}
	if code, out, stderr := execute(ctx, "run", "ingest", "--db", dsn, "--sources", "2", "--records", "500", "--batch", "100", "--results", filepath.Join(base, "results")); code != 0 {
		t.Fatalf("run against the cluster: exit %d\n%s\n%s", code, out, stderr)
	}
	// A graceful stop, seen by status, and a restart on the same data.
	if code, out, stderr := execute(ctx, "cluster", "stop", "pg1", "--dir", dir); code != 0 || !strings.Contains(out, "pg1: stop done") {
		t.Fatalf("stop: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ := execute(ctx, "cluster", "status", "--dir", dir); code != 0 || strings.Contains(out, " up ") {
		t.Fatalf("status after stop: exit %d\n%s", code, out)
	}
	if code, out, stderr := execute(ctx, "cluster", "restart", "pg1", "--dir", dir); code != 0 {
		t.Fatalf("restart: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ := execute(ctx, "cluster", "status", "--dir", dir); code != 0 || !strings.Contains(out, " up ") {
		t.Fatalf("status after restart: exit %d\n%s", code, out)
	}
	if code, out, _ := execute(ctx, "cluster", "down", "--dir", dir); code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("down: exit %d %s", code, out)
	}
	if code, _, _ := execute(ctx, "cluster", "status", "--dir", dir); code == 0 {
		t.Fatal("status after down must fail: the cluster is gone")
	}
}
