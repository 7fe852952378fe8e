package cli_test

import (
	"os"
	"testing"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// asFieldbench is set in the environment of a test's child process that is
// to be the fieldbench binary itself (the test binary re-executed), so a
// test can run shards as separate processes, as a Kubernetes Job would,
// without building the binary.
const asFieldbench = "FIELDBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asFieldbench) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// longTests, set to 1, runs the tests that take several minutes each on
// this project's 2-core machines and would push CI past its hour
// (FIELDBENCH_LONG_TESTS=1 go test -run NAME ./internal/cli); each such
// test names its cost when it skips.
const longTests = "FIELDBENCH_LONG_TESTS"

// onlyLong skips t unless longTests is set.
func onlyLong(t *testing.T, cost string) {
	t.Helper()
	if os.Getenv(longTests) != "1" {
		t.Skipf("%s; set %s=1 to run it", cost, longTests)
	}
}
