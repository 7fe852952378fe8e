package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// within runs f and fails the test if it has not returned after limit. The
// limit is wide (seconds against microseconds of work): it only tells a
// hang from an answer.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v (an endless loop)", what, limit)
	}
}

// Finding 1 of issue 13: a result point with y = -1e16 made linearAxis loop
// forever (lo+1 == lo gave a zero step). Every axis over extreme, NaN,
// infinite or equal values must come back, finite, with a bounded number of
// distinct, increasing ticks.
func TestAxesExtremeValues(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	ranges := []struct{ lo, hi float64 }{
		{-1e16, -1e16}, {-1e16, 0}, {0, -1e16}, {1e16, 1e16 + 2}, {1e300, 1e300}, {0, 1e300},
		{-1e308, 1e308}, {-math.MaxFloat64, math.MaxFloat64}, {nan, nan}, {nan, 5}, {5, nan},
		{-inf, inf}, {inf, -inf}, {0, inf}, {-inf, 0}, {inf, inf}, {7, 7}, {0, 0},
		{5e-324, 1e-323}, {-5e-324, 5e-324}, {1e-300, 1e-300}, {3, 2},
	}
	check := func(t *testing.T, name string, a axis) {
		t.Helper()
		if math.IsNaN(a.min) || math.IsInf(a.min, 0) || math.IsNaN(a.max) || math.IsInf(a.max, 0) || !(a.max > a.min) {
			t.Errorf("%s: axis [%g, %g] is not a finite range", name, a.min, a.max)
		}
		if len(a.ticks) < 2 || len(a.ticks) > 1000 {
			t.Errorf("%s: %d ticks", name, len(a.ticks))
		}
		for i := 1; i < len(a.ticks); i++ {
			if !(a.ticks[i].v > a.ticks[i-1].v) {
				t.Errorf("%s: ticks not increasing at %d: %g, %g", name, i, a.ticks[i-1].v, a.ticks[i].v)
				break
			}
		}
		for _, v := range []float64{a.min, a.max, (a.min + a.max) / 2, nan, inf, -inf} {
			if p := a.project(v); math.IsNaN(p) || p < 0 || p > 1 {
				t.Errorf("%s: project(%g) = %g", name, v, p)
			}
		}
	}
	for _, r := range ranges {
		for _, n := range []int{0, 1, 5, 10, 1 << 30} {
			var a axis
			within(t, 20*time.Second, "linearAxis", func() { a = linearAxis("", r.lo, r.hi, n, fmtNumber) })
			check(t, "linear "+fmtFigure(r.lo)+".."+fmtFigure(r.hi), a)
		}
		for _, floor := range []float64{1, 1e-9, 1e-300, 0, -1, nan, inf} {
			var a axis
			within(t, 20*time.Second, "logAxisFloor", func() { a = logAxisFloor("", r.lo, r.hi, floor, fmtNumber) })
			check(t, "log "+fmtFigure(r.lo)+".."+fmtFigure(r.hi)+" floor "+fmtFigure(floor), a)
		}
	}
}

// The reproduction of finding 1 end to end: a result file whose points hold
// extreme figures renders, in bounded time, to a page without NaN or Inf.
func TestHTMLExtremePoints(t *testing.T) {
	t.Parallel()
	for _, ys := range [][]float64{
		{-1e16}, {-1e16, -1e16 + 1}, {1e300, -1e300}, {1.7e308, -1.7e308}, {0, 0, 0}, {1e300, 1e-300},
	} {
		f := sweepB()
		f.dir = "extreme"
		f.series = map[string]result.SeriesMeta{"request_set": metaRequestSet, "stats": metaSweep, "runs": metaRuns}
		f.points = nil
		for i, y := range ys {
			f.points = append(f.points,
				result.Point{Series: "request_set", X: float64(i) * 1e300, Y: y, SD: math.Abs(y), N: 3},
				result.Point{Series: "stats", X: -1e16 + float64(i), Y: y, Lo: y / 2, Hi: y, N: 3},
				result.Point{Series: "runs", X: float64(i), Y: y})
		}
		runs := fixtureRuns(t, f)
		var out bytes.Buffer
		var err error
		within(t, 60*time.Second, "HTML", func() { err = HTML(&out, runs) })
		if err != nil {
			t.Fatalf("y %v: %v", ys, err)
		}
		for _, c := range svgs(out.String()) {
			for _, bad := range []string{"NaN", "Inf"} {
				if strings.Contains(c, bad) {
					t.Errorf("y %v: a chart holds %q", ys, bad)
				}
			}
		}
		var term bytes.Buffer
		within(t, 60*time.Second, "Terminal", func() { err = Terminal(&term, runs[0]) })
		if err != nil {
			t.Errorf("terminal: %v", err)
		}
	}
}

// Finding 3 of issue 13: report.html showed a postgres ?password= that an
// older fieldbench wrote into result.jsonl. The report redacts the DSN it
// shows, whatever the file holds.
func TestReportRedactsOldDSN(t *testing.T) {
	t.Parallel()
	runs := fixtureRuns(t, runA())
	runs[0].Header.DSN = "postgres://bench@127.0.0.1/db?sslmode=disable&password=s3cretA"
	out := renderHTML(t, runs...)
	if strings.Contains(out, "s3cret") {
		t.Error("report shows the password")
	}
	if !strings.Contains(out, "password=xxxxx") {
		t.Error("report does not show the redacted DSN")
	}
}
