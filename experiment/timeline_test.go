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

// TestTimelineUnfinished: every way an action can fail to finish is
// listed, and a timeline whose actions all returned is finished.
func TestTimelineUnfinished(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, Action) error { return nil }
	// Cut short: the action waits for the load, which ends.
	waits := func(ctx context.Context, _ Action) error { <-ctx.Done(); return ctx.Err() }
	boom := errors.New("boom")
	tests := []struct {
		name    string
		actions []Action
		do      func(context.Context, Action) error
		signal  bool
		want    []string // substrings of the listed actions, in order; nil: finished
	}{
		{"all done", []Action{{When: "start", Do: "mark"}}, ok, true, nil},
		{"never fired", []Action{{When: "start", Do: "mark"}, {When: "stable", Do: "add", Count: 2}}, ok, true,
			[]string{"add 2 node(s) when stable: never fired"}},
		{"cut short", []Action{{When: "start", Do: "add", Count: 1}}, waits, true,
			[]string{"add 1 node(s) when start: cut short when the load ended"}},
		{"failed on its own is Run's error, not listed", []Action{{When: "start", Do: "kill", Count: 1}}, func(context.Context, Action) error { return boom }, true, nil},
		{"nothing signalled", []Action{{When: "start", Do: "mark"}}, ok, false, []string{"mark when start: never fired"}},
	}
	for _, tc := range tests {
		tl := NewTimeline(tc.actions, tc.do)
		if tc.signal {
			tl.Signal("start")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		_ = tl.Run(ctx, time.Now())
		cancel()
		err := tl.Unfinished()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: Unfinished = %v, want nil", tc.name, err)
			}
			continue
		}
		var ue *UnfinishedError
		if !errors.Is(err, ErrUnfinished) || !errors.As(err, &ue) || len(ue.Actions) != len(tc.want) {
			t.Errorf("%s: Unfinished = %v, want %q", tc.name, err, tc.want)
			continue
		}
		for i, w := range tc.want {
			if ue.Actions[i] != w {
				t.Errorf("%s: action %d = %q, want %q", tc.name, i, ue.Actions[i], w)
			}
		}
	}
}

// TestDescribe: the dry run's line for an action names what it does to
// whom, including a network fault's other side, rate, delay and loss.
func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		a    Action
		want string
	}{
		{Action{Do: "kill", Nodes: []string{"cass2"}, At: Duration(30 * time.Second)}, "kill [cass2] at 30s"},
		{Action{Do: "add", Count: 2, When: "baseline", After: Duration(10 * time.Second)}, "add 2 node(s) when baseline + 10s"},
		{Action{Do: "limit", Nodes: []string{"cass1", "load1"}, From: []string{"cass2"}, Rate: "2mbit", At: Duration(30 * time.Second)},
			"limit [cass1 load1] from [cass2] to 2mbit at 30s"},
		{Action{Do: "limit", Nodes: []string{"cass1"}, From: []string{"cass2"}, Rate: "2mbit", Link: LinkShared, At: Duration(30 * time.Second)},
			"limit [cass1] from [cass2] to 2mbit over one shared link at 30s"},
		{Action{Do: "delay", Nodes: []string{"redis1"}, Delay: Duration(150 * time.Millisecond), At: Duration(time.Second)}, "delay [redis1] by 150ms at 1s"},
		{Action{Do: "loss", Nodes: []string{"redis1"}, Loss: "5%", At: Duration(time.Second)}, "loss [redis1] losing 5% at 1s"},
	} {
		if got := Describe(tt.a); got != tt.want {
			t.Errorf("Describe(%+v) = %q, want %q", tt.a, got, tt.want)
		}
	}
}
