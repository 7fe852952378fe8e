package job

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the heartbeat's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBeat: a long step says what it is doing at every tick, with the
// time since it began, and nothing once stopped (the ticks are given by
// hand: no clock).
func TestBeat(t *testing.T) {
	t.Parallel()
	var w syncBuffer
	ticks := make(chan time.Time)
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	n := 0
	stop := beat(&w, func() string { n++; return "loading: " + strings.Repeat("x", n) }, ticks, start)
	ticks <- start.Add(10 * time.Second)
	ticks <- start.Add(20 * time.Second)
	stop()
	select {
	case ticks <- start.Add(30 * time.Second):
		t.Error("a tick was taken after stop")
	default:
	}
	if got, want := w.String(), "  loading: x (10s)\n  loading: xx (20s)\n"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
}

// TestInterruptible: work that takes no context is waited for, and the
// wait ends with ErrInterrupted as soon as the context ends.
func TestInterruptible(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	if err := interruptible(context.Background(), func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("work's error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- interruptible(ctx, func() error { close(started); <-release; return nil })
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("after the context ended: %v, want ErrInterrupted", err)
	}
}
