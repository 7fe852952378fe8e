// Running a study: `fieldbench study NAME` runs one published study's
// experiments in sequence and sets every figure the paper published
// (study.go's data) beside what fieldbench measured in those experiments:
// the paper's value, fieldbench's, their ratio, and whether the two are
// comparable on this machine and why not.
//
// A study is a Plan: an ordered list of Steps, each one scenario of
// scenarios/ run by the experiment package into a directory of its own, so
// that a second invocation skips the steps already complete. The report is
// rebuilt from the result files alone (Report).

package study

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/outpath"
)

// Sizes a plan comes in.
const (
	// SizeQuick is each scenario as scenarios/ scales it to this machine
	// (halved node counts, 0.1–0.4 % datasets, one repeat), meant to finish in
	// under about 45 minutes per study on a 2-core machine.
	SizeQuick = "quick"
	// SizeStudy adds, where a plan has it, what the paper did and the
	// quick size leaves out: wiki's 10 repeats at the paper's RF 3 and
	// QUORUM on 3 -> 6 Cassandra nodes, ingest's load range up to 330,000
	// records per source, trajectory's ten runs (hours here). Microblog
	// has nothing more yet, and no study's node counts and datasets can
	// grow to the paper's on one machine.
	SizeStudy = "study"
)

// Sizes lists the sizes, smallest first.
func Sizes() []string { return []string{SizeQuick, SizeStudy} }

// Step is one experiment of a study.
type Step struct {
	// Name is the step's directory under the study's results directory;
	// unique within a plan.
	Name string
	// Scenario is the scenario file, relative to the scenarios directory
	// (or absolute).
	Scenario string
	// For is the paper's database (a name of the study's Databases) this
	// step's server measures, itself or as a stand-in: the result's header
	// says which server really ran.
	For string
	// Options override the scenario's workload options for this size.
	Options map[string]any
	// Why says what of the paper the step measures.
	Why string
}

// Plan is a study's steps at one size.
type Plan struct {
	Study string
	Size  string
	Steps []Step
	// NoBudgets runs every step without its scenario's node budgets
	// (study --no-budgets, where this machine cannot hold them); the
	// report then says, per step, that the nodes shared the machine.
	NoBudgets bool
}

// repeat returns n copies of s named name-01 … name-NN (n = 1: s itself).
func repeat(s Step, n int) []Step {
	if n <= 1 {
		return []Step{s}
	}
	out := make([]Step, n)
	for i := range out {
		out[i] = s
		out[i].Name = fmt.Sprintf("%s-%02d", s.Name, i+1)
	}
	return out
}

// plans are the studies' steps; size study differs from quick where the
// function says so. Every study of package study has one (a test checks).
var plans = map[string]func(size string) []Step{
	"ingest": func(size string) []Step {
		var sweep map[string]any
		if size == SizeStudy {
			// The paper's load range: 10,000 to 330,000 records per source.
			sweep = map[string]any{"from": 10000, "to": 330000, "step": 10000}
		}
		return []Step{
			{Name: "sweep-postgres", Scenario: "ingest/sweep-postgres.yaml", For: "sqlserver", Options: sweep,
				Why: "the relational database's throughput per load (PostgreSQL standing in for SQL Server)"},
			{Name: "sweep-cassandra", Scenario: "ingest/sweep-cassandra.yaml", For: "cassandra", Options: sweep,
				Why: "Cassandra's throughput per load with 95 % confidence intervals"},
			{Name: "sweep-mongodb", Scenario: "ingest/sweep-mongodb.yaml", For: "mongodb",
				Why: "the MongoDB driver's throughput per load (on FerretDB, the scenario's smaller loads and 10,000)"},
			{Name: "sweep-couchbase", Scenario: "ingest/sweep-couchbase.yaml", For: "couchbase",
				Why: "the Couchbase SDK's throughput at 10,000 records per source (on CouchbaseMock, without a budget)"},
		}
	},
	"wiki": func(size string) []Step {
		n := 1
		// quick: Cassandra at RF 2 and ONE on 2 -> 4 nodes (1 -> 2 -> 4
		// for scalability), what this machine runs in minutes.
		elastic, scal := "wiki/elasticity-cassandra.yaml", "wiki/scalability-cassandra.yaml"
		if size == SizeStudy {
			n = 10 // the paper's repeats
			// The paper's RF 3 and QUORUM, on 3 -> 6 nodes (its 6 -> 12
			// halved): six Cassandra nodes, about 6 GB of memory.
			elastic, scal = "wiki/elasticity-cassandra-rf3.yaml", "wiki/scalability-cassandra-rf3.yaml"
		}
		var out []Step
		out = append(out, repeat(Step{Name: "elasticity-cassandra", Scenario: elastic, For: "cassandra",
			Why: "Tables 1 and 2: stabilisation time and elasticity score of a doubling"}, n)...)
		out = append(out, repeat(Step{Name: "elasticity-hbase", Scenario: "wiki/elasticity-hbase.yaml", For: "hbase",
			Why: "Tables 1 and 2 for HBase"}, n)...)
		out = append(out, repeat(Step{Name: "scalability-cassandra", Scenario: scal, For: "cassandra",
			Why: "Tables 3 and 4: scalability scores and mean request-set times"}, n)...)
		out = append(out, repeat(Step{Name: "requests-mongodb", Scenario: "wiki/requests-mongodb.yaml", For: "mongodb",
			Why: "MongoDB's request sets on one server (FerretDB cannot grow: no elasticity or scalability), at the conditions of Cassandra's first scalability step, fewer sets"}, n)...)
		return out
	},
	"trajectory": func(size string) []Step {
		// quick: each scenario once (three runs at 0.1 %, one at the other
		// sizes); study: ten times, the paper's "average of ten runs" at
		// every size (hours here).
		n := 1
		if size == SizeStudy {
			n = 10
		}
		var out []Step
		for _, s := range []Step{
			{Name: "postgres", Scenario: "trajectory/postgres.yaml", For: "postgres",
				Why: "PostgreSQL/PostGIS write and distance-query throughput and latency"},
			{Name: "mongodb", Scenario: "trajectory/mongodb.yaml", For: "mongodb",
				Why: "the MongoDB driver's figures (on FerretDB)"},
			{Name: "couchdb", Scenario: "trajectory/couchdb.yaml", For: "couchdb",
				Why: "CouchDB's figures on 1 and 2 nodes (on pouchdb-server)"},
			{Name: "cassandra", Scenario: "trajectory/cassandra.yaml", For: "cassandra",
				Why: "Tables 3–14 for Cassandra: 1–4 nodes, three dataset sizes, sequential and random"},
			{Name: "rethinkdb", Scenario: "trajectory/rethinkdb.yaml", For: "rethinkdb",
				Why: "the RethinkDB driver's figures at 0.1 % (on reqlite, one server)"},
		} {
			out = append(out, repeat(s, n)...)
		}
		return out
	},
	"microblog": func(string) []Step {
		return []Step{
			{Name: "steady-denormalized", Scenario: "microblog/steady-denormalized.yaml", For: "cassandra",
				Why: "cluster formation, populate time, ownership, latency per operation"},
			{Name: "convergence-cassandra-one", Scenario: "microblog/convergence-cassandra-one.yaml", For: "cassandra",
				Why: "time until a write is visible on every node, at ONE"},
			{Name: "crash", Scenario: "microblog/crash.yaml", For: "cassandra",
				Why: "2 of 6 nodes crashing under load: failed operations and the audit"},
			{Name: "join", Scenario: "microblog/join.yaml", For: "cassandra",
				Why: "2 nodes joining a 4-node cluster under load"},
			{Name: "steady-couchbase", Scenario: "microblog/steady-couchbase.yaml", For: "couchbase",
				Why: "the steady run on Couchbase (CouchbaseMock, 3 simulated nodes in one JVM, without a budget)"},
		}
	},
}

// PlanFor returns the steps of study name at size.
func PlanFor(name, size string) (Plan, error) {
	f, ok := plans[name]
	if !ok {
		return Plan{}, fmt.Errorf("no study %q (studies: %s)", name, strings.Join(Planned(), ", "))
	}
	if size != SizeQuick && size != SizeStudy {
		return Plan{}, fmt.Errorf("no size %q (sizes: %s)", size, strings.Join(Sizes(), ", "))
	}
	return newPlan(name, size, f(size))
}

// newPlan is the plan of steps, each step's name checked: it is the
// step's directory under the study's (StepDir), so it takes the one rule
// for names that become paths (outpath.Component).
func newPlan(name, size string, steps []Step) (Plan, error) {
	for _, s := range steps {
		if err := outpath.Component(s.Name); err != nil {
			return Plan{}, fmt.Errorf("study %s: step name %v", name, err)
		}
	}
	return Plan{Study: name, Size: size, Steps: steps}, nil
}

// Planned lists the studies that have a plan, of those Names lists.
func Planned() []string {
	var out []string
	for _, n := range Names() {
		if _, ok := plans[n]; ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
