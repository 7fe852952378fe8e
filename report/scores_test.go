package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/result"
)

// TestScoresOneBaselineDelta: with two request sets before the join there
// is one baseline delta time, from which the mean-delta detector's mean
// and SD cannot be computed. The text of `fieldbench scores` must say so
// ("n/a") instead of printing a NaN bound ("within NaNs", as it once did).
func TestScoresOneBaselineDelta(t *testing.T) {
	t.Parallel()
	run := &result.Run{Header: result.Header{Workload: "wiki", Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	for i, y := range []float64{1.0, 1.1, 1.3, 1.2, 1.25, 1.2, 1.22, 1.21} {
		run.Points = append(run.Points, result.Point{Series: score.SeriesRequestSet, X: float64(10 * (i + 1)), Y: y, SD: 0.1,
			Labels: map[string]string{"set": strconv.Itoa(i)}})
	}
	run.Events = []result.Event{{At: 25, Name: score.EventJoin, Detail: "+1 node"}, {At: 40, Name: score.EventSettled}}
	var out bytes.Buffer
	if err := Scores(&out, run); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "NaN") || !strings.Contains(text, "n/a: one baseline delta time") {
		t.Errorf("scores with one baseline delta time:\n%s", text)
	}
}
