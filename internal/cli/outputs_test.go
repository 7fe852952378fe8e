package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// A run asked for the standard outputs writes them beside its result; the
// HDR log reads back with the library's log reader.
func TestRunWritesStandardOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := execute(context.Background(), "run", "microblog", "--users", "20", "--clients", "2", "--duration", "2s",
		"--hdr-log", "--summary-csv", "--summary-json", "--metrics-addr", "127.0.0.1:0", "--results", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*", "hdr", "timeline.hlog"))
	if len(m) != 1 {
		t.Fatalf("no timeline.hlog under %s", dir)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	rd := hdrhistogram.NewHistogramLogReader(bytes.NewReader(b))
	n := 0
	for h, err := rd.NextIntervalHistogram(); h != nil && err == nil; h, err = rd.NextIntervalHistogram() {
		n++
	}
	if n < 2 {
		t.Errorf("%d interval histograms in %s, want one a second", n, m[0])
	}
	for _, f := range []string{"summary.csv", "summary.json"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*", f)); len(m) != 1 {
			t.Errorf("no %s", f)
		}
	}
	if code, _, _ := execute(context.Background(), "run", "microblog", "--metrics-addr", "0.0.0.0:9464", "--results", dir); code != cli.ExitUsage {
		t.Errorf("a non-loopback metrics address: exit %d, want %d", code, cli.ExitUsage)
	}
}
