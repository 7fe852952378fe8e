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
		{"status without cluster", []string{"cluster", "status", "--dir", filepath.Join(dir, "none")}, "no cluster in"},
		{"down without cluster", []string{"cluster", "down", "--dir", filepath.Join(dir, "none")}, "no cluster in"},
		{"kill without node", []string{"cluster", "kill", "--dir", taken}, "needs one node name"},
		{"kill unknown node", []string{"cluster", "kill", "nodeX", "--dir", taken}, `no node "nodeX"`},
		{"bad --cluster", []string{"run", "microblog", "--cluster", "postgres", "--results", dir}, "is not ENGINE:NODES"},
		{"--cluster and --db", []string{"run", "wiki", "--cluster", "postgres:1", "--db", "sqlite:///tmp/x.db", "--results", dir}, "not both"},
		{"bad --cluster-opt", []string{"run", "microblog", "--cluster", "redis:1", "--cluster-opt", "replicas", "--results", dir}, "not key=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(context.Background(), tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
		})
	}
}
