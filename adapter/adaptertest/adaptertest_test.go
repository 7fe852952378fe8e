package adaptertest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// recordingT is a testing.TB whose failures and skips are recorded instead
// of reported, so a test can check that a check fails. FailNow and SkipNow
// end the calling goroutine, as testing.T's do; capture runs the check on
// its own goroutine for that. Everything else (Context, Cleanup, TempDir)
// is the real test's.
type recordingT struct {
	testing.TB
	mu              sync.Mutex
	failed, skipped bool
	logs            []string
}

func (r *recordingT) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, strings.TrimSuffix(s, "\n"))
}

func (r *recordingT) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recordingT) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recordingT) FailNow()                       { r.Fail(); runtime.Goexit() }
func (r *recordingT) Error(args ...any)              { r.record(fmt.Sprintln(args...)); r.Fail() }
func (r *recordingT) Errorf(format string, a ...any) { r.record(fmt.Sprintf(format, a...)); r.Fail() }
func (r *recordingT) Fatal(args ...any)              { r.record(fmt.Sprintln(args...)); r.FailNow() }
func (r *recordingT) Fatalf(format string, a ...any) {
	r.record(fmt.Sprintf(format, a...))
	r.FailNow()
}
func (r *recordingT) Log(args ...any)               { r.record(fmt.Sprintln(args...)) }
func (r *recordingT) Logf(format string, a ...any)  { r.record(fmt.Sprintf(format, a...)) }
func (r *recordingT) Skip(args ...any)              { r.record(fmt.Sprintln(args...)); r.SkipNow() }
func (r *recordingT) Skipf(format string, a ...any) { r.record(fmt.Sprintf(format, a...)); r.SkipNow() }
func (r *recordingT) Helper()                       {}
func (r *recordingT) Skipped() bool                 { r.mu.Lock(); defer r.mu.Unlock(); return r.skipped }
func (r *recordingT) SkipNow()                      { r.mu.Lock(); r.skipped = true; r.mu.Unlock(); runtime.Goexit() }
func (r *recordingT) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}
func (r *recordingT) matches(substr string) bool { return strings.Contains(r.output(), substr) }
func (r *recordingT) String() string {
	return fmt.Sprintf("failed %v skipped %v:\n%s", r.failed, r.skipped, r.output())
}

// capture runs check with a recordingT on its own goroutine and returns
// what it recorded.
func capture(t *testing.T, check func(t testing.TB)) *recordingT {
	r := &recordingT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r
}

// TestCorrectFakePasses runs the whole suite against the in-memory fake: it
// is correct by construction, so every check must pass.
func TestCorrectFakePasses(t *testing.T) {
	t.Parallel()
	Run(t, func(t *testing.T) adapter.DB { return newFakeDB("") })
}

// TestRunParallelSideBySide: RunParallel passes the correct fake as Run
// does, and its families' checks run side by side — each family's open
// waits (up to 30 s) until another family has opened, which families run
// one after the other never do.
func TestRunParallelSideBySide(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	opened := 0
	second := make(chan struct{})
	RunParallel(t, func(t *testing.T) adapter.DB {
		mu.Lock()
		opened++
		if opened == 3 { // the probe, then two families
			close(second)
		}
		first := opened == 1
		mu.Unlock()
		if !first {
			select {
			case <-second:
			case <-time.After(30 * time.Second):
				t.Error("no other family opened within 30 s: the families ran one after the other")
			}
		}
		return newFakeDB("")
	})
}

// TestBrokenStoresAreCaught runs each family's check against the fake with
// one deliberate defect and requires the check to fail for that reason.
func TestBrokenStoresAreCaught(t *testing.T) {
	t.Parallel()
	mb := func(m microblog.Model) func(t testing.TB, db adapter.DB) {
		return func(t testing.TB, db adapter.DB) { checkMicroblog(t, db, m) }
	}
	for _, tc := range []struct {
		bug   string
		check func(t testing.TB, db adapter.DB)
		want  string // in the recorded messages
	}{
		{"timeline-drops-last", mb(microblog.Denormalized), "Timeline("},
		{"ties-by-insertion", mb(microblog.Normalized), "Userline("},
		{"lazy-materializer", mb(microblog.Async), "materializer never reported posted tweet"},
		{"counts-follows", mb(microblog.Denormalized), "Counts after Populate"},
		{"wiki-lost-update", checkWiki, "appends"},
		{"wiki-reset-noop", checkWiki, "after Reset"},
		{"ingest-drops-record", checkIngest, "Count = "},
		{"ingest-reset-noop", checkIngest, "Count after Reset"},
		{"traj-knn-short", checkTrajectory, "knn("},
		{"traj-range-open", checkTrajectory, "range("},
		{"traj-reset-noop", checkTrajectory, "after Reset"},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			t.Parallel()
			r := capture(t, func(rt testing.TB) { tc.check(rt, newFakeDB(tc.bug)) })
			t.Logf("recorded: %.300s", r.output())
			if !r.Failed() || r.Skipped() || !r.matches(tc.want) {
				t.Errorf("bug %q: want a failure mentioning %q; the check recorded %s", tc.bug, tc.want, r)
			}
		})
	}
}

// TestUnsupportedModelSkips checks that a model whose Microblog call wraps
// adapter.ErrUnsupported is skipped, not failed.
func TestUnsupportedModelSkips(t *testing.T) {
	t.Parallel()
	db := newFakeDB("")
	db.models = []microblog.Model{microblog.Denormalized}
	r := capture(t, func(rt testing.TB) { checkMicroblog(rt, db, microblog.Async) })
	if r.Failed() || !r.Skipped() || !r.matches("not supported") {
		t.Errorf("unsupported model: %s", r)
	}
}

// ingestOnly implements one family: Run must skip the other three.
type ingestOnly struct{ db *fakeDB }

func (d ingestOnly) Info(ctx context.Context) (adapter.Info, error) { return d.db.Info(ctx) }
func (d ingestOnly) Close() error                                   { return nil }
func (d ingestOnly) Ingest(ctx context.Context) (ingest.Store, error) {
	return d.db.Ingest(ctx)
}

func TestMissingFamiliesSkip(t *testing.T) {
	t.Parallel()
	opened := 0
	Run(t, func(t *testing.T) adapter.DB { opened++; return ingestOnly{newFakeDB("")} })
	if opened != 2 { // the probe and ingest
		t.Errorf("open called %d times, want 2", opened)
	}
}
