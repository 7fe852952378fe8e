package score

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// hist encodes count values of v µs each (v < 2048: HDR stores it exactly,
// so the histogram mean is exactly v).
func hist(t *testing.T, pairs ...int64) string {
	t.Helper()
	key := fmt.Sprint(pairs)
	histMu.Lock()
	defer histMu.Unlock()
	if s, ok := histCache[key]; ok {
		return s
	}
	h := result.NewHist()
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := h.RecordValues(pairs[i], pairs[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := result.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	histCache[key] = s
	return s
}

// Encoding a histogram takes milliseconds; the runs here reuse a handful.
var (
	histMu    sync.Mutex
	histCache = map[string]string{}
)

// writeJoinRun writes, with result.Create, the result file of a two-step
// scalability scenario whose first step has a join:
//
//	step 1 on 2 nodes: a warm-up set ending at 5 s, then sets ending at 10,
//	  20, …, 100 s with Y = 10 + 0.01·X, SD 0.5 (the hand-computed case of
//	  TestElasticityHandComputed); join (+2 nodes) then sets at 105, 110, …,
//	  160 s on 4 nodes, the same line; a failed set at 161 and a partial one
//	  at 162, which must be ignored;
//	step 2 on 4 nodes: a warm-up set at 195 (Y 40), sets at 200…220, Y 11.6.
//
// Per-second intervals: 0–5 s warm-up (50 ms); 5–102 s three reads of
// 1,000 µs and one update of 1,400 µs a second (mean 1,100 µs); 102–105 s
// one read of 2,000 µs; 105–160 s two reads of 1,200 µs; 160–225 s one
// read of 1,900 µs.
func writeJoinRun(t *testing.T, events []result.Event) *result.Run {
	t.Helper()
	dir := t.TempDir()
	w, err := result.Create(dir, result.Header{
		Version: "test", Workload: "wiki", Adapter: "cassandra", Operations: []string{"read", "update"},
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Series:  map[string]result.SeriesMeta{SeriesRequestSet: {Title: "request sets", XIsTime: true, Band: "sd"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for s := 0; s < 225; s++ {
		iv := result.Interval{Start: float64(s), End: float64(s + 1), Ops: map[string]result.OpInterval{}}
		switch {
		case s < 5:
			iv.Warmup = true
			iv.Ops["read"] = result.OpInterval{Count: 1, Hist: hist(t, 50000, 1)}
		case s < 102:
			iv.Ops["read"] = result.OpInterval{Count: 3, Hist: hist(t, 1000, 3)}
			iv.Ops["update"] = result.OpInterval{Count: 1, Hist: hist(t, 1400, 1)}
		case s < 105:
			iv.Ops["read"] = result.OpInterval{Count: 1, Hist: hist(t, 2000, 1)}
		case s < 160:
			iv.Ops["read"] = result.OpInterval{Count: 2, Hist: hist(t, 1200, 2)}
		default:
			iv.Ops["read"] = result.OpInterval{Count: 1, Hist: hist(t, 1900, 1)}
		}
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	set := 0
	point := func(x, y, sd float64, step, nodes string, warm bool) result.Point {
		set++
		return result.Point{Series: SeriesRequestSet, X: x, Y: y, SD: sd, N: 10, Warmup: warm,
			Labels: map[string]string{LabelSet: strconv.Itoa(set), LabelStep: step, LabelNodes: nodes}}
	}
	pts := []result.Point{point(5, 50, 1, "1", "2", true)}
	for _, x := range seq(10, 100, 10) {
		pts = append(pts, point(x, 10+0.01*x, 0.5, "1", "2", false))
	}
	for _, x := range seq(105, 160, 5) {
		pts = append(pts, point(x, 10+0.01*x, 0.5, "1", "4", false))
	}
	failed := point(161, 0, 0, "1", "4", false)
	failed.Failed = "timeout"
	partial := point(162, 99, 1, "1", "4", false)
	partial.Labels[LabelPartial] = "true"
	pts = append(pts, failed, partial, point(195, 40, 1, "2", "4", true))
	for _, x := range seq(200, 220, 5) {
		pts = append(pts, point(x, 11.6, 0.4, "2", "4", false))
	}
	// Points and events interleaved in time, as a runner writes them.
	for _, p := range pts {
		for len(events) > 0 && events[0].At < p.X {
			if err := w.Event(events[0]); err != nil {
				t.Fatal(err)
			}
			events = events[1:]
		}
		if err := w.Point(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range events {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestFromRun(t *testing.T) {
	t.Parallel()
	// Hand computation, settled known (see TestElasticityHandComputed):
	// A = 14·(0.47² + 0.05²)/0.52, B = 14, Av1 = 10.55, Av2 = 11.35.
	// Rt1: intervals from the end of the warm-up set (5 s) to the join
	// (102 s): 97 s of (3·1000 + 1400)/4 = 1,100 µs → 0.0011 s.
	// Rt2: from the window start (105 s) to the last set (160 s): 55 s of
	// 1,200 µs → 0.0012 s.
	aSettled := 14 * (0.47*0.47 + 0.05*0.05) / 0.52
	// Settled unknown: stable at 125, window start 100, Av2 = 11.325,
	// A = 11.5·(0.47² + 0.075²)/0.545, B = 0.5·23 = 11.5. Rt2 from 100 to
	// 160 s: 2 s of 4 ops at 1,100, 3 s of 1 op at 2,000, 55 s of 2 ops at
	// 1,200 µs → (8·1100 + 3·2000 + 110·1200)/121 = 146,800/121 µs.
	aUnknown := 11.5 * (0.47*0.47 + 0.075*0.075) / 0.545
	rt2Unknown := 146800.0 / 121 / 1e6
	join := result.Event{At: 102, Name: EventJoin, Detail: "+2 nodes"}
	tests := []struct {
		name                    string
		events                  []result.Event
		joins                   int
		settled, stableAt, av2  float64
		rt2                     float64
		rt2Ops                  int64
		score, transfer, online float64
	}{
		{
			name:   "join, data settled, online stable",
			events: []result.Event{join, {At: 128, Name: EventSettled}, {At: 131, Name: EventStable}},
			joins:  1, settled: 128, stableAt: 130, av2: 11.35, rt2: 0.0012, rt2Ops: 110,
			score: (aSettled + 14) / ((0.0011 + 0.0012) * (10.55 + 11.35)), transfer: 26, online: 131,
		},
		{
			name: "two join events before data settled are one bootstrap",
			events: []result.Event{join, {At: 102.5, Name: EventJoin, Detail: "+1 node"},
				{At: 128, Name: EventSettled}},
			joins: 2, settled: 128, stableAt: 130, av2: 11.35, rt2: 0.0012, rt2Ops: 110,
			score: (aSettled + 14) / ((0.0011 + 0.0012) * (10.55 + 11.35)), transfer: 26, online: math.NaN(),
		},
		{
			name:   "no data-settled event",
			events: []result.Event{join},
			joins:  1, settled: math.NaN(), stableAt: 125, av2: 11.325, rt2: rt2Unknown, rt2Ops: 121,
			score: (aUnknown + 11.5) / ((0.0011 + rt2Unknown) * (10.55 + 11.325)), transfer: math.NaN(), online: math.NaN(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := FromRun(writeJoinRun(t, tc.events))
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Elasticity) != 1 {
				t.Fatalf("%d elasticity results, want 1: %+v", len(sc.Elasticity), sc)
			}
			j := sc.Elasticity[0]
			if !j.Stable || j.Step != "1" || j.Detail != "+2 nodes" || j.Joins != tc.joins || j.NodesBefore != "2" || j.NodesAfter != "4" {
				t.Errorf("stable %v step %q detail %q joins %d nodes %s→%s; notes %q", j.Stable, j.Step, j.Detail, j.Joins, j.NodesBefore, j.NodesAfter, j.Notes)
			}
			if j.BeforeSets != 10 || j.Rt1Ops != 97*4 || j.Rt2Ops != tc.rt2Ops || j.Rt1Range != [2]float64{5, 102} {
				t.Errorf("%d sets before, Rt1 from %d ops over %v, Rt2 from %d ops over %v", j.BeforeSets, j.Rt1Ops, j.Rt1Range, j.Rt2Ops, j.Rt2Range)
			}
			checks := []struct {
				name      string
				got, want float64
			}{
				{"join", j.Join, 102}, {"settled", j.Settled, tc.settled}, {"stable at", j.StableAt, tc.stableAt},
				{"baseline", j.Baseline, 0.1}, {"Av1", j.Av1, 10.55}, {"Av2", j.Av2, tc.av2},
				{"Rt1", j.Rt1, 0.0011}, {"Rt2", j.Rt2, tc.rt2}, {"score", j.Score, tc.score},
				{"data transfer", j.DataTransfer, tc.transfer}, {"online stable", j.OnlineStable, tc.online},
			}
			for _, c := range checks {
				if !near(c.got, c.want, 1e-9*math.Max(1, math.Abs(c.want))) {
					t.Errorf("%s = %.12g, want %.12g", c.name, c.got, c.want)
				}
			}
			// Every delta before the join is 0.1 (SD 0), so the mean-delta
			// bound is 0.1 too and both detectors find the same window,
			// each with its own Rt2 from the intervals.
			if j.Detector != DefaultDetector || len(j.Verdicts) != len(Detectors) {
				t.Fatalf("detector %q, verdicts %+v", j.Detector, j.Verdicts)
			}
			for _, v := range j.Verdicts {
				if !v.Stable || v.StableAt != tc.stableAt || !near(v.Rt2, tc.rt2, 1e-12) || !near(v.Score, tc.score, 1e-9*tc.score) || v.BBand != 2*v.B {
					t.Errorf("%s verdict %+v, want stable at %g, Rt2 %g, score %g", v.Detector, v, tc.stableAt, tc.rt2, tc.score)
				}
			}
			// Scalability: step 1 averages its sets before the join
			// (10.55, 10 sets), step 2 its non-warm-up sets (11.6, 5):
			// (11.6 − 10.55)/10.55.
			if len(sc.Steps) != 2 || len(sc.Scalability) != 1 {
				t.Fatalf("steps %+v transitions %+v", sc.Steps, sc.Scalability)
			}
			s1, s2 := sc.Steps[0], sc.Steps[1]
			if s1.Label != "1" || s1.N != 10 || !near(s1.Avg, 10.55, 1e-12) || s1.Until != 102 || s1.Nodes != "2" ||
				s2.Label != "2" || s2.N != 5 || !near(s2.Avg, 11.6, 1e-12) || !math.IsNaN(s2.Until) || s2.Nodes != "4" {
				t.Errorf("steps %+v", sc.Steps)
			}
			if got := sc.Scalability[0].Score; !near(got, 1.05/10.55, 1e-12) {
				t.Errorf("scalability %g, want %g", got, 1.05/10.55)
			}
		})
	}
}

// A run killed before the cluster settled still scores what it can: the
// join is listed, not stable, with the reason.
func TestFromRunNeverStable(t *testing.T) {
	t.Parallel()
	run := writeJoinRun(t, []result.Event{{At: 102, Name: EventJoin}, {At: 300, Name: EventSettled}})
	sc, err := FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Elasticity) != 1 {
		t.Fatalf("%d elasticity results", len(sc.Elasticity))
	}
	j := sc.Elasticity[0]
	if j.Stable || !math.IsNaN(j.Score) || len(j.Notes) == 0 || !near(j.Av1, 10.55, 1e-12) || !near(j.Rt1, 0.0011, 1e-12) || j.DataTransfer != 198 {
		t.Errorf("stable %v score %g Av1 %g Rt1 %g transfer %g notes %q", j.Stable, j.Score, j.Av1, j.Rt1, j.DataTransfer, j.Notes)
	}
}

func TestOptionsOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts map[string]any
		want Options
	}{
		{"none: the defaults", nil, Options{}},
		{"study by name, window as read back from JSON", map[string]any{OptionDetector: DetectorStudy, OptionWindow: 7.0}, Options{Detector: DetectorStudy, Window: 7}},
		{"window as an int", map[string]any{OptionWindow: 4}, Options{Window: 4}},
		{"unknown detector and a fractional window are ignored", map[string]any{OptionDetector: "cusum", OptionWindow: 2.5}, Options{}},
	}
	for _, tc := range tests {
		run := &result.Run{Header: result.Header{Options: tc.opts}}
		if got := OptionsOf(run); got != tc.want {
			t.Errorf("%s: OptionsOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// The header's detector drives the fields.
	run := writeJoinRun(t, []result.Event{{At: 102, Name: EventJoin}, {At: 128, Name: EventSettled}})
	run.Header.Options = map[string]any{OptionDetector: DetectorStudy}
	sc, err := FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if j := sc.Elasticity[0]; j.Detector != DetectorStudy || j.StableAt != 130 || j.Rt2Ops != 110 {
		t.Errorf("detector %q stable at %g Rt2 from %d ops, want study, 130, 110", j.Detector, j.StableAt, j.Rt2Ops)
	}
}

func TestFromRunNoJoin(t *testing.T) {
	t.Parallel()
	sc, err := FromRun(writeJoinRun(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// Without a join, step 1 averages all 22 sets: X from 10 to 160 →
	// 10 + 0.01·mean(X); mean(X) = (550 + 1590)/22 = 2140/22.
	if len(sc.Elasticity) != 0 || len(sc.Steps) != 2 || sc.Steps[0].N != 22 || !near(sc.Steps[0].Avg, 10+0.01*2140/22, 1e-12) {
		t.Errorf("elasticity %d, steps %+v", len(sc.Elasticity), sc.Steps)
	}
}
