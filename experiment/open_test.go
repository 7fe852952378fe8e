package experiment

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Open reads a relative path under scenarios/ from disk when the file is
// there and from the built-in copy when not (saying so in BuiltIn); any
// other missing path stays an error. Not parallel: it changes the working
// directory.
func TestOpenBuiltIn(t *testing.T) {
	repo, err := Load("../scenarios/wiki/elasticity-redis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, p := range []string{"scenarios/wiki/elasticity-redis.yaml", "./scenarios/wiki/elasticity-redis.yaml", "scenarios/wiki/../wiki/elasticity-redis.yaml"} {
		if _, err := Load(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load(%s) in an empty directory: %v", p, err)
		}
		sc, err := Open(p)
		if err != nil {
			t.Fatalf("Open(%s): %v", p, err)
		}
		if !sc.BuiltIn || sc.Path != p || sc.Name != repo.Name || sc.Cluster.Nodes != repo.Cluster.Nodes || len(sc.Timeline) != len(repo.Timeline) {
			t.Errorf("Open(%s) = built in %v, path %s, %s on %d nodes; the repository's file: %s on %d", p, sc.BuiltIn, sc.Path, sc.Name, sc.Cluster.Nodes, repo.Name, repo.Cluster.Nodes)
		}
	}
	abs, _ := filepath.Abs("scenarios/wiki/elasticity-redis.yaml")
	for _, p := range []string{abs, "wiki/elasticity-redis.yaml", "other/scenarios/wiki/elasticity-redis.yaml", "scenarios/wiki/nosuch.yaml", "scenarios/../scenarios/x/../../etc/passwd"} {
		if sc, err := Open(p); err == nil || sc != nil || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(%s) = %v, %v; want the file's not-exist error", p, sc, err)
		}
	}
	if _, err := Open("scenarios/wiki/nosuch.yaml"); err == nil || !strings.Contains(err.Error(), "elasticity-redis.yaml") {
		t.Errorf("a name not built in: %v, want the built-in names beside it", err)
	}
	// A file on disk wins.
	if err := os.MkdirAll("scenarios/wiki", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("scenarios/wiki/elasticity-redis.yaml", []byte("name: mine\nworkload: {name: wiki}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := Open("scenarios/wiki/elasticity-redis.yaml"); err != nil || sc.BuiltIn || sc.Name != "mine" {
		t.Errorf("Open with the file on disk: %+v, %v", sc, err)
	}
	// And an invalid one on disk is its error, not a fall back.
	if err := os.WriteFile("scenarios/wiki/elasticity-redis.yaml", []byte("name: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := Open("scenarios/wiki/elasticity-redis.yaml"); err == nil {
		t.Errorf("an invalid file on disk: %+v, want its error", sc)
	}
}
