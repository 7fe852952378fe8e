package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Timeline fires a scenario's actions: each once, in file order among those
// due, when its time has come or its condition has happened (plus its delay
// and request sets). The load runs on its own; the timeline only watches the
// clock and the signals the CLI sends it (conditions, request sets done).
type Timeline struct {
	actions []Action
	do      func(ctx context.Context, a Action) error
	start   time.Time

	mu    sync.Mutex
	fired []bool
	state []actionState
	conds map[string]condMark
	sets  int
	wake  chan struct{}
}

// actionState is how far one action got.
type actionState int

const (
	statePending actionState = iota // not fired yet
	stateRunning                    // fired, not returned
	stateDone                       // returned nil
	stateFailed                     // returned an error on its own
	stateCut                        // returned an error after the load ended (cut short)
)

// ErrUnfinished is wrapped by the error Unfinished returns: some action of
// the timeline never fired or was cut short, so the experiment that ran is
// not the one the scenario asked for.
var ErrUnfinished = errors.New("timeline did not finish")

// UnfinishedError lists the actions that did not finish, in file order,
// described (Describe) with why.
type UnfinishedError struct {
	Actions []string
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("%v: %s", ErrUnfinished, strings.Join(e.Actions, "; "))
}

// Unwrap makes errors.Is(err, ErrUnfinished) hold.
func (e *UnfinishedError) Unwrap() error { return ErrUnfinished }

// condMark is when a condition happened and how many request sets had
// completed by then.
type condMark struct {
	at   time.Time
	sets int
}

// NewTimeline prepares actions; do performs one action (it may take long:
// adding a node does; the timeline waits for it before the next one).
func NewTimeline(actions []Action, do func(ctx context.Context, a Action) error) *Timeline {
	return &Timeline{
		actions: actions, do: do,
		fired: make([]bool, len(actions)),
		state: make([]actionState, len(actions)),
		conds: map[string]condMark{},
		wake:  make(chan struct{}, 1),
	}
}

// Signal records that a condition happened now (only its first time counts).
func (t *Timeline) Signal(cond string) {
	t.mu.Lock()
	if _, ok := t.conds[cond]; !ok {
		t.conds[cond] = condMark{at: time.Now(), sets: t.sets}
	}
	t.mu.Unlock()
	t.poke()
}

// Happened reports whether cond was signalled.
func (t *Timeline) Happened(cond string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.conds[cond]
	return ok
}

// SetDone counts one completed request set.
func (t *Timeline) SetDone() {
	t.mu.Lock()
	t.sets++
	t.mu.Unlock()
	t.poke()
}

func (t *Timeline) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Pending reports whether some action has not fired yet.
func (t *Timeline) Pending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.fired {
		if !f {
			return true
		}
	}
	return false
}

// Unfinished returns nil when every action fired and returned without
// error, or else an *UnfinishedError (wrapping ErrUnfinished) listing the
// actions that never fired (the load ended first), were cut short (the
// load ended while they ran) or are still running. An action that failed
// on its own is not listed: Run returned its error. Call it after Run has
// returned; the experiment should then end with a failure exit code
// (docs/experiments.md), its results kept.
func (t *Timeline) Unfinished() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for i, a := range t.actions {
		why := ""
		switch t.state[i] {
		case statePending:
			why = "never fired"
		case stateRunning:
			why = "still running"
		case stateCut:
			why = "cut short when the load ended"
		}
		if why != "" {
			out = append(out, Describe(a)+": "+why)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &UnfinishedError{Actions: out}
}

// Run fires actions until all have fired or ctx ends; start is the load's
// start (At is measured from it). The first failed action ends the run with
// its error: an experiment whose node failed to join is not the experiment
// that was asked for.
func (t *Timeline) Run(ctx context.Context, start time.Time) error {
	t.start = start
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for t.Pending() {
		if i, ok := t.due(time.Now()); ok {
			a := t.actions[i]
			err := t.do(ctx, a)
			t.mu.Lock()
			switch {
			case err == nil:
				t.state[i] = stateDone
			case ctx.Err() != nil:
				t.state[i] = stateCut
			default:
				t.state[i] = stateFailed
			}
			t.mu.Unlock()
			if err != nil {
				return fmt.Errorf("timeline: %s: %w", Describe(a), err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-t.wake:
		}
	}
	return nil
}

// due returns the first action (in file order) whose trigger holds now and
// marks it fired.
func (t *Timeline) due(now time.Time) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, a := range t.actions {
		if t.fired[i] {
			continue
		}
		ok := false
		switch {
		case a.When != "":
			if m, seen := t.conds[a.When]; seen {
				ok = now.Sub(m.at) >= a.After.D() && t.sets-m.sets >= a.Sets
			}
		case a.At > 0:
			ok = now.Sub(t.start) >= a.At.D()
		default: // a mark without a time fires at once
			ok = true
		}
		if ok {
			t.fired[i] = true
			t.state[i] = stateRunning
			return i, true
		}
	}
	return 0, false
}

// Describe is an action in words, for events and progress lines.
func Describe(a Action) string {
	what := a.Do
	switch {
	case len(a.Nodes) > 0:
		what += fmt.Sprintf(" %v", a.Nodes)
	case a.Count > 0:
		what += fmt.Sprintf(" %d node(s)", a.Count)
	}
	if len(a.From) > 0 {
		what += fmt.Sprintf(" from %v", a.From)
	}
	if a.Rate != "" {
		what += " to " + a.Rate
	}
	if a.Link == LinkShared {
		what += " over one shared link"
	}
	if a.Delay > 0 {
		what += fmt.Sprintf(" by %s", a.Delay.D())
	}
	if a.Loss != "" {
		what += " losing " + a.Loss
	}
	switch {
	case a.When != "":
		what += " when " + a.When
		if a.After > 0 {
			what += fmt.Sprintf(" + %s", a.After.D())
		}
		if a.Sets > 0 {
			what += fmt.Sprintf(" + %d request sets", a.Sets)
		}
	case a.At > 0:
		what += fmt.Sprintf(" at %s", a.At.D())
	}
	return what
}
