package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// pw is the password the tests below put in DSNs: never in any output.
const pw = "S3cretPW9"

// bounded is the context of a command that the fixed code refuses at
// once and the code before it ran (a study started its clusters): the
// test stops alone either way.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A run's --db of the wrong form is refused as such (exit 2) before its
// directory is made: a port out of range failed at the dial, exit 1.
func TestRunRefusesBadPort(t *testing.T) {
	t.Parallel()
	res := filepath.Join(t.TempDir(), "results")
	code, _, stderr := execute(bounded(t), "run", "microblog", "--db", "redis://127.0.0.1:99999", "--duration", "1s", "--results", res)
	if code != cli.ExitUsage || !strings.Contains(stderr, "the port is not a number in 1-65535") || strings.Contains(stderr, "connecting to") {
		t.Fatalf("exit %d: %s; want exit 2 before connecting", code, stderr)
	}
	if _, err := os.Stat(res); err == nil {
		t.Errorf("refused, but made %s", res)
	}
}
