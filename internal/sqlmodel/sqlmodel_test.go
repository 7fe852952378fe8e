package sqlmodel

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestCheck: an empty database takes any model; data is refused for
// another model and when no model is recorded, wrapping ErrModelMismatch.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		have microblog.Model
		has  bool
		want string // "" when allowed
	}{
		{"", false, ""},
		{microblog.Normalized, false, ""},
		{microblog.Async, true, ""},
		{microblog.Normalized, true, "holds the normalized model"},
		{"", true, "no model is recorded"},
	} {
		err := Check("db", tc.have, microblog.Async, tc.has)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Check(%q, has %v): %v; want nil", tc.have, tc.has, err)
			}
			continue
		}
		if !errors.Is(err, microblog.ErrModelMismatch) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "db: ") {
			t.Errorf("Check(%q, has %v): %v; want ErrModelMismatch saying %q", tc.have, tc.has, err, tc.want)
		}
	}
}
