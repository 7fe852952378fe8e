package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// Three shards of one microblog run against a real Redis, started together
// by --start-at, merge into one result whose histogram is the exact HDR
// sum of theirs and whose posts never collided.
func TestShardsRunAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	t.Parallel()
	base := t.TempDir()
	ctx := context.Background()
	dir := filepath.Join(base, "redis")
	code, out, stderr := execute(ctx, "cluster", "up", "redis", "--nodes", "1", "--dir", dir)
	t.Cleanup(func() { execute(ctx, "cluster", "down", "--dir", dir) })
	if code != 0 {
		t.Fatalf("up: exit %d\n%s\n%s", code, out, stderr)
	}
	dsn := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "DSN: ", 2)[1], "\n", 2)[0])
	startAt := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, stderr := execute(ctx, "run", "microblog", "--db", dsn, "--users", "60", "--clients", "7", "--rate", "150",
				"--duration", "3s", "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", startAt, "--hdr-log",
				"--results", filepath.Join(base, fmt.Sprint(i)))
			if code != cli.ExitOK {
				t.Errorf("shard %d: exit %d: %s", i, code, stderr)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var dirs []string
	want := result.NewHist()
	var posts, clients int64
	for i := range n {
		m, _ := filepath.Glob(filepath.Join(base, fmt.Sprint(i), "*-microblog-redis"))
		if len(m) != 1 {
			t.Fatalf("shard %d: run directories %v", i, m)
		}
		dirs = append(dirs, m[0])
		r, err := result.Read(m[0])
		if err != nil {
			t.Fatal(err)
		}
		h, err := r.Merged(true)
		if err != nil {
			t.Fatal(err)
		}
		want.Merge(h["post"])
		posts += r.Summary.Ops["post"].Count
		for kind := range r.Summary.Ops["post"].Errors {
			t.Errorf("shard %d: post error %s", i, kind)
		}
		clients += int64(r.Header.Options["shard_clients"].(float64))
		if late := r.Summary.Extra["start_late_ms"]; late < 0 || late > 2000 {
			t.Errorf("shard %d started %v ms after --start-at", i, late)
		}
	}
	if clients != 7 {
		t.Errorf("the shards ran %d clients, want the run's 7", clients)
	}
	res := filepath.Join(base, "merged")
	code, out, stderr = execute(ctx, append([]string{"merge", "--results", res}, dirs...)...)
	if code != cli.ExitOK {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(res, "*-merged-microblog-redis"))
	if len(m) != 1 {
		t.Fatalf("merged directories %v", m)
	}
	merged, err := result.Read(m[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := merged.Merged(true)
	if err != nil {
		t.Fatal(err)
	}
	we, _ := result.EncodeHist(want)
	ge, _ := result.EncodeHist(got["post"])
	if we != ge || merged.Summary.Ops["post"].Count != posts {
		t.Errorf("merged post histogram is not the HDR sum of the shards' (count %d, want %d)", merged.Summary.Ops["post"].Count, posts)
	}
	if _, err := os.Stat(filepath.Join(m[0], "report.html")); err != nil {
		t.Error(err)
	}
	// A shard given twice, or one missing, is refused.
	if code, _, stderr := execute(ctx, "merge", "--results", res, dirs[0], dirs[0], dirs[1]); code != cli.ExitUsage || !strings.Contains(stderr, "given twice") {
		t.Errorf("a shard twice: exit %d %s", code, stderr)
	}
	if code, _, stderr := execute(ctx, "merge", "--results", res, dirs[0], dirs[2]); code != cli.ExitUsage || !strings.Contains(stderr, "missing") {
		t.Errorf("a shard missing: exit %d %s", code, stderr)
	}
}
