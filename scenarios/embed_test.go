package scenarios_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fieldbench/fieldbench/experiment"
	"github.com/fieldbench/fieldbench/scenarios"
)

// TestEmbeddedStandAlone: every scenario file of this directory is built
// in, byte for byte, and valid; and none refers to another file (a dump
// to load: wiki's from), since a built-in copy has no directory around it
// to resolve one in. Paths in a scenario's options are the working
// directory's, as on the command line (docs/experiments.md).
func TestEmbeddedStandAlone(t *testing.T) {
	t.Parallel()
	disk, err := filepath.Glob("*/*.yaml")
	if err != nil || len(disk) == 0 {
		t.Fatalf("no scenario files here: %v", err)
	}
	if got := scenarios.Names(); !slices.Equal(got, disk) {
		t.Errorf("built in %v\non disk  %v", got, disk)
	}
	for _, name := range disk {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(scenarios.FS(), name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the built-in copy differs from the file (%v)", name, err)
			continue
		}
		sc, err := experiment.Parse(got)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		opts := []map[string]any{sc.Workload.Options}
		for _, st := range sc.Steps {
			opts = append(opts, st.Options)
		}
		for _, o := range opts {
			if _, ok := o["from"]; ok && sc.Workload.Name == "wiki" {
				t.Errorf("%s loads the file %v: a built-in copy cannot carry it", name, o["from"])
			}
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"scenarios/wiki/elasticity-redis.yaml":              "wiki/elasticity-redis.yaml",
		"./scenarios/wiki/elasticity-redis.yaml":            "wiki/elasticity-redis.yaml",
		"scenarios//wiki/./elasticity-redis.yaml":           "wiki/elasticity-redis.yaml",
		"scenarios/ingest/../wiki/elasticity-redis.yaml":    "wiki/elasticity-redis.yaml",
		"/scenarios/wiki/elasticity-redis.yaml":             "",
		"wiki/elasticity-redis.yaml":                        "",
		"x/scenarios/wiki/elasticity-redis.yaml":            "",
		"scenarios/wiki/nosuch.yaml":                        "",
		"scenarios/wiki":                                    "",
		"scenarios/README.md":                               "",
		"scenarios/embed.go":                                "",
		"scenarios/../scenarios/wiki/elasticity-redis.yaml": "wiki/elasticity-redis.yaml",
		"../scenarios/wiki/elasticity-redis.yaml":           "",
		"scenarios/wiki/elasticity-redis.yaml\x00":          "",
		"": "",
	} {
		got, ok := scenarios.Lookup(p)
		if got != want || ok != (want != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}
