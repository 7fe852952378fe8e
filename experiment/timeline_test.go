package experiment

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestTimelineOrder fires actions by time and by condition and checks the
// order and the moments they fired.
func TestTimelineOrder(t *testing.T) {
	acts := []Action{
		{At: Duration(150 * time.Millisecond), Do: "mark", Note: "at"},
		{When: "baseline", Sets: 2, Do: "mark", Note: "two sets after baseline"},
		{When: "start", Do: "mark", Note: "start"},
		{When: "settled", After: Duration(50 * time.Millisecond), Do: "mark", Note: "after settled"},
	}
	var mu sync.Mutex
	var got []string
	var at []time.Duration
	start := time.Now()
	tl := NewTimeline(acts, func(_ context.Context, a Action) error {
		mu.Lock()
		got = append(got, a.Note)
		at = append(at, time.Since(start))
		mu.Unlock()
		return nil
	})
	tl.Signal("start")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- tl.Run(ctx, start) }()
	time.Sleep(20 * time.Millisecond)
	tl.Signal("baseline")
	tl.SetDone() // one set after baseline: not yet
	time.Sleep(200 * time.Millisecond)
	tl.SetDone() // the second: fires
	tl.Signal("settled")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"start", "at", "two sets after baseline", "after settled"}
	if len(got) != len(want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fired %v, want %v", got, want)
		}
	}
	if at[1] < 150*time.Millisecond {
		t.Errorf("'at 150ms' fired at %v", at[1])
	}
	if at[2] < 220*time.Millisecond {
		t.Errorf("the sets trigger fired at %v, before the second set", at[2])
	}
	if at[3]-at[2] < 50*time.Millisecond {
		t.Errorf("'after settled + 50ms' fired %v after settled", at[3]-at[2])
	}
	if tl.Pending() {
		t.Error("Pending after every action fired")
	}
}

func TestTimelineStopsOnErrorAndCancel(t *testing.T) {
	boom := errors.New("boom")
	tl := NewTimeline([]Action{{When: "start", Do: "kill", Count: 1}, {When: "start", Do: "mark"}}, func(context.Context, Action) error { return boom })
	tl.Signal("start")
	if err := tl.Run(context.Background(), time.Now()); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the action's error", err)
	}
	// A condition that never comes: Run returns when ctx ends.
	tl = NewTimeline([]Action{{When: "stable", Do: "mark"}}, func(context.Context, Action) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := tl.Run(ctx, time.Now()); err != nil || !tl.Pending() {
		t.Fatalf("Run = %v, Pending = %v", err, tl.Pending())
	}
}
