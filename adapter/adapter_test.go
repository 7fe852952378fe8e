package adapter_test

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/adapter/all"
	"github.com/fieldbench/fieldbench/workload"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"postgres://bob:s3cret@127.0.0.1:5432/db", "postgres://bob:xxxxx@127.0.0.1:5432/db"},
		{"sqlite:///tmp/x.db", "sqlite:///tmp/x.db"},
		{"host=127.0.0.1 password=s3cret user=bob", "host=127.0.0.1 password=xxxxx user=bob"},
	} {
		got := adapter.Redact(tc.in)
		if got != tc.want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestForDSNUnknownScheme(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"nosuchdb://x", "no-scheme", "://x"} {
		if _, err := adapter.ForDSN(dsn); err == nil {
			t.Errorf("ForDSN(%q) must fail", dsn)
		}
	}
}

// Every registered adapter lists at least one family, and only families
// that are registered workloads.
func TestFamiliesAreRegisteredWorkloads(t *testing.T) {
	t.Parallel()
	for _, a := range adapter.Registered() {
		fams := a.Families()
		if len(fams) == 0 {
			t.Errorf("adapter %s supports no family", a.Name())
		}
		for _, f := range fams {
			if _, err := workload.Get(f); err != nil {
				t.Errorf("adapter %s lists %q: %v", a.Name(), f, err)
			}
		}
	}
}
