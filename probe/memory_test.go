package probe

import "testing"

// TestMemoryUsable: the control group's limit lowers what the machine
// offers; "max" and v1's near-2^63 are no limit.
func TestMemoryUsable(t *testing.T) {
	t.Parallel()
	m := Memory{Total: 24590432 << 10, Available: 22271768 << 10}
	for _, tc := range []struct {
		text string
		want uint64
	}{
		{"max\n", 0},                 // v2, no limit
		{"9223372036854771712\n", 0}, // v1, no limit
		{"4294967296\n", 4 << 30},    // a 4 GiB pod
		{"", 0},                      // no such file
		{"garbage", 0},
	} {
		if got := cgroupLimit(tc.text); got != tc.want {
			t.Errorf("cgroupLimit(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	m.Limit = 4 << 30
	if m.Usable() != 4<<30 {
		t.Errorf("a 4 GiB limit on a 21 GiB machine: usable %d", m.Usable())
	}
	m.Limit = 0
	if m.Usable() != m.Available {
		t.Errorf("no limit: usable %d, want MemAvailable %d", m.Usable(), m.Available)
	}
	if live := ReadMemory(); live.Total == 0 || live.Usable() == 0 || live.Usable() > live.Total {
		t.Errorf("this machine's memory read as %+v", live)
	}
}
