package workload_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWorkloadsImportNoDriver keeps the dependency direction of DESIGN.md:
// workloads know their data and operations but no database.
func TestWorkloadsImportNoDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/fieldbench/fieldbench/workload/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"database/sql", "modernc.org/sqlite", "github.com/jackc/", "github.com/gocql/", "github.com/go-sql-driver/", "github.com/redis/", "github.com/fieldbench/fieldbench/adapter"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("workload/... depends on %s", dep)
			}
		}
	}
}
