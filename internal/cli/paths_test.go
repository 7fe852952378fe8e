package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// filesUnder lists every file and directory under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// A scenario's name becomes one entry of --results and nothing else
// (issue 40, finding 2: name "../../../pwned" wrote DIR/pwned/ beside
// DIR/exres, and --dry-run accepted it). Every hostile name is refused
// with exit 2 by the dry run and by the real run, before anything is
// made, inside --results or out of it.
func TestExperimentNameStaysInResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml string }{
		{"escape", `"../../../pwned"`},
		{"parent", `".."`},
		{"dot", `"."`},
		{"subdirectory", `"a/b"`},
		{"absolute", `"/tmp/pwned"`},
		{"backslash", `'..\..\pwned'`},
		{"newline", `"two\nlines"`},
		{"nul", `"nul\0byte"`},
		{"4 KB", strings.Repeat("n", 4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			scenario := filepath.Join(base, "s.yaml")
			yaml := "name: " + tc.yaml + "\nworkload: {name: microblog, options: {users: 20, clients: 1, duration: 1s}}\n"
			if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			results := filepath.Join(base, "exres")
			for _, dry := range []bool{true, false} {
				args := []string{"experiment", scenario, "--results", results}
				if dry {
					args = append(args, "--dry-run")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				code, out, stderr := execute(ctx, args...)
				cancel()
				if code != cli.ExitUsage || !strings.Contains(stderr, "name:") {
					t.Errorf("dry run %v: exit %d, want 2 naming the scenario's name\nstdout %s\nstderr %s", dry, code, out, stderr)
				}
				if len(stderr) > 1000 {
					t.Errorf("dry run %v: a %d-byte message (a long name must be cut)", dry, len(stderr))
				}
				if got := filesUnder(t, base); len(got) != 1 || got[0] != "s.yaml" {
					t.Errorf("dry run %v: refused, but wrote %v", dry, got)
				}
			}
		})
	}
}

// A run directory named for a result file's header (merge names its
// directory for the shards' workload and adapter) stays inside --results
// too: a crafted header is refused, not followed up the tree.
func TestMergeOfACraftedHeaderStaysInResults(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	var shards []string
	for i := range 2 {
		dir := writeShard(t, filepath.Join(base, "in", "s"+string(rune('0'+i))), i, 2)
		path := filepath.Join(dir, result.FileName)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"workload":"wiki"`), []byte(`"workload":"../../../escaped"`), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, dir)
	}
	before := filesUnder(t, base)
	results := filepath.Join(base, "out", "merged")
	code, _, stderr := execute(context.Background(), append([]string{"merge", "--results", results}, shards...)...)
	if code != cli.ExitUsage || !strings.Contains(stderr, "separator") {
		t.Errorf("exit %d, want 2 saying the name holds a separator: %s", code, stderr)
	}
	after := filesUnder(t, base)
	for _, p := range after {
		if !strings.HasPrefix(p, "in") && !strings.HasPrefix(p, "out") {
			t.Errorf("merge wrote %s outside --results", p)
		}
		if strings.Contains(p, "escaped") {
			t.Errorf("merge made %s", p)
		}
	}
	if len(after) > len(before)+2 { // out/ and out/merged/ at most
		t.Errorf("refused, but wrote %v", after[len(before):])
	}
}
