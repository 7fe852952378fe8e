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
