package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run directory is one new entry of --results, whatever its name parts
// hold (a scenario's name, a result header's workload and adapter): a
// hostile part is bad input, and nothing is made, inside results or
// beside it.
func TestNewRunDirStaysInResults(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, adapter string }{
		{"../../../escaped", "sqlite"},
		{"wiki", "../../escaped"},
		{"..", "sqlite"},
		{"a/b", "sqlite"},
		{"/abs", "sqlite"},
		{"nul\x00", "sqlite"},
		{"new\nline", "sqlite"},
		{strings.Repeat("n", 4096), "sqlite"},
		{"experiment", strings.Repeat("n", 240)}, // each part fits, the whole does not
	} {
		base := t.TempDir()
		results := filepath.Join(base, "a", "results")
		dir, err := NewRunDir(results, tc.name, tc.adapter, now)
		var ue UsageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("NewRunDir(%.20q, %.20q) = %q, %v; want a usage error", tc.name, tc.adapter, dir, err)
		}
		if entries, _ := os.ReadDir(base); len(entries) > 0 {
			t.Errorf("NewRunDir(%.20q, %.20q): refused, but made %s", tc.name, tc.adapter, entries[0].Name())
		}
	}
	dir, err := NewRunDir(filepath.Join(t.TempDir(), "results"), "experiment", strings.Repeat("n", 200), now)
	if err != nil || !strings.HasPrefix(filepath.Base(dir), "20261201-100000-experiment-nnn") {
		t.Errorf("a 200-byte name: %q, %v", dir, err)
	}
}
