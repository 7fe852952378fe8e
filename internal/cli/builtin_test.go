package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// From a directory without the repository's scenarios/ (an installed
// binary, the image's /results), `study NAME --dry-run` and `experiment
// scenarios/...` run the copies built into the binary and say so; a file
// on disk there wins, and --scenarios still names the only directory read
// (issue 40, finding 9: both exited 2 with "stat scenarios: no such file").
// Not parallel: it changes the working directory.
func TestBuiltInScenarios(t *testing.T) {
	ctx := context.Background()
	t.Chdir(t.TempDir())
	for _, name := range []string{"wiki", "ingest", "trajectory", "microblog"} {
		code, out, errs := execute(ctx, "study", name, "--dry-run")
		if code != cli.ExitOK || !strings.Contains(out, "[built in]") {
			t.Errorf("study %s --dry-run from an empty directory: exit %d\n%s%s", name, code, out, errs)
		}
	}
	code, out, errs := execute(ctx, "experiment", "scenarios/wiki/elasticity-redis.yaml", "--dry-run")
	if code != cli.ExitOK || !strings.Contains(out, "scenario wiki-elasticity-redis") || !strings.Contains(errs, "copy built into") {
		t.Errorf("experiment of a built-in scenario: exit %d\n%s%s", code, out, errs)
	}
	// A mistyped name is refused and told the names built in.
	code, _, errs = execute(ctx, "experiment", "scenarios/wiki/elasticity-rediss.yaml", "--dry-run")
	if code != cli.ExitUsage || !strings.Contains(errs, "elasticity-redis.yaml") {
		t.Errorf("a mistyped built-in name: exit %d, %s", code, errs)
	}
	// --scenarios given: that directory only, even where it lacks a file.
	if err := os.MkdirAll("mine/wiki", 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := execute(ctx, "study", "wiki", "--dry-run", "--scenarios", "mine"); code != cli.ExitUsage || !strings.Contains(errs, filepath.Join("mine", "wiki", "elasticity-cassandra.yaml")) {
		t.Errorf("--scenarios without the files: exit %d, %s", code, errs)
	}
	// A file on disk under scenarios/ wins over the built-in copy.
	if err := os.MkdirAll("scenarios/wiki", 0o755); err != nil {
		t.Fatal(err)
	}
	own := "name: my-redis\nworkload: {name: wiki, options: {articles: 100}}\ncluster: {engine: redis, nodes: 1}\n"
	if err := os.WriteFile("scenarios/wiki/elasticity-redis.yaml", []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = execute(ctx, "experiment", "scenarios/wiki/elasticity-redis.yaml", "--dry-run")
	if code != cli.ExitOK || !strings.Contains(out, "scenario my-redis") || strings.Contains(errs, "built into") {
		t.Errorf("a file on disk: exit %d\n%s%s", code, out, errs)
	}
	// and a scenarios/ holding only that file leaves the others built in.
	if code, out, errs := execute(ctx, "study", "wiki", "--dry-run"); code != cli.ExitOK || !strings.Contains(out, "elasticity-cassandra.yaml [built in]") {
		t.Errorf("study beside a partial scenarios/: exit %d\n%s%s", code, out, errs)
	}
}
