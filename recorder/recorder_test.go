package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
)

func TestPow2Buckets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int
		label string
	}{
		{0, "0"}, {1, "1"}, {2, "2-3"}, {3, "2-3"}, {4, "4-7"}, {7, "4-7"}, {8, "8-15"}, {100, "64-127"}, {-3, "0"},
	} {
		if got := recorder.Pow2Label(recorder.Pow2Bucket(tc.n)); got != tc.label {
			t.Errorf("n=%d: label %q, want %q", tc.n, got, tc.label)
		}
	}
}

func TestTickMergesAndResetsHandles(t *testing.T) {
	t.Parallel()
	start := time.Now()
	rec := recorder.New([]string{"a", "b"}, start)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		h := rec.Handle()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 1000; i++ {
				h.Record(0, time.Duration(i)*time.Microsecond)
				h.RecordGroup(1, 5, time.Millisecond)
			}
			h.Error(0, context.DeadlineExceeded)
		}()
	}
	wg.Wait()
	s := rec.Tick(start.Add(time.Second))
	if got := s.Hists[0].TotalCount(); got != 8000 {
		t.Fatalf("a: %d recorded, want 8000", got)
	}
	if got := s.Hists[0].ValueAtQuantile(50); got < 495 || got > 505 {
		t.Fatalf("a: p50 %dµs, want ~500", got)
	}
	if got := s.Errors[0]["timeout"]; got != 8 {
		t.Fatalf("timeouts %d, want 8", got)
	}
	if got := s.Groups[1][recorder.Pow2Bucket(5)].TotalCount(); got != 8000 {
		t.Fatalf("group 4-7: %d, want 8000", got)
	}
	// Handles were reset: the next interval is empty.
	s2 := rec.Tick(start.Add(2 * time.Second))
	if s2.Hists[0].TotalCount() != 0 || len(s2.Errors[0]) != 0 || len(s2.Groups[1]) != 0 {
		t.Fatal("second tick not empty: handles were not reset")
	}
	if s2.Start != time.Second || s2.End != 2*time.Second {
		t.Fatalf("interval bounds %s..%s", s2.Start, s2.End)
	}
	iv, err := rec.Interval(s, false)
	if err != nil {
		t.Fatal(err)
	}
	h, err := result.DecodeHist(iv.Ops["a"].Hist)
	if err != nil || h.TotalCount() != 8000 || iv.Ops["a"].Count != 8000 {
		t.Fatalf("encoded interval: %v, count %d", err, iv.Ops["a"].Count)
	}
	if _, ok := iv.Groups["b"]["4-7"]; !ok {
		t.Fatalf("groups %v", iv.Groups)
	}
}

func TestRecordClampsOutOfRange(t *testing.T) {
	t.Parallel()
	rec := recorder.New([]string{"a"}, time.Now())
	h := rec.Handle()
	h.Record(0, 0)
	h.Record(0, 2*time.Hour)
	s := rec.Tick(time.Now())
	if s.Hists[0].TotalCount() != 2 || s.Hists[0].Max() < 59_000_000 {
		t.Fatalf("count %d max %d: out-of-range values must be clamped, not dropped", s.Hists[0].TotalCount(), s.Hists[0].Max())
	}
}

func TestErrorKindsAreBounded(t *testing.T) {
	t.Parallel()
	rec := recorder.New([]string{"a"}, time.Now())
	h := rec.Handle()
	for i := 0; i < 100; i++ {
		// Kinds differ by letters (numbers are folded into N).
		h.Error(0, fmt.Errorf("row %c%c not found", 'a'+i%26, 'a'+i/26))
	}
	s := rec.Tick(time.Now())
	var n int64
	for _, c := range s.Errors[0] {
		n += c
	}
	if len(s.Errors[0]) > 33 || n != 100 || s.Errors[0]["other"] == 0 {
		t.Fatalf("%d kinds, %d errors: kinds must be capped and none lost", len(s.Errors[0]), n)
	}
}

type kinded struct{}

func (kinded) Error() string { return "x" }
func (kinded) Kind() string  { return "unavailable" }

func TestKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("query: %w", syscall.ECONNREFUSED), "connection refused"},
		{fmt.Errorf("wrapped: %w", kinded{}), "unavailable"},
		{errors.New("database is locked\nmore"), "database is locked"},
		{errors.New("post tweet 3606: MOVED 9648 127.0.0.1:34555"), "post tweet N: MOVED N N.N.N.N:N"},
	} {
		if got := recorder.Kind(tc.err); got != tc.want {
			t.Errorf("Kind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
