package job

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
)

// fixedReconn is a Reconnector whose Down is set by the test.
type fixedReconn struct{ down bool }

func (f fixedReconn) Reconnects() adapter.BackoffStats { return adapter.BackoffStats{Down: f.down} }

// The database is down when the last second only failed, or when the
// adapter's backoff says a dial just failed.
func TestOutageSample(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		reconn     adapter.Reconnector
		ok, failed int64
		want       bool
	}{
		{"served", nil, 10, 0, false},
		{"some errors among successes", nil, 10, 3, false},
		{"only errors", nil, 0, 3, true},
		{"nothing finished, no backoff", nil, 0, 0, false},
		{"nothing finished, dials failing", fixedReconn{down: true}, 0, 0, true},
		{"served, every dial failing since", fixedReconn{down: true}, 10, 0, true},
		{"served, dials fine", fixedReconn{}, 10, 0, false},
	} {
		o := &outage{reconn: c.reconn}
		if got := o.sample(c.ok, c.failed); got != c.want || o.down.Load() != c.want {
			t.Errorf("%s: down %v (stored %v), want %v", c.name, got, o.down.Load(), c.want)
		}
	}
	// Down lasts until a success: a second with nothing finished (clients
	// waiting on dials) does not end it; a served second does.
	o := &outage{}
	for i, step := range []struct {
		ok, failed int64
		want       bool
	}{{0, 0, false}, {0, 4, true}, {0, 0, true}, {0, 2, true}, {5, 0, false}, {0, 0, false}} {
		if got := o.sample(step.ok, step.failed); got != step.want {
			t.Errorf("second %d (%d ok, %d failed): down %v, want %v", i+1, step.ok, step.failed, got, step.want)
		}
	}
	var none *outage
	if none.sample(0, 5) {
		t.Error("a nil outage is down")
	}
}

// worker runs do as its operation.
type worker struct {
	do func(ctx context.Context) error
}

func (w worker) Next() int { return 0 }
func (w worker) Do(ctx context.Context, op int) (int, error) {
	return -1, w.do(ctx)
}

// While the database is down an operation is bounded, a failure is spaced
// and an operation cut by the bound is "unavailable"; while it is up the
// operation runs as it is (no deadline). Before, an operation waited as
// long as its driver and the backoff held it (issue 31). Verdicts are
// lower bounds on time (a wait that must happen) or errors, never a
// speed.
func TestGuardBoundsOperationsWhileDown(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	fail := func(context.Context) error { return errors.New("connection refused") }
	succeed := func(context.Context) error { return nil }
	// A driver that sees the deadline itself and says "i/o timeout".
	ownTimeout := func(ctx context.Context) error {
		d, _ := ctx.Deadline()
		time.Sleep(time.Until(d))
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	}
	noDeadline := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); ok {
			return errors.New("deadline set while the database is up")
		}
		return nil
	}
	for _, c := range []struct {
		name     string
		down     bool
		do       func(context.Context) error
		kind     string        // recorder.Kind of the error ("none": no error)
		atLeast  time.Duration // the least the operation takes
		parentUp bool
	}{
		{"up: untouched", false, noDeadline, "none", 0, true},
		{"down: success returns at once", true, succeed, "none", 0, true},
		{"down: a hanging operation is cut", true, hang, "unavailable", adapter.OutageBound, true},
		{"down: a failure is spaced", true, fail, "connection refused", adapter.OutageSpacing, true},
		{"down: a driver's own timeout at the bound", true, ownTimeout, "unavailable", adapter.OutageBound, true},
		{"down: interrupted, not unavailable", true, hang, "canceled", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := &outage{}
			o.down.Store(c.down)
			w := o.guard([]runner.Worker{worker{do: c.do}})[0]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if !c.parentUp {
				go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			}
			start := time.Now()
			_, err := w.Do(ctx, 0)
			took := time.Since(start)
			if got := recorder.Kind(err); got != c.kind {
				t.Errorf("error %v: kind %q, want %q", err, got, c.kind)
			}
			if took < c.atLeast {
				t.Errorf("took %v, want at least %v", took, c.atLeast)
			}
			// Wide margin: the bound plus 10 s on a loaded machine.
			if limit := adapter.OutageBound + 10*time.Second; took > limit {
				t.Errorf("took %v, more than %v", took, limit)
			}
		})
	}
}

// snapshot is one second of a run with ok successes and failed errors.
func snapshot(t *testing.T, sec int, ok, failed int64) recorder.Snapshot {
	t.Helper()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for range ok {
		if err := h.RecordValue(500); err != nil {
			t.Fatal(err)
		}
	}
	errs := map[string]int64{}
	if failed > 0 {
		errs["connection refused"] = failed
	}
	return recorder.Snapshot{Start: time.Duration(sec-1) * time.Second, End: time.Duration(sec) * time.Second,
		Hists: []*hdrhistogram.Histogram{h}, Errors: []map[string]int64{errs}}
}

// Off a terminal a line is printed every 10 s, but every second of an
// outage is printed and says the database is unreachable, and so is the
// first second after it. Before, a stopped server's run printed nothing
// between 1 s and 10 s (issue 31).
func TestProgressPrintsEveryOutageSecond(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newProgress(&out, 20*time.Second, []string{"get"})
	seconds := []struct {
		ok, failed int64
		down       bool
		printed    bool
		unreach    bool
	}{
		{100, 0, false, true, false}, // 1 s: the first line
		{100, 0, false, false, false},
		{0, 4, true, true, true},
		{0, 0, true, true, true}, // nothing finished, dials failing
		{0, 4, true, true, true},
		{100, 0, false, true, false}, // back: shown once
		{100, 0, false, false, false},
	}
	for i, s := range seconds {
		out.Reset()
		p.update(snapshot(t, i+1, s.ok, s.failed), s.down)
		line := out.String()
		if printed := line != ""; printed != s.printed {
			t.Errorf("second %d: printed %v (%q), want %v", i+1, printed, line, s.printed)
		}
		if got := strings.Contains(line, "UNREACHABLE"); got != s.unreach {
			t.Errorf("second %d: %q says unreachable %v, want %v", i+1, line, got, s.unreach)
		}
	}
}

// intendedWorker counts the intended starts it is told of.
type intendedWorker struct{ told atomic.Int64 }

func (*intendedWorker) Next() int                            { return 0 }
func (*intendedWorker) Do(context.Context, int) (int, error) { return -1, nil }
func (w *intendedWorker) Intended(time.Time)                 { w.told.Add(1) }

// TestGuardKeepsScheduled: the outage guard wraps the workers of every
// loop (timed runs, request sets, trajectory phases) and must not hide a
// worker's own figures from an open loop: runner.Shares tells the guarded
// worker each intended start, and the guard passes it on.
func TestGuardKeepsScheduled(t *testing.T) {
	t.Parallel()
	w := &intendedWorker{}
	ws := (&outage{}).guard([]runner.Worker{w})
	rec := recorder.New([]string{"op"}, time.Now())
	if _, stopped := runner.Shares(context.Background(), ws, []*recorder.Handle{rec.Handle()}, []int64{5}, 1000); stopped {
		t.Fatal("not interrupted, Shares says so")
	}
	if n := w.told.Load(); n != 5 {
		t.Fatalf("the worker was told %d intended starts of 5", n)
	}
}
