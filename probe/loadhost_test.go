package probe

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// A process started on a load host (run --load-host sets LoadHostVar in
// its environment) records the host in its result's machine; any other
// value of LoadHostEnv records none.
func TestMachineRecordsTheLoadHost(t *testing.T) {
	entry := LoadHostVar("load2", netip.MustParseAddr("198.18.1.2"), "fb-abc-load2")
	name, value, _ := strings.Cut(entry, "=")
	if name != LoadHostEnv {
		t.Fatalf("LoadHostVar = %q, want %s=...", entry, LoadHostEnv)
	}
	for _, tc := range []struct {
		value string
		want  *result.LoadHost
	}{
		{value, &result.LoadHost{Name: "load2", Addr: "198.18.1.2", Netns: "fb-abc-load2"}},
		{"", nil},
		{"load2 198.18.1.2", nil},
		{"load2 not-an-address fb-abc-load2", nil},
	} {
		t.Setenv(LoadHostEnv, tc.value)
		if tc.value == "" {
			os.Unsetenv(LoadHostEnv)
		}
		got := Machine().LoadHost
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s=%q: Machine().LoadHost = %+v, want %+v", LoadHostEnv, tc.value, got, tc.want)
		}
	}
}
