package job

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's setting (SetGCPercent is the only way).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// relaxGC raises the collector's target for the measured phase and puts
// back what it found, unless the user chose with GOGC.
func TestRelaxGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name   string
		gogc   string // "" unset
		before int
		during int
	}{
		{"GOGC unset", "", 100, measuredGCPercent},
		{"GOGC unset, tighter setting before", "", 50, measuredGCPercent},
		{"GOGC set", "150", 150, 150},
		{"GOGC off", "off", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			if tc.gogc == "" {
				os.Unsetenv("GOGC")
			}
			debug.SetGCPercent(tc.before)
			restore := relaxGC()
			if got := gcPercent(); got != tc.during {
				t.Errorf("during the measured phase: GOGC %d, want %d", got, tc.during)
			}
			restore()
			if got := gcPercent(); got != tc.before {
				t.Errorf("after: GOGC %d, want %d as before", got, tc.before)
			}
		})
	}
}
