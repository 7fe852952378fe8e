package sqlserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/db/sqlserver"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// TestRunIngestWithEngineDSN is what a user does: `fieldbench run ingest
// --db <the DSN cluster up sqlserver printed>`, no relay, then `op ingest
// count` on the same DSN. The result names Iridium SQL and says that the
// stand-in's defects were rewritten; no output shows the password.
func TestRunIngestWithEngineDSN(t *testing.T) {
	dsn := sqlserver.FreshDSN(t)
	results := filepath.Join(t.TempDir(), "results")
	execute := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Execute(t.Context(), args, &out, &errb)
		all := out.String() + errb.String()
		if code != 0 {
			t.Fatalf("fieldbench %s: exit %d\n%s", args[0], code, all)
		}
		if strings.Contains(all, sqlserver.TestPassword) {
			t.Errorf("fieldbench %s shows the password:\n%s", args[0], all)
		}
		return out.String()
	}
	// Batches of 40: one INSERT of 32 and one of 8 in a transaction.
	execute("run", "ingest", "--db", dsn, "--results", results, "--sources", "2", "--records", "100", "--batch", "40", "--seed", "5")
	entries, err := os.ReadDir(results)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory in %s: %v %v", results, entries, err)
	}
	run, err := result.Read(filepath.Join(results, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if run.Summary == nil || run.Summary.Extra["records"] != 200 {
		t.Errorf("summary %+v: want 200 records", run.Summary)
	}
	if strings.Contains(run.Header.DSN, sqlserver.TestPassword) || !strings.Contains(run.Header.DSN, "standin=iridium") {
		t.Errorf("result DSN %q", run.Header.DSN)
	}
	if d := run.Header.Database; !strings.HasPrefix(d.Version, "Iridium SQL (reports ") || d.Config["tds_rewrites"] != sqlserver.StandinNote {
		t.Errorf("result database %+v", d)
	}
	if got := strings.TrimSpace(execute("op", "ingest", "count", "--db", dsn)); got != `{"records":200}` {
		t.Errorf("op ingest count: %s", got)
	}
}
