package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
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
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the fieldbench binary fieldbenchBin built, once for all the
// tests of a run: a build takes long on this project's 2-core machines.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// fieldbenchBin builds the fieldbench binary, once, for the tests that run
// it as a user would: the commands of an external cluster call it as they
// would call ssh or kubectl, the tests on hosts run `cluster up` and `run
// --load-host` with it (it re-executes itself inside a load host, as a
// user's binary does), and the no-root case runs it as nobody, hence a
// directory anyone may read. It is the one builder of the package: safe
// for parallel tests (no environment to set), built once per run.
// TestMain removes it after the tests.
func fieldbenchBin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "fieldbench-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		_ = os.Chmod(dir, 0o755)
		built.path = filepath.Join(dir, "fieldbench")
		if out, err := exec.Command("go", "build", "-o", built.path, "github.com/fieldbench/fieldbench/cmd/fieldbench").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("build fieldbench: %v", built.err)
	}
	return built.path
}

// onlyLong skips t unless FIELDBENCH_LONG_TESTS=1 (adaptertest.OnlyLong).
func onlyLong(t *testing.T, cost string) {
	t.Helper()
	adaptertest.OnlyLong(t, cost)
}
