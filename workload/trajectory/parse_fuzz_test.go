package trajectory

import "testing"

// FuzzParseInputs feeds the parsers of the trajectory options (--slot,
// --weekday, --triangle, --modes, query names) any text: an error or a
// value in range, never a panic.
func FuzzParseInputs(f *testing.F) {
	for _, s := range []string{"0", "287", "288", "12:07", "23:59", "24:00", "-1:5", "mon", "Sunday", "7", "8",
		"0,0,1000,0,0,1000", "0,0,1,1,2,2", "9223372036854775807,0,0,1,1,0", "both", "random", "Sequential", "knn", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSlot(s); err == nil && (n < 0 || n >= SlotsPerDay) {
			t.Errorf("ParseSlot(%q) = %d", s, n)
		}
		if d, err := ParseWeekday(s); err == nil && (d < Monday || d > Sunday) {
			t.Errorf("ParseWeekday(%q) = %d", s, d)
		}
		if ms, err := ParseModes(s); err == nil && len(ms) == 0 {
			t.Errorf("ParseModes(%q) gave no mode", s)
		}
		if i, err := ParseQueryOp(s); err == nil && (i < 0 || i >= len(Ops) || i == OpWrite) {
			t.Errorf("ParseQueryOp(%q) = %d", s, i)
		}
		_, _ = ParseTriangle(s)
	})
}
