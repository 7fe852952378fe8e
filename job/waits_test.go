package job

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// fakeClock is a clock whose time moves only when a wait sleeps on it:
// After advances it by the sleep and fires at once, and cancel (when set)
// is called once the clock has reached cancelAt.
type fakeClock struct {
	now      time.Time
	sleeps   []time.Duration
	cancelAt time.Time
	cancel   context.CancelFunc
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	if c.cancel != nil && !c.now.Before(c.cancelAt) {
		c.cancel() // the interrupt comes during this sleep
		return ch
	}
	ch <- c.now
	return ch
}

// A wait for the common start says when it ends at least every 10 s,
// counting down, and ends at the start; Ctrl-C during it says the run had
// not started and nothing was measured.
func TestWaitStartSaysSo(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := t0.Add(42 * time.Second)
	c := &fakeClock{now: t0}
	var notes []string
	if err := waitStart(context.Background(), at, c, func(s string) { notes = append(notes, s) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"in 42s", "in 32s", "in 22s", "in 12s", "in 2s"}
	if len(notes) != len(want) {
		t.Fatalf("notices %q, want one every 10 s: %q", notes, want)
	}
	for i, n := range notes {
		if !strings.Contains(n, "waiting for the common start at 2026-12-01T12:00:42Z ("+want[i]+")") {
			t.Errorf("notice %d: %q, want %q", i, n, want[i])
		}
	}
	for _, d := range c.sleeps {
		if d > startNoticeEvery {
			t.Errorf("slept %s without a word (at most %s)", d, startNoticeEvery)
		}
	}
	if !c.now.Equal(at) {
		t.Errorf("the wait ended at %s, want the start %s", c.now, at)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c = &fakeClock{now: t0, cancelAt: t0.Add(15 * time.Second), cancel: cancel}
	err := waitStart(ctx, at, c, func(string) {})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "nothing was measured") || !strings.Contains(err.Error(), "2026-12-01T12:00:42Z") {
		t.Errorf("interrupted wait: %v, want an interrupt saying nothing was measured", err)
	}
	// A start already past (the shard was not ready in time) is not waited
	// for, and says the shard starts late.
	c = &fakeClock{now: at.Add(1500 * time.Millisecond)}
	notes = nil
	h := result.Header{Options: map[string]any{}}
	if err := startTogether(context.Background(), &h, at, c, func(s string) { notes = append(notes, s) }); err != nil || len(c.sleeps) > 0 {
		t.Fatalf("a past start: %v, slept %v", err, c.sleeps)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "passed 1.5s before this shard was ready") || h.Options["start_at"] != "2026-12-01T12:00:42Z" {
		t.Errorf("a past start: %q, options %v", notes, h.Options)
	}
}

// --start-at is a time ahead, at most a day ahead, or it is refused as
// bad input.
func TestParseStartAt(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		late time.Duration
		err  string
	}{
		{"", 0, ""},
		{"2026-12-01T12:00:01Z", 0, ""},
		{"2026-12-02T12:00:00Z", 0, ""}, // 24 h ahead, the bound
		{"2026-12-01T13:00:00+01:00", 0, "in the past"},
		{"2026-12-01T12:00:00Z", 0, "in the past"},
		{"2026-11-30T12:00:00Z", 0, "in the past (24h0m0s ago)"},
		{"2026-12-02T12:00:01Z", 0, "more than 24h0m0s ahead"},
		{"2099-01-01T00:00:00Z", 0, "more than 24h0m0s ahead"},
		{"yesterday", 0, "RFC 3339"},
		// A shard (a pod scheduled late) may start within the grace.
		{"2026-12-01T11:55:00Z", LateStartGrace, ""},
		{"2026-12-01T12:00:00Z", LateStartGrace, ""},
		{"2026-12-01T11:50:00Z", LateStartGrace, "in the past (10m0s ago)"},
		{"2026-11-30T12:00:00Z", LateStartGrace, "in the past (24h0m0s ago)"},
	} {
		_, err := parseStartAt(tc.in, now, tc.late)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q refused: %v", tc.in, err)
		case tc.err != "" && (err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want bad input saying %q", tc.in, err, tc.err)
		}
	}
}

// Every shard of a run refuses when any shard's share would be empty,
// with the same words; a run whose every shard has some is cut as before.
func TestEveryShare(t *testing.T) {
	for _, tc := range []struct {
		total int
		split string
		n     int
		empty string // "" every shard has a share
	}{
		{1, "", 2, "shard 0/2's share of the 1 clients"},
		{2, "", 4, "shard 0/4's share of the 2 clients"},
		{3, "", 4, "shard 0/4's share"},
		{4, "", 4, ""},
		{8, "5,3", 2, ""},
		{2, "1,4", 2, "shard 0/2's share of the 2 clients"},
		{5, "1,4", 2, ""},
		{0, "", 1, "--clients 0: no clients to run"},
	} {
		var los, his []int
		for i := range tc.n {
			sh, err := (shard{i: i, n: tc.n}).withSplit(tc.split)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, err := sh.everyShare(tc.total, "clients", "--clients")
			switch {
			case tc.empty == "" && err != nil:
				t.Errorf("%d over %d (%q), shard %d: %v", tc.total, tc.n, tc.split, i, err)
			case tc.empty != "" && (err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.empty)):
				t.Errorf("%d over %d (%q), shard %d: %v, want %q", tc.total, tc.n, tc.split, i, err, tc.empty)
			}
			los, his = append(los, lo), append(his, hi)
		}
		if tc.empty == "" && (los[0] != 0 || his[tc.n-1] != tc.total) {
			t.Errorf("%d over %d (%q): shares %v..%v do not cover the total", tc.total, tc.n, tc.split, los, his)
		}
	}
}
