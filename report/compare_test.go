package report

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// A run is named by its directory's last element however the directory was
// typed: "compare base/ new/" (its own --help example) named both "".
func TestRunLabelNamesTheDirectory(t *testing.T) {
	for _, tc := range []struct{ dir, want string }{
		{"results/run-new", "run-new"},
		{"results/run-new/", "run-new"},
		{"base/", "base"},
		{"base//", "base"},
		{"./new/", "new"},
		{"new", "new"},
	} {
		r := &result.Run{Dir: tc.dir, Header: result.Header{Workload: "wiki"}}
		if got := runLabel(r); !strings.HasPrefix(got, tc.want+" (wiki on ") {
			t.Errorf("runLabel(%q) = %q, want it named %q", tc.dir, got, tc.want)
		}
	}
}
