package workload_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The dependency direction of DESIGN.md: workloads know their data and
// operations but no database. It is kept as an allow-list, which a new
// driver cannot slip past: a workload package may depend only on
//
//   - the standard library, except database/sql (a database API);
//   - these packages of the module (a subtree each);
//   - these third-party modules: none today. Adding one is a decision
//     about the workloads' design, taken here, never a driver.
const module = "github.com/fieldbench/fieldbench"

var (
	allowedOwn = []string{
		module + "/workload", // the workloads themselves and their shared helpers
		module + "/stats",    // ingest's latency summaries
	}
	allowedThirdParty = []string{}
	forbiddenStd      = []string{"database/sql"}
)

// pkg is one dependency as go list reports it.
type pkg struct {
	path     string
	standard bool
}

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func anyUnder(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(path, p) {
			return true
		}
	}
	return false
}

// disallowed returns the dependencies the allow-list refuses, and the
// allow-list entries no dependency uses (an entry kept for nothing is how
// a list goes stale).
func disallowed(deps []pkg) (refused, unused []string) {
	used := map[string]bool{}
	for _, d := range deps {
		switch {
		case d.standard && !anyUnder(d.path, forbiddenStd):
			continue
		case d.standard:
			refused = append(refused, d.path)
		case anyUnder(d.path, allowedOwn):
		case under(d.path, module):
			refused = append(refused, d.path)
		case anyUnder(d.path, allowedThirdParty):
		default:
			refused = append(refused, d.path)
		}
		for _, a := range append(append([]string{}, allowedOwn...), allowedThirdParty...) {
			if under(d.path, a) {
				used[a] = true
			}
		}
	}
	for _, a := range append(append([]string{}, allowedOwn...), allowedThirdParty...) {
		if !used[a] {
			unused = append(unused, a)
		}
	}
	return refused, unused
}

// TestWorkloadsImportNoDriver checks the real dependencies of
// workload/... (tests left out: they may use anything).
func TestWorkloadsImportNoDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", module+"/workload/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var deps []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("go list line %q: want path and standard", line)
		}
		deps = append(deps, pkg{path, std == "true"})
	}
	if len(deps) == 0 {
		t.Fatal("go list reported no dependencies")
	}
	refused, unused := disallowed(deps)
	for _, d := range refused {
		t.Errorf("workload/... depends on %s, which the allow-list does not hold", d)
	}
	for _, a := range unused {
		t.Errorf("the allow-list holds %s, which workload/... no longer depends on: remove it", a)
	}
}

// TestAllowList checks the logic on made-up dependency lists: every
// driver, and any package of the module outside the list, is refused.
func TestAllowList(t *testing.T) {
	ok := []pkg{{"fmt", true}, {module + "/workload", false}, {module + "/workload/wiki", false}, {module + "/stats", false}}
	for _, tc := range []struct {
		dep     pkg
		refused bool
	}{
		{pkg{"context", true}, false},
		{pkg{"vendor/golang.org/x/net/dns/dnsmessage", true}, false},
		{pkg{module + "/workload/microblog", false}, false},
		{pkg{"database/sql", true}, true},
		{pkg{"database/sql/driver", true}, true},
		{pkg{"github.com/apache/cassandra-gocql-driver/v2", false}, true},
		{pkg{"github.com/gocql/gocql", false}, true},
		{pkg{"go.mongodb.org/mongo-driver/v2/mongo", false}, true},
		{pkg{"github.com/couchbase/gocb/v2", false}, true},
		{pkg{"gopkg.in/rethinkdb/rethinkdb-go.v6", false}, true},
		{pkg{"github.com/jackc/pgx/v5", false}, true},
		{pkg{"github.com/go-sql-driver/mysql", false}, true},
		{pkg{"github.com/redis/go-redis/v9", false}, true},
		{pkg{"modernc.org/sqlite", false}, true},
		{pkg{"github.com/microsoft/go-mssqldb", false}, true},
		{pkg{module + "/adapter", false}, true},
		{pkg{module + "/db/postgres", false}, true},
		{pkg{module + "/workloadx", false}, true}, // a prefix, not a subtree
		{pkg{module + "/statsfake", false}, true},
	} {
		refused, unused := disallowed(append(append([]pkg{}, ok...), tc.dep))
		if got := len(refused) == 1 && refused[0] == tc.dep.path; got != tc.refused || (!tc.refused && len(refused) > 0) {
			t.Errorf("%s: refused %v; want refused %v", tc.dep.path, refused, tc.refused)
		}
		if len(unused) > 0 {
			t.Errorf("%s: unused %v; want none", tc.dep.path, unused)
		}
	}
	if _, unused := disallowed([]pkg{{module + "/workload", false}}); len(unused) != 1 || unused[0] != module+"/stats" {
		t.Errorf("an allow-list entry no dependency uses: unused %v; want %s", unused, module+"/stats")
	}
}
