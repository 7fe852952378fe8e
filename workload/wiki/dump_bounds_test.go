package wiki

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// endless is an input that never ends: head, then unit over and over. It
// counts what was read and, past max bytes, fails the read (so that a
// reader without bounds ends the test instead of the machine's memory).
type endless struct {
	head, unit string
	max        int64
	mu         sync.Mutex
	n          int64
}

var errReadTooMuch = errors.New("the test's endless input read past its bound")

func (e *endless) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n >= e.max {
		return 0, errReadTooMuch
	}
	k := 0
	for k < len(p) {
		var c byte
		if e.n < int64(len(e.head)) {
			c = e.head[e.n]
		} else {
			c = e.unit[(e.n-int64(len(e.head)))%int64(len(e.unit))]
		}
		p[k] = c
		k++
		e.n++
	}
	return k, nil
}

func (e *endless) read() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// TestDumpEndlessStream (issue 40, finding 5: load wiki --from /dev/zero
// grew to 1.25 GB in 8 s): an endless input without the structure of a
// dump (no '<', a tag, text or comment that never ends, endless nesting,
// endless small tokens) ends with a DumpError after reading a bounded
// amount, whatever follows: the reader holds at most one token and one
// page.
func TestDumpEndlessStream(t *testing.T) {
	const page = 1 << 20 // MaxPageBytes: tokens up to 2 MiB
	// What may be read besides one token: the read-ahead (1 MiB), the
	// magic-sniffing buffer (1 MiB), the decoder's buffer (64 KiB).
	const bound = 2*page + 3<<20
	const text = "<mediawiki><page><title>x</title><revision><text>"
	for _, tc := range []struct {
		name, head, unit, want string
	}{
		// The decoder reads a text to the next '<' before it checks its
		// characters: it now stops at the bound, and says what it found.
		{"zeros (/dev/zero)", "", "\x00", "illegal character code U+0000"},
		{"spaces after the root", "<mediawiki>", " ", "runs past"},
		{"a tag name", "<mediawiki><", "a", "runs past"},
		{"attributes", "<mediawiki><page ", `a="1" `, "runs past"},
		{"a comment", "<mediawiki><!--", "-x", "runs past"},
		{"a page's text", text, "a", "over 1048576 bytes"},
		{"a title", "<mediawiki><page><title>", "a", "title of the page"},
		{"nesting in a page", "<mediawiki><page>", "<a>", "nest more than"},
		{"nesting in siteinfo", "<mediawiki><siteinfo>", "<a>", "nest more than"},
		{"text in small pieces", text, "<![CDATA[aaaa]]>", "over 1048576 bytes"},
		{"a title in small pieces", "<mediawiki><page><title>", "<![CDATA[aaaa]]>", "title of the page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &endless{head: tc.head, unit: tc.unit, max: 256 << 20}
			d, err := NewDump(in, "endless.xml", DumpOptions{MaxPageBytes: page})
			if err == nil {
				defer d.Close()
				for err == nil {
					_, err = d.Next()
				}
			}
			var de *DumpError
			if !errors.As(err, &de) || errors.Is(err, errReadTooMuch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("after %d bytes: %v; want a DumpError saying %q", in.read(), err, tc.want)
			}
			if n := in.read(); n > bound {
				t.Errorf("read %d bytes of an endless input before refusing it, want at most %d", n, bound)
			}
		})
	}
}

// blocking is an input that gives head, then blocks in Read until
// released: a pipe whose writer went quiet.
type blocking struct {
	head    string
	sent    bool
	waiting chan struct{} // closed once a Read blocks
	release chan struct{}
	once    sync.Once
}

func (b *blocking) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, b.head), nil
	}
	b.once.Do(func() { close(b.waiting) })
	<-b.release
	return 0, io.EOF
}

// TestDumpContext: a dump read with a context stops when it ends: Next
// returns the context's error at once after it, and a Next that waits for
// input that does not come returns when the context ends, not when the
// input does (before issue 40, load wiki --from ignored Ctrl-C).
func TestDumpContext(t *testing.T) {
	t.Parallel()
	t.Run("cancelled between pages", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		in := &endless{head: "<mediawiki>", unit: "<page><title>x</title><revision><text>y</text></revision></page>\n", max: 256 << 20}
		d, err := NewDumpContext(ctx, in, "pages.xml", DumpOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for range 1000 {
			if _, err := d.Next(); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if _, err := d.Next(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after the context ended: %v, want context.Canceled", err)
		}
	})
	t.Run("cancelled while waiting for input", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		in := &blocking{head: "<mediawiki><page><title>x</title><revision><text>", waiting: make(chan struct{}), release: make(chan struct{})}
		defer close(in.release)
		d, err := NewDumpContext(ctx, in, "pipe", DumpOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		done := make(chan error, 1)
		go func() {
			_, err := d.Next()
			done <- err
		}()
		<-in.waiting
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Next: %v, want context.Canceled", err)
			}
		case <-time.After(time.Minute): // a generous bound: it returns at once
			t.Fatal("Next still waits for input a minute after its context ended")
		}
	})
}

// TestRunSetsHugeRepeat: --repeat is time, not memory (issue 40's sizing
// rule): a set's repetition times are kept as they end, so a repeat the
// flag accepts (any int) neither panics nor reserves gigabytes before the
// first repetition (it was the capacity of a slice: makeslice panicked).
func TestRunSetsHugeRepeat(t *testing.T) {
	t.Parallel()
	p := Plan{Requests: 1, ReadPct: 100, Threads: 1, Dist: Uniform, Seed: 1, Articles: 1}
	reps := 0
	stopAfterTwo := func(context.Context, []*Client, int64) bool { reps++; return reps > 2 }
	var got []SetResult
	tot, err := RunSets(context.Background(), nil, p, 1, math.MaxInt, stopAfterTwo, func(r SetResult) error { got = append(got, r); return nil })
	if err != nil || !tot.Interrupted || len(got) != 1 || len(got[0].Seconds) != 2 {
		t.Fatalf("RunSets: %v, %+v, sets %+v: want one partial set of 2 repetitions", err, tot, got)
	}
}
