package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/probe"
)

// Issue 40, finding 4: a rate the open-loop schedule cannot honour ran 0
// operations and exited 0; it is refused with exit 2 by every command that
// has a --rate, as findmax refuses it, before anything is made.
func TestRateTheScheduleCannotHonour(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "microblog", "--db", "null://", "--duration", "2s", "--rate", "1e19"},
		{"run", "microblog", "--db", "null://", "--duration", "2s", "--rate", "1e300"},
		{"run", "ingest", "--db", "null://", "--verify=false", "--rate", "1e19"},
		{"sweep", "ingest", "--db", "null://", "--verify=false", "--rate", "1e19"},
		{"run", "wiki", "--db", "null://", "--rate", "1e19"},
		{"run", "trajectory", "--db", "null://", "--verify=false", "--rate", "1e19"},
		{"findmax", "microblog", "--db", "null://", "--slo", "p99<1s", "--max-rate", "1e19"},
	} {
		t.Run(strings.Join(args[:2], "_")+"_"+args[len(args)-1], func(t *testing.T) {
			t.Parallel()
			res := filepath.Join(t.TempDir(), "results")
			code, _, stderr := execute(context.Background(), append(args, "--results", res)...)
			if code != cli.ExitUsage || !strings.Contains(stderr, "at most 1e+09") {
				t.Fatalf("%v: exit %d, %q; want exit 2 naming the bound", args, code, stderr)
			}
			if entries, _ := os.ReadDir(res); len(entries) > 0 {
				t.Errorf("refused, but left %d entries in the results directory", len(entries))
			}
		})
	}
}

// Issue 40, finding 5 and the sizing rule: an option whose memory cannot
// fit this machine is refused with exit 2 and the estimate before
// anything starts (op ingest batch --count 100000000 ran silently past
// 40 s towards 57 GB). The values need a terabyte or more, so that they
// are refused on any machine; --count 100000000 itself where it cannot fit.
func TestSizingRefusedAtTheCLI(t *testing.T) {
	t.Parallel()
	usable := probe.ReadMemory().Usable()
	for _, tc := range []struct {
		name  string
		args  []string
		need  float64 // about, in bytes: the row is skipped where it fits
		wants []string
	}{
		{"the issue's op batch", []string{"op", "ingest", "batch", "--source", "0", "--index", "0", "--count", "100000000"}, 66e9, []string{"--count 100000000", "100,000,000 ×"}},
		{"op batch of a source's every record", []string{"op", "ingest", "batch", "--source", "0", "--index", "0", "--count", "2147483647"}, 1.4e12, []string{"--count 2147483647"}},
		{"run ingest's batches", []string{"run", "ingest", "--sources", "10000", "--batch", "1000000000", "--records", "1000000000"}, 6.6e15, []string{"--sources 10000 × --batch 1000000000"}},
		{"sweep ingest's batches", []string{"sweep", "ingest", "--sources", "10000", "--batch", "1000000000", "--to", "1000000000"}, 6.6e15, []string{"--sources 10000 × --batch 1000000000"}},
		{"run trajectory's queries", []string{"run", "trajectory", "--queries", "10000000000"}, 2.9e13, []string{"--queries 10000000000"}},
		{"run microblog's clients", []string{"run", "microblog", "--clients", "100000000", "--duration", "1s"}, 3.3e12, []string{"--clients 100000000"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			if usable == 0 || float64(usable) > tc.need/2 {
				t.Skipf("this machine offers %d bytes: enough to take %s", usable, tc.name)
			}
			dir := t.TempDir()
			db := filepath.Join(dir, "x.db")
			res := filepath.Join(dir, "results")
			args := append(tc.args, "--db", "sqlite://"+db)
			if tc.args[0] != "op" {
				args = append(args, "--results", res)
			}
			code, _, stderr := execute(context.Background(), args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, %q; want exit 2", code, stderr)
			}
			for _, want := range append(tc.wants, "needs about", "this machine has") {
				if !strings.Contains(stderr, want) {
					t.Errorf("%q does not say %q", stderr, want)
				}
			}
			if _, err := os.Stat(db); err == nil {
				t.Error("refused, but the database was created")
			}
			if entries, _ := os.ReadDir(res); len(entries) > 0 {
				t.Errorf("refused, but left %d entries in the results directory", len(entries))
			}
		})
	}
}

// fifo makes a named pipe in a new directory and starts a writer that
// writes head, then unit over and over, until the reader goes away or max
// bytes are written, then closes it. It returns the pipe's path and the
// count of bytes written.
func fifo(t *testing.T, head, unit string, max int64) (string, *atomic.Int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump.xml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		chunk := []byte(strings.Repeat(unit, max64(1, (64<<10)/len(unit))))
		if k, err := f.Write([]byte(head)); err != nil {
			return
		} else {
			n.Add(int64(k))
		}
		for n.Load() < max {
			k, err := f.Write(chunk)
			n.Add(int64(k))
			if err != nil { // EPIPE: the reader closed the pipe
				return
			}
		}
	}()
	t.Cleanup(func() {
		// A reader that never opened the pipe: open it to free the writer.
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
		<-done
	})
	return path, &n
}

func max64(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Issue 40, finding 5: load wiki --from /dev/zero grew to 1.25 GB in 8 s,
// printed nothing and ignored SIGINT. From an endless stream with no XML
// structure it now ends with exit 2 after reading a bounded amount (one
// token's bound, 32 MiB, and the read-ahead), whatever follows.
func TestLoadWikiFromEndlessStream(t *testing.T) {
	t.Parallel()
	path, written := fifo(t, "", "\x00", 512<<20)
	dir := t.TempDir()
	code, _, stderr := execute(context.Background(), "load", "wiki", "--db", "sqlite://"+filepath.Join(dir, "w.db"), "--from", path)
	if code != cli.ExitUsage || !strings.Contains(stderr, "nothing was loaded") {
		t.Fatalf("exit %d, %q; want exit 2 saying nothing was loaded", code, stderr)
	}
	// The pipe's own buffer holds what was written but not read.
	if n := written.Load(); n > 64<<20 {
		t.Errorf("%d bytes of the endless stream were read before it was refused, want at most 64 MiB", n)
	}
}

// Ctrl-C during load wiki --from a stream that is still coming (inside a
// page's text, where the old reader waited for the end of the token): the
// load ends at once with exit 130 and nothing loaded.
func TestLoadWikiFromStreamInterrupted(t *testing.T) {
	t.Parallel()
	path, written := fifo(t, "<mediawiki><page><title>x</title><revision><text>", "a", 256<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	var out bytes.Buffer
	errw := &signalWriter{marker: "loading articles from", cancel: func() {}}
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{"load", "wiki", "--db", "sqlite://" + filepath.Join(dir, "w.db"), "--from", path}, &out, errw)
	}()
	// Cancelled once a MiB of the page's text is in: the reader is inside
	// the token.
	for written.Load() < 1<<20 {
		select {
		case code := <-done:
			t.Fatalf("load ended (exit %d) before it was interrupted: %s", code, errw.buf.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	at := written.Load()
	var code int
	select {
	case code = <-done:
	case <-time.After(time.Minute): // generous: it returns within a second
		t.Fatal("load wiki still runs a minute after Ctrl-C")
	}
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInterrupted, errw.buf.String())
	}
	if n := written.Load() - at; n > 16<<20 {
		t.Errorf("%d more bytes were read after Ctrl-C", n)
	}
	if errors.Is(ctx.Err(), context.Canceled) && strings.Contains(out.String(), "loaded") {
		t.Errorf("said it loaded: %s", out.String())
	}
}
