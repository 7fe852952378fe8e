package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

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
		{errors.New("hbase: get mb_follows/3a: 503 Unavailable\r\n\r\nRetriesExhausted"), "hbase: get mb_follows/Na: N Unavailable"},
		{errors.New("post tweet 3606: MOVED 9648 127.0.0.1:34555"), "post tweet N: MOVED N N.N.N.N:N"},
	} {
		if got := recorder.Kind(tc.err); got != tc.want {
			t.Errorf("Kind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestKindKeepsTheWholeReason: a long driver error keeps its cause (the part
// after the wrapping), numbers still folded; only a message over the bound
// is cut, at a word boundary, and stays valid UTF-8.
func TestKindKeepsTheWholeReason(t *testing.T) {
	t.Parallel()
	pg := errors.New("post tweet 3606: insert into timelines for 120 followers: ERROR: could not serialize access due to read/write dependencies among transactions (SQLSTATE 40001)")
	long := errors.New(strings.Repeat("wörd ", 100))
	for _, tc := range []struct {
		name string
		err  error
		want func(string) bool
	}{
		{"postgres cause kept", pg, func(k string) bool {
			return k == "post tweet N: insert into timelines for N followers: ERROR: could not serialize access due to read/write dependencies among transactions (SQLSTATE N)"
		}},
		{"cut at a word", long, func(k string) bool {
			return len(k) <= 300 && strings.HasSuffix(k, "wörd…") && utf8.ValidString(k) && len(k) > 150
		}},
		{"no space: cut at a character", errors.New(strings.Repeat("é", 400)), func(k string) bool {
			return len(k) <= 300 && utf8.ValidString(k) && strings.HasSuffix(k, "é…")
		}},
	} {
		if got := recorder.Kind(tc.err); !tc.want(got) {
			t.Errorf("%s: Kind = %q (%d bytes)", tc.name, got, len(got))
		}
	}
}

// TestShardsAreBounded: asking for a handle per client does not grow the
// recording state past the recorder's bound.
func TestShardsAreBounded(t *testing.T) {
	t.Parallel()
	rec := recorder.NewSharded([]string{"a"}, time.Now(), 8)
	seen := map[*recorder.Handle]int{}
	for range 10_000 {
		seen[rec.Handle()]++
	}
	if rec.Shards() != 8 || len(seen) != 8 {
		t.Fatalf("%d shards, %d distinct handles for 10,000 clients: want 8", rec.Shards(), len(seen))
	}
	for h, n := range seen {
		if n != 1250 {
			t.Fatalf("shard %p serves %d clients, want 1250 (round robin)", h, n)
		}
	}
	if got := recorder.New([]string{"a"}, time.Now()); got.Shards() != 0 {
		t.Fatalf("a new recorder holds %d shards before any handle", got.Shards())
	}
}

// TestSharedShardsEqualPerClientRecording records the same values, errors
// and groups from 300 clients (a) into one recorder with 4 shared shards and
// (b) into one recorder per client (today's one-histogram-per-client, merged
// the way Tick merges), and checks that histograms (every bucket), counts,
// groups and error kinds are identical, then that the encoded intervals
// decode to the same histograms.
func TestSharedShardsEqualPerClientRecording(t *testing.T) {
	t.Parallel()
	const clients = 300
	ops := []string{"read", "post"}
	start := time.Now()
	shared := recorder.NewSharded(ops, start, 4)
	own := make([]*recorder.Recorder, clients)
	var wg sync.WaitGroup
	for c := range clients {
		own[c] = recorder.NewSharded(ops, start, 1)
		hs, ho := shared.Handle(), own[c].Handle()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for range 500 {
				d := time.Duration(rng.ExpFloat64()*float64(2*time.Millisecond)) + time.Duration(rng.IntN(3))*time.Hour/1000
				switch rng.IntN(10) {
				case 0:
					err := fmt.Errorf("row %d: %w", rng.IntN(1000), [...]error{context.DeadlineExceeded, errors.New("conflict"), syscall.ECONNRESET}[rng.IntN(3)])
					hs.Error(0, err)
					ho.Error(0, err)
				case 1, 2, 3:
					n := rng.IntN(5000)
					hs.RecordGroup(1, n, d)
					ho.RecordGroup(1, n, d)
				default:
					hs.Record(0, d)
					ho.Record(0, d)
				}
			}
		}()
	}
	wg.Wait()
	now := start.Add(time.Second)
	got := shared.Tick(now)
	want := recorder.Snapshot{
		Hists:  []*hdrhistogram.Histogram{result.NewHist(), result.NewHist()},
		Errors: []map[string]int64{{}, {}},
		Groups: []map[int]*hdrhistogram.Histogram{nil, {}},
	}
	for _, r := range own {
		s := r.Tick(now)
		for i := range ops {
			want.Hists[i].Merge(s.Hists[i])
			for k, n := range s.Errors[i] {
				want.Errors[i][k] += n
			}
			for b, g := range s.Groups[i] {
				if want.Groups[i][b] == nil {
					want.Groups[i][b] = result.NewHist()
				}
				want.Groups[i][b].Merge(g)
			}
		}
	}
	for i, op := range ops {
		if !sameHist(got.Hists[i], want.Hists[i]) {
			t.Errorf("%s: shared histogram differs from the per-client merge (counts %d vs %d)", op, got.Hists[i].TotalCount(), want.Hists[i].TotalCount())
		}
		if !reflect.DeepEqual(got.Errors[i], want.Errors[i]) {
			t.Errorf("%s: errors %v, per-client %v", op, got.Errors[i], want.Errors[i])
		}
		if len(got.Groups[i]) != len(want.Groups[i]) {
			t.Errorf("%s: %d groups, per-client %d", op, len(got.Groups[i]), len(want.Groups[i]))
		}
		for b, g := range want.Groups[i] {
			if !sameHist(got.Groups[i][b], g) {
				t.Errorf("%s group %s differs", op, recorder.Pow2Label(b))
			}
		}
	}
	if got.Hists[0].TotalCount() == 0 || got.Hists[1].TotalCount() == 0 || len(got.Errors[0]) != 3 || len(got.Groups[1]) < 5 {
		t.Fatalf("the test recorded too little to compare: %d, %d, errors %v, %d groups",
			got.Hists[0].TotalCount(), got.Hists[1].TotalCount(), got.Errors[0], len(got.Groups[1]))
	}
	iv, err := shared.Interval(got, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		h, err := result.DecodeHist(iv.Ops[op].Hist)
		if err != nil || !sameHist(h, want.Hists[i]) || iv.Ops[op].Count != want.Hists[i].TotalCount() {
			t.Errorf("%s: encoded interval differs from the per-client merge (%v)", op, err)
		}
	}
}

// sameHist compares two histograms bucket by bucket.
func sameHist(a, b *hdrhistogram.Histogram) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.TotalCount() == b.TotalCount() && reflect.DeepEqual(a.Export().Counts, b.Export().Counts)
}
