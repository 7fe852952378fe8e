package job_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// generate ingest prints its records' statistics, as every workload's
// generate does (the README says so; it printed one line, issue 40,
// finding 10), and they are the file's.
func TestIngestGenerateStatistics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := runJob(t, ingest.Name, "generate", map[string]string{"sources": "3", "records": "400", "seed": "9", "out": dir})
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	fi, err := os.Stat(filepath.Join(dir, "records.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"records          1200 (3 sources x 400)",
		"study bytes      151200 (126 per record",
		"csv bytes        " + itoa(int(fi.Size())) + " ",
		"channels         ",
		"quality flagged  ",
		"value (V)        mean 2",
		"measured_at      2015-03-02T00:00:00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("generate ingest's output lacks %q:\n%s", want, out)
		}
	}
}
