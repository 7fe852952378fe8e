package adapter_test

import (
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/adapter/all"
	"github.com/fieldbench/fieldbench/workload"
)

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
