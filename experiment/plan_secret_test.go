package experiment

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// experiment --dry-run masks a password in an external cluster's command
// templates as it masks the scenario's dsn (issue 31, finding 4: the
// commands were printed verbatim).
func TestPlanMasksPasswordsInCommands(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../scenarios/microblog/external-crash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "kill: ssh {host} sudo systemctl kill -s KILL cassandra",
		"kill: ssh {host} nodetool -u bench -pw S3CRETpw stopdaemon", 1)
	src = strings.Replace(src, "restart: ssh {host} sudo systemctl start cassandra",
		"restart: ssh {host} env CASSANDRA_PASSWORD=0therS3CRET start-cassandra --token T0KENS3CRET", 1)
	if !strings.Contains(src, "S3CRETpw stopdaemon") || !strings.Contains(src, "0therS3CRET") {
		t.Fatal("the scenario changed: the test no longer puts secrets in it")
	}
	sc, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// The DSN's password, which the commands repeat, is set after the
	// checks: the cassandra adapter takes none, so the scenario with it
	// is refused (as its run would be); the plan of one whose adapter
	// takes a password must mask it all the same.
	if !strings.Contains(sc.Cluster.DSN, "cassandra://10.0.0.11") {
		t.Fatalf("the scenario changed: dsn %s", sc.Cluster.DSN)
	}
	sc.Cluster.DSN = strings.Replace(sc.Cluster.DSN, "cassandra://", "cassandra://bench:S3CRETpw@", 1)
	var out bytes.Buffer
	if err := sc.WritePlan(&out); err != nil {
		t.Fatal(err)
	}
	plan := out.String()
	if strings.Contains(plan, "S3CRET") || !strings.Contains(plan, "nodetool -u bench -pw xxxxx stopdaemon") {
		t.Errorf("the plan shows a secret:\n%s", plan)
	}
}

// experiment --dry-run shows the nodes' budgets (issue 44: each scenario's
// budget is in what it prints before it runs, as in its results' header).
func TestPlanShowsBudget(t *testing.T) {
	t.Parallel()
	sc, err := Parse([]byte(`
name: budget-plan
study: test
description: test
cluster: {engine: redis, nodes: 2, budget: "cpu=0.3,memory=1GiB", budgets: {redis2: "cpu=0.4"}}
workload: {name: microblog, options: {duration: 5s}}
`))
	if err != nil {
		t.Skipf("budgets cannot be held here: %v", err)
	}
	var out bytes.Buffer
	if err := sc.WritePlan(&out); err != nil {
		t.Fatal(err)
	}
	if want := "    budget: cpu=0.3,memory=1.0GiB each (redis2: cpu=0.4) (docs/scale-model.md)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("plan:\n%s\nwant the line %q", out.String(), want)
	}
}
