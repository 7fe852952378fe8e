package result

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Lateness summarises how late an open-loop run's operations started
// against their intended start over the measured run (warm-up and drain
// excluded): the load generator's own error, which every latency measured
// from the intended start contains.
type Lateness struct {
	Count  int64 `json:"count"`
	P50US  int64 `json:"p50_us"`
	P99US  int64 `json:"p99_us"`
	P999US int64 `json:"p999_us"`
	MaxUS  int64 `json:"max_us"`
	// Late: the p99 passed the bound (see LatenessBound): the generator,
	// not only the database, is in the reported latencies.
	Late bool `json:"late,omitempty"`
}

// LatenessFloorUS and LatenessShare make the bound past which a run is
// warned of its own lateness: a p99 over 100 µs that is also over a tenth
// of the fastest operation's p99 latency. Why relative: 300 µs of lateness
// is noise beside a 20 ms query and most of a 100 µs key lookup's tail.
// Why a floor: on a harness-only run (null://, operations of 1 µs) or the
// fastest in-memory stores, a few tens of microseconds of timer wake-up is
// the best any user-space generator does (wrk2 and the kernel's timers
// alike), not a fault to warn of.
const (
	LatenessFloorUS = 100
	LatenessShare   = 0.10
)

// LatenessBound is the p99 lateness (µs) past which a run whose fastest
// operation has p99 latency fastestP99 (µs, 0 when none) is warned.
func LatenessBound(fastestP99 int64) int64 {
	return max(LatenessFloorUS, int64(LatenessShare*float64(fastestP99)))
}

// ScheduleLateness merges the intervals' lateness histograms (warm-up and
// drain excluded); nil when the run recorded none (closed loop, or a file
// written before lateness was recorded).
func (r *Run) ScheduleLateness() (*Lateness, error) {
	var h *hdrhistogram.Histogram
	for _, iv := range r.Intervals {
		if iv.Warmup || iv.Drain || iv.Lateness == "" {
			continue
		}
		d, err := DecodeHist(iv.Lateness)
		if err != nil {
			return nil, fmt.Errorf("interval at %.0fs, schedule lateness: %w", iv.Start, err)
		}
		if h == nil {
			h = NewHist()
		}
		h.Merge(d)
	}
	if h == nil || h.TotalCount() == 0 {
		return nil, nil
	}
	return &Lateness{Count: h.TotalCount(), P50US: h.ValueAtQuantile(50), P99US: h.ValueAtQuantile(99),
		P999US: h.ValueAtQuantile(99.9), MaxUS: h.Max()}, nil
}

// judge sets l.Late against the bound for s's fastest operation.
func (l *Lateness) judge(s Summary) {
	var fastest int64
	for _, o := range s.Ops {
		if o.Count > 0 && (fastest == 0 || o.P99US < fastest) {
			fastest = o.P99US
		}
	}
	l.Late = l.P99US > LatenessBound(fastest)
}

// LatenessWarning is the line to print when the schedule was late ("" otherwise).
func (s Summary) LatenessWarning() string {
	l := s.Schedule
	if l == nil || !l.Late {
		return ""
	}
	return fmt.Sprintf("warning: operations started %s after their intended start (p99): the load generator's own lateness is in these latencies (bound: over %dµs and over %.0f %% of the fastest operation's p99); use fewer clients or a lower rate per process (above 10,000 operations/s a process starts them on a 200µs grain: split the rate over --shard processes), or more CPUs",
		time.Duration(l.P99US)*time.Microsecond, LatenessFloorUS, 100*LatenessShare)
}
