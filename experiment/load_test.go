package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An empty scenario says it is empty (it said only "EOF"), and one too big
// states its real size (it stated the 1 MiB + 1 bytes it had read); issue
// 31, finding 8.
func TestLoadEmptyAndTooBig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 20); err != nil { // 10 MiB, sparse
		t.Fatal(err)
	}
	f.Close()
	for name, tc := range map[string]struct{ content, want string }{
		"empty.yaml":    {"", "the scenario is empty"},
		"comments.yaml": {"# nothing yet\n", "the scenario is empty"},
		"big.yaml":      {"", "the scenario is 10485760 bytes (10.0 MiB)"},
	} {
		p := filepath.Join(dir, name)
		if name != "big.yaml" {
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasSuffix(err.Error(), "EOF") {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}
