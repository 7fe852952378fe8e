package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// A run whose shards cannot all have a share is refused by every shard at
// once, the ones with a share included: each computes every shard's share
// from (options, i, n) alone, so none waits for a shard that refused. The
// context only bounds the test: a shard that waits instead fails it.
func TestEmptyShareRefusedByEveryShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"microblog", []string{"microblog", "--clients", "1", "--duration", "1s"}, "share of the 1 clients is empty"},
		{"wiki", []string{"wiki", "--threads", "1", "--articles", "20", "--requests", "10", "--sets", "1"}, "share of the 1 threads is empty"},
		{"ingest", []string{"ingest", "--sources", "1", "--records", "10", "--barrier", filepath.Join(dir, "barrier")}, "share of the 1 sources is empty"},
		{"trajectory", []string{"trajectory", "--mode", "random", "--clients", "1", "--reset", "--start-at", soon}, "share of the 1 clients is empty"},
	} {
		for _, s := range []string{"0/2", "1/2"} {
			db := "sqlite://" + filepath.Join(dir, tc.name+".db")
			res := filepath.Join(dir, "results-"+tc.name)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			args := append([]string{"run"}, tc.args...)
			code, _, stderr := execute(ctx, append(args, "--db", db, "--results", res, "--shard", s)...)
			cancel()
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "shard 0/2") {
				t.Errorf("%s --shard %s: exit %d, %q; want exit %d naming shard 0/2 and %q", tc.name, s, code, stderr, cli.ExitUsage, tc.want)
			}
		}
	}
}

// --start-at is a time the shards can still meet at: one in the past (the
// shards could not start together) or more than a day ahead (a typo that
// would wait in silence for years) is refused before anything starts.
func TestStartAtBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for k, tc := range []struct {
		at, want string
	}{
		{"yesterday", "RFC 3339"},
		{time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "in the past"},
		{"2099-01-01T00:00:00Z", "more than 24h0m0s ahead"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res := filepath.Join(dir, fmt.Sprint("results", k))
		code, _, stderr := execute(ctx, "run", "microblog", "--db", "null://", "--duration", "1s", "--results", res, "--start-at", tc.at)
		cancel()
		if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("--start-at %s: exit %d, %q; want exit %d and %q", tc.at, code, stderr, cli.ExitUsage, tc.want)
		}
		if w := leftIn(t, res); len(w) > 0 {
			t.Errorf("--start-at %s: refused, yet wrote %v", tc.at, w)
		}
	}
}

// cancelOn is a stderr that cancels a command's context once it has
// written want: an interrupt at a known point of the command, not after a
// guessed time.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.want) {
		c.cancel()
	}
	return n, err
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// A run waiting for its --start-at says for what and how long, and Ctrl-C
// during the wait says the truth: the run had not started, nothing was
// measured (exit 130), and no run directory is left.
func TestInterruptBeforeStartAt(t *testing.T) {
	t.Parallel()
	res := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stderr := &cancelOn{want: "waiting for", cancel: cancel}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var out bytes.Buffer
	code := cli.Execute(ctx, []string{"run", "microblog", "--db", "null://", "--duration", "1s", "--results", res, "--start-at", at}, &out, stderr)
	got := stderr.String()
	if code != cli.ExitInterrupted || strings.Contains(got, "measured so far were saved") || !strings.Contains(got, "nothing was measured") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d saying nothing was measured", code, got, cli.ExitInterrupted)
	}
	if !strings.Contains(got, "waiting for the common start at "+at+" (in ") {
		t.Errorf("the wait does not say when it ends:\n%s", got)
	}
	if w := leftIn(t, res); len(w) > 0 {
		t.Errorf("an interrupted wait left %v", w)
	}

	// So does Ctrl-C while shard 1 waits for shard 0 to load the dataset.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stderr = &cancelOn{want: "waiting for shard 0", cancel: cancel}
	db := "sqlite://" + filepath.Join(t.TempDir(), "empty.db")
	code = cli.Execute(ctx, []string{"run", "microblog", "--db", db, "--clients", "2", "--duration", "1s", "--results", res, "--shard", "1/2"}, &out, stderr)
	got = stderr.String()
	if code != cli.ExitInterrupted || strings.Contains(got, "measured so far were saved") || !strings.Contains(got, "before the run started: nothing was measured") {
		t.Errorf("interrupted waiting for shard 0: exit %d, stderr:\n%s\nwant exit %d saying nothing was measured", code, got, cli.ExitInterrupted)
	}
	if w := leftIn(t, res); len(w) > 0 {
		t.Errorf("an interrupted wait for shard 0 left %v", w)
	}
}

// leftIn lists what dir holds (nothing when it does not exist).
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != dir {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}
