package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	_ "github.com/fieldbench/fieldbench/db/all" // the engines of the database folders, which package cluster's own tests cannot link
)

// Find takes --dir, or the only cluster under the root; none, several, or
// a directory without a state is the user's bad input, named as
// `cluster status` always named it.
func TestFind(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	save := func(name string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := (&cluster.Cluster{Engine: "redis", Dir: dir, Started: time.Now().UTC()}).Save(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if _, _, err := cluster.Find(root, ""); !errors.Is(err, cluster.ErrBadInput) || err.Error() != "no cluster found under "+root+"/: pass --dir" {
		t.Errorf("no cluster: %v", err)
	}
	one := save("a")
	if cl, e, err := cluster.Find(root, ""); err != nil || cl.Dir != one || e.Name() != "redis" {
		t.Errorf("the only cluster: %v, %v, %v", cl, e, err)
	}
	two := save("b")
	want := "several clusters under " + root + "/ (" + filepath.Join(one, cluster.StateFile) + ", " + filepath.Join(two, cluster.StateFile) + "): pass --dir"
	if _, _, err := cluster.Find(root, ""); !errors.Is(err, cluster.ErrBadInput) || err.Error() != want {
		t.Errorf("two clusters: %v, want %q", err, want)
	}
	if cl, _, err := cluster.Find(root, two); err != nil || cl.Dir != two {
		t.Errorf("--dir: %v, %v", cl, err)
	}
	if _, _, err := cluster.Find(root, filepath.Join(root, "none")); !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "no cluster in") {
		t.Errorf("--dir without a cluster: %v", err)
	}
}

// `cluster status`'s table: "-" for no PID, the details sorted by key.
func TestWriteStatus(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := cluster.WriteStatus(&b, []cluster.NodeStatus{
		{Name: "redis1", Addr: "127.0.0.1:7000", Role: "master", State: "up", PID: 42, Detail: map[string]string{"slots": "0-8191", "lag": "0"}},
		{Name: "redis2", Addr: "127.0.0.1:7001", Role: "replica", State: "down"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NODE") || !strings.HasSuffix(lines[1], "up     42   lag=0 slots=0-8191") || !strings.HasSuffix(lines[2], "down   -") {
		t.Errorf("status table:\n%s", b.String())
	}
}
