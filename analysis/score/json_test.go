package score

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// `scores --json` of a join whose figures could not all be computed: an
// unknown (NaN) or infinite figure is null, the known ones are numbers,
// and an embedded Elasticity's fields sit beside the join's own.
func TestWriteJSONUnknownFiguresAreNull(t *testing.T) {
	t.Parallel()
	sc := Scores{
		Elasticity: []JoinScore{{Step: "s1", OnlineStable: math.NaN(), Rt1Range: [2]float64{1, math.Inf(1)}, Rt1Ops: 7}},
		Notes:      []string{"a note"},
	}
	var buf bytes.Buffer
	if err := sc.WriteJSON(&buf); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var got struct {
		Elasticity []map[string]any
		Steps      any
		Notes      []string
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if len(got.Elasticity) != 1 {
		t.Fatalf("elasticity: %v", got.Elasticity)
	}
	j := got.Elasticity[0]
	if v, ok := j["OnlineStable"]; !ok || v != nil {
		t.Errorf("OnlineStable (NaN) = %v (present %v), want null", v, ok)
	}
	if r, _ := j["Rt1Range"].([]any); len(r) != 2 || r[0] != 1.0 || r[1] != nil {
		t.Errorf("Rt1Range = %v, want [1, null]", j["Rt1Range"])
	}
	if j["Rt1Ops"] != 7.0 || j["Step"] != "s1" {
		t.Errorf("known figures: Rt1Ops %v, Step %v", j["Rt1Ops"], j["Step"])
	}
	if _, ok := j["Elasticity"]; ok {
		t.Error("the embedded Elasticity is a field of its own, not flattened")
	}
	if _, ok := j["Score"]; !ok {
		t.Errorf("the embedded Elasticity's fields are missing: %v", j)
	}
	if got.Steps != nil || len(got.Notes) != 1 {
		t.Errorf("Steps %v (nil slice: null), Notes %v", got.Steps, got.Notes)
	}
}
