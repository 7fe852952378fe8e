package experiment

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// A scenario with a problem in every part fails at parse time, naming
// every problem and its line, before anything could start.
func TestParseReportsEveryProblemWithItsLine(t *testing.T) {
	src := `name: typos
cluster:
  engine: cassandra
  nodes: 2
workload:
  name: microblog
  options:
    clientz: 5
    duration: five
    users: 1.5
    db: sqlite:///tmp/x.db
timeline:
  - {at: 10s, do: kill, nodes: [cass9]}
`
	_, err := Parse([]byte(src))
	if err == nil {
		t.Fatal("a scenario full of typos parsed")
	}
	for _, want := range []string{
		`line 8: workload.options.clientz: unknown option "clientz"`,
		`line 9: workload.options.duration: "five" is not a duration`,
		`line 10: workload.options.users: "1.5" is not a whole number`,
		`line 11: workload.options.db: the experiment sets it`,
		`line 13: timeline[0].nodes[0]: no node "cass9"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseChecksEngineAndTimes(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown engine", "name: x\ncluster: {engine: mongodbx, nodes: 1}\nworkload: {name: microblog}\n", `line 2: cluster.engine: unknown engine "mongodbx"`},
		{"action after the load", "name: x\nworkload:\n  name: microblog\n  options: {duration: 60s}\ntimeline:\n  - {at: 90s, do: mark}\n", "line 6: timeline[0].at: 1m30s is not before the end of the load (duration 1m0s)"},
		{"option of another command", "name: x\nworkload:\n  name: microblog\n  options: {out: data}\n", `line 4: workload.options.out: option "out" does not apply to run`},
		// Cluster option values as `cluster up` reads them, so that
		// --dry-run refuses what the real run would.
		{"cluster option value", "name: x\ncluster:\n  engine: cassandra\n  nodes: 2\n  options: {rf: bogus}\nworkload: {name: wiki}\n", `line 5: cluster.options: cassandra: option rf="bogus"`},
		{"unknown cluster option", "name: x\ncluster:\n  engine: mongodb\n  nodes: 1\n  options: {rff: 2}\nworkload: {name: wiki}\n", `line 5: cluster.options: mongodb: unknown option "rff"`},
		{"too many nodes", "name: x\ncluster: {engine: cassandra, nodes: 40}\nworkload: {name: wiki}\n", "line 2: cluster.nodes: cassandra: 40 node(s) is more than"},
		{"step option", "name: x\ncluster: {engine: redis, nodes: 1}\nworkload: {name: microblog}\nsteps:\n  - {nodes: 2, options: {clients: many}}\n", `line 5: steps[0].options.clients: "many" is not a whole number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestParseSumsTheLoadBudget: a scenario's --load-budget (in the
// workload's options or a step's) is summed with its nodes' budgets and
// the reserve before anything starts, as `run --cluster --load-budget`
// sums them: a node that fits the machine alone is refused beside the
// load's budget, with the sums; a malformed load budget is refused with
// its place. Needs root and cgroups (the budgets are checked against
// what this machine can hold).
func TestParseSumsTheLoadBudget(t *testing.T) {
	if err := budget.Check(budget.Budget{CPU: 0.1}); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	// The node leaves half a CPU of the machine: the reserve (0.25) fits
	// beside it, the reserve and a load of 0.5 do not.
	node := strconv.FormatFloat(float64(runtime.NumCPU())-0.5, 'f', -1, 64)
	head := "name: x\ncluster: {engine: redis, nodes: 1, budget: \"cpu=" + node + "\"}\nworkload:\n  name: microblog\n"
	for _, tc := range []struct{ name, src, want string }{
		{"no load budget", head, ""},
		{"load budget", head + "  options: {load-budget: \"cpu=0.5\"}\n", "--load-budget cpu=0.5: bad budget: the budgets do not fit this machine"},
		{"a step's load budget", head + "steps:\n  - {nodes: 1, options: {load-budget: \"cpu=0.5\"}}\n", "--load-budget cpu=0.5: bad budget: the budgets do not fit this machine"},
		{"malformed", head + "steps:\n  - {nodes: 1, options: {load-budget: \"disk=5MiB/s\"}}\n", "steps[0].options.load-budget: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
