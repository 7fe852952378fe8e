package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// goldenFrom rewrites testdata/result-shapes.golden from run directories
// made by another build (one subdirectory per case name), so the golden
// file can be taken from the fieldbench before a refactoring.
var updateShapes = flag.Bool("update-shapes", false, "rewrite the result-shapes golden file from this build's runs (after a deliberate change of a result's figures)")

var goldenFrom = flag.String("golden-from", "", "write the result-shapes golden file from the run directories under DIR (DIR/<case>/<run>/result.jsonl)")

// shapeCases are today's commands whose result files must keep their shape.
var shapeCases = []struct {
	name string
	args []string
}{
	{"run-microblog", []string{"run", "microblog", "--users", "50", "--clients", "2", "--duration", "2s"}},
	{"run-wiki", []string{"run", "wiki", "--articles", "200", "--requests", "100", "--sets", "2", "--repeat", "2"}},
	{"run-ingest", []string{"run", "ingest", "--sources", "2", "--records", "500", "--batch", "100"}},
	{"sweep-ingest", []string{"sweep", "ingest", "--sources", "2", "--from", "200", "--to", "400", "--step", "200", "--runs", "2", "--warmup-runs", "1", "--batch", "100"}},
	{"run-trajectory", []string{"run", "trajectory", "--scale", "0.001", "--queries", "3", "--repeat", "2"}},
}

// resultShape is what a result file says, without its measured values:
// the header's options, operations and series, the summary's figures, the
// point series and the event names.
func resultShape(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set := map[string]map[string]bool{}
	add := func(what string, names ...string) {
		if set[what] == nil {
			set[what] = map[string]bool{}
		}
		for _, n := range names {
			set[what][n] = true
		}
	}
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		kind, _ := line["kind"].(string)
		body, _ := line[kind].(map[string]any)
		switch kind {
		case "header":
			for _, k := range []string{"workload", "adapter"} {
				add("header."+k, fmt.Sprint(body[k]))
			}
			for _, k := range []string{"options", "series", "groups"} {
				if m, ok := body[k].(map[string]any); ok {
					add("header."+k, keys(m)...)
				}
			}
			if ops, ok := body["operations"].([]any); ok {
				for _, o := range ops {
					add("header.operations", fmt.Sprint(o))
				}
			}
			add("header.keys", keys(body)...)
		case "summary":
			if m, ok := body["extra"].(map[string]any); ok {
				add("summary.extra", keys(m)...)
			}
			if m, ok := body["ops"].(map[string]any); ok {
				add("summary.ops", keys(m)...)
			}
		case "point":
			add("point.series", fmt.Sprint(body["series"]))
		case "event":
			add("event.name", fmt.Sprint(body["name"]))
		default:
			add("kind", kind)
		}
	}
	var lines []string
	for what, names := range set {
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		lines = append(lines, what+": "+strings.Join(ns, " "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func onlyResult(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*", "result.jsonl"))
	if len(m) != 1 {
		t.Fatalf("%d result files under %s", len(m), dir)
	}
	return m[0]
}

// TestResultShapesUnchanged runs today's commands and compares the shape of
// their result files with the golden one taken before the job layer, so
// moving the orchestration cannot silently drop or rename a figure.
func TestResultShapesUnchanged(t *testing.T) {
	golden := filepath.Join("testdata", "result-shapes.golden")
	if *goldenFrom != "" {
		var b strings.Builder
		for _, c := range shapeCases {
			fmt.Fprintf(&b, "== %s\n%s\n", c.name, resultShape(t, onlyResult(t, filepath.Join(*goldenFrom, c.name))))
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	wants := map[string]string{}
	for _, part := range strings.Split(string(want), "== ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		wants[name] = strings.TrimSpace(body)
	}
	got := make([]string, len(shapeCases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range shapeCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				code, _, stderr := execute(context.Background(), append(c.args, "--results", dir)...)
				if code != cli.ExitOK {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				got[i] = resultShape(t, onlyResult(t, dir))
			})
		}
	})
	if *updateShapes {
		var b strings.Builder
		for i, c := range shapeCases {
			fmt.Fprintf(&b, "== %s\n%s\n", c.name, got[i])
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for i, c := range shapeCases {
		t.Run(c.name, func(t *testing.T) {
			if got := got[i]; got != wants[c.name] {
				t.Errorf("result shape changed (if on purpose: go test -run TestResultShapesUnchanged -update-shapes):\n--- golden\n%s\n--- now\n%s", wants[c.name], got)
			}
		})
	}
}
