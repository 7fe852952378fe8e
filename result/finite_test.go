package result

import (
	"math"
	"testing"
)

// A NaN or Inf among the header's options or the summary's figures must not
// cost the line (JSON cannot encode them): the file reads back whole.
func TestNonFiniteDoesNotLoseTheFile(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		dir := t.TempDir()
		w, err := Create(dir, Header{Workload: "microblog", Options: map[string]any{"confirm_over": v, "nested": map[string]any{"x": v}}})
		if err != nil {
			t.Fatalf("%v: create: %v", v, err)
		}
		if err := w.Summary(Summary{Ops: map[string]OpSummary{}, Extra: map[string]float64{"bad": v, "good": 1}}); err != nil {
			t.Fatalf("%v: summary: %v", v, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Read(dir)
		if err != nil {
			t.Fatalf("%v: read: %v", v, err)
		}
		if r.Summary == nil || r.Summary.Extra["good"] != 1 {
			t.Errorf("%v: summary lost: %+v", v, r.Summary)
		}
		if _, ok := r.Summary.Extra["bad"]; ok {
			t.Errorf("%v: a non-finite figure was written", v)
		}
		if got := r.Header.Options["confirm_over"]; got != fmtFloat(v) {
			t.Errorf("%v: option written as %v", v, got)
		}
	}
}

func fmtFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case v > 0:
		return "+Inf"
	}
	return "-Inf"
}
