package adaptertest

import (
	"os"
	"testing"
)

// LongTests, set to 1, runs the tests that take several minutes each on
// this project's 2-core machines and would push CI past its hour
// (FIELDBENCH_LONG_TESTS=1 go test -run NAME ./PACKAGE); each such test
// names its cost when it skips.
const LongTests = "FIELDBENCH_LONG_TESTS"

// OnlyLong skips t unless LongTests is set.
func OnlyLong(t *testing.T, cost string) {
	t.Helper()
	if os.Getenv(LongTests) != "1" {
		t.Skipf("long test: %s; set %s=1 to run it (scripts/long-tests.sh runs them all)", cost, LongTests)
	}
}
