package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// heartbeatEvery is how often a long step that is not a measured run says
// what it is doing (the sizing rule: progress at least every 10 s).
const heartbeatEvery = 10 * time.Second

// heartbeat prints "  <status> (<elapsed>)" on w every heartbeatEvery
// until the returned stop is called (stop may be called more than once): the progress of a long step (a load,
// a generation, a batch of a million records) that has no progress line
// of its own. status is called from heartbeat's goroutine: what it reads
// must be safe for that (atomics).
func heartbeat(w io.Writer, status func() string) (stop func()) {
	t := time.NewTicker(heartbeatEvery)
	end := beat(w, status, t.C, time.Now())
	var once sync.Once
	return func() { once.Do(func() { t.Stop(); end() }) }
}

// beat is heartbeat with its ticks given (tests give them by hand).
func beat(w io.Writer, status func() string, ticks <-chan time.Time, start time.Time) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case now := <-ticks:
				fmt.Fprintf(w, "  %s (%s)\n", status(), now.Sub(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(done)
		<-finished // no line after stop
	}
}

// interruptible runs f, which does not take a context (a generator's
// work), and returns its error, or ErrInterrupted as soon as ctx ends:
// Ctrl-C is honoured within a second even while f still runs. f is then
// left to finish on its own goroutine (its result unused; the process is
// about to exit), so f must not write where the caller will after.
func interruptible(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ErrInterrupted
	}
}

// writtenSoFar is a heartbeat's status of a generate command writing the
// files at paths (a directory: the files in it): their size so far.
func writtenSoFar(paths ...string) func() string {
	return func() string {
		var n int64
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			if !st.IsDir() {
				n += st.Size()
				continue
			}
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
					n += fi.Size()
				}
			}
		}
		if n == 0 {
			return "generating: nothing written yet"
		}
		return fmt.Sprintf("writing: %.1f MB written so far", float64(n)/1e6)
	}
}
