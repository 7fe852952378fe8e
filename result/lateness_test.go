package result_test

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// encoded is the encoded histogram of values (µs), as interval's.
func encoded(t *testing.T, values ...int64) string {
	t.Helper()
	return interval(t, 0, false, values...).Ops["get"].Hist
}

// TestScheduleLateness: the summary's lateness merges the measured
// intervals' (warm-up and drain left out, as for the operations), and the
// warning fires past the bound: over the floor and over a tenth of the
// fastest operation's p99.
func TestScheduleLateness(t *testing.T) {
	t.Parallel()
	op := func(us ...int64) result.OpInterval {
		return result.OpInterval{Count: int64(len(us)), Hist: encoded(t, us...)}
	}
	for _, tc := range []struct {
		name      string
		late      []int64 // the measured second's latenesses (µs)
		opUS      int64   // the operation's latency (µs)
		wantCount int64
		wantLate  bool
	}{
		{"closed loop", nil, 100, 0, false},
		{"precise", []int64{5, 8, 12, 15}, 100, 4, false},
		{"under the floor", []int64{90, 95}, 100, 2, false},
		{"over the floor, fast operation", []int64{150, 160}, 200, 2, true},
		{"over the floor, slow operation", []int64{500, 600}, 20_000, 2, false},
		{"a tenth of a slow operation", []int64{3_000, 3_000}, 20_000, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &result.Run{Header: result.Header{Operations: []string{"read"}}}
			warm := result.Interval{Start: 0, End: 1, Warmup: true, Ops: map[string]result.OpInterval{"read": op(tc.opUS)}, Lateness: encoded(t, 50_000)}
			measured := result.Interval{Start: 1, End: 2, Ops: map[string]result.OpInterval{"read": op(tc.opUS)}}
			drain := result.Interval{Start: 2, End: 3, Drain: true, Ops: map[string]result.OpInterval{"read": op(tc.opUS)}, Lateness: encoded(t, 50_000)}
			if tc.late != nil {
				measured.Lateness = encoded(t, tc.late...)
			}
			r.Intervals = []result.Interval{warm, measured, drain}
			s, err := r.Summarize()
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCount == 0 {
				if s.Schedule != nil {
					t.Fatalf("closed loop: schedule %+v", *s.Schedule)
				}
				return
			}
			l := s.Schedule
			if l == nil || l.Count != tc.wantCount || l.MaxUS >= 50_000 {
				t.Fatalf("schedule %+v: want %d latenesses of the measured second alone", l, tc.wantCount)
			}
			if l.Late != tc.wantLate || (s.LatenessWarning() != "") != tc.wantLate {
				t.Fatalf("late %v, warning %q; want late %v", l.Late, s.LatenessWarning(), tc.wantLate)
			}
			if tc.wantLate && !strings.Contains(s.LatenessWarning(), "intended start") {
				t.Fatalf("warning %q does not say what is late", s.LatenessWarning())
			}
		})
	}
}
