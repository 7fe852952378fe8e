package cli_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// faultCase is one row of the fault matrix: a single-node cluster of an
// engine and the nodes a crash takes down (HBase: the master JVM with its
// region server and ZooKeeper, and the REST gateway the adapter talks to).
// The run lasts until 8 s after the restart is done (a stop action), so a
// JVM that takes minutes to start on a loaded machine is waited for;
// limit bounds the whole experiment (up, load, run, down).
type faultCase struct {
	engine  string
	nodes   []string // killed in this order
	restart []string // restarted in this order (default: nodes)
	limit   time.Duration
	// served is how long the load goes on after the restart is done
	// (default 8 s), the window in which the run must be served again.
	served time.Duration
	// options are the cluster's engine options (the scenario's
	// cluster.options), as flow YAML.
	options string
}

var faultMatrix = []faultCase{
	{engine: "postgres", nodes: []string{"pg1"}, limit: 3 * time.Minute},
	{engine: "mariadb", nodes: []string{"node1"}, limit: 3 * time.Minute},
	{engine: "redis", nodes: []string{"redis1"}, limit: 3 * time.Minute},
	// FerretDB and pouchdb-server, standing in for MongoDB and CouchDB.
	{engine: "mongodb", nodes: []string{"ferretdb1"}, limit: 3 * time.Minute},
	{engine: "couchdb", nodes: []string{"couch1"}, limit: 3 * time.Minute},
	{engine: "cassandra", nodes: []string{"cass1"}, limit: 8 * time.Minute},
	// The gateway first: the master's restart waits until the cluster
	// serves, which it asks the gateway.
	// Its regions are assigned again after the master is back: requests
	// can hang without an error for over 8 s after the restart is done on
	// a 2-core machine (seen in CI: none finished in the 8 s window).
	// The gateway's own HBase client is bounded (rest-client-timeout) and
	// its heap raised, as scenarios/microblog/faults-hbase.yaml does: with
	// HBase's default (20 minutes an operation) the restarted gateway held
	// every request it took while the master was down, and its 256 MB ran
	// out before the master served again (seen in CI under load:
	// OutOfMemoryError, the master's restart not ready within 2 min).
	// In CI under load (2026-12-02) the four clients were answered again
	// and then held without an answer or an error for the 30 s after
	// the restart was done: the window is 90 s.
	{engine: "hbase", nodes: []string{"master", "rest"}, restart: []string{"rest", "master"}, limit: 10 * time.Minute, served: 90 * time.Second,
		options: `{rest-client-timeout: "10000", rest-heap: "512"}`},
}

// faultFigures are what one fault run measured, read from its result file.
type faultFigures struct {
	killAt, restartAt, restartDone float64 // seconds since the run started
	recoveredAt                    float64 // end of the last second with an error
	servedAt                       float64 // start of the first second served after the outage
	unavailable, longest           float64 // result.Run.Unavailable
	errors                         int64
	kinds                          map[string]int64
	errorSeconds                   int // seconds with at least one error
	dials, refused                 float64
}

func (f faultFigures) String() string {
	kinds := make([]string, 0, len(f.kinds))
	for k, n := range f.kinds {
		kinds = append(kinds, fmt.Sprintf("%d× %q", n, k))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("kill at %.1fs, restart at %.1fs, restart done at %.1fs; %.0f s without service (longest %.0f s); "+
		"%d errors in %d seconds, last error second ends %.1f s after the kill, %.1f s after the restart was done; "+
		"served again %.1f s after the kill; "+
		"%.0f dials, %.0f refused; kinds: %s",
		f.killAt, f.restartAt, f.restartDone, f.unavailable, f.longest, f.errors, f.errorSeconds,
		f.recoveredAt-f.killAt, f.recoveredAt-f.restartDone, f.servedAt-f.killAt, f.dials, f.refused, strings.Join(kinds, ", "))
}

// TestFaultMatrix is issue 13's fault matrix: for each engine with a
// server, a microblog run on a single node that is SIGKILLed 5 s into the
// load and restarted 3 s later; the load stops 8 s after the restart is
// done. The run must go on through it, count its
// errors by kind in the seconds they happened, be served again after the
// restart, and end with a complete result (summary, not interrupted) that
// report and scores read, its time without service and reconnections
// recorded. The figures are logged (-v) for docs/faults.md.
//
// One engine: go test -run 'TestFaultMatrix/redis' ./internal/cli, or
// FIELDBENCH_FAULT_ENGINES=postgres,redis to keep only those (the JVM
// engines take minutes to start and restart on a loaded machine).
func TestFaultMatrix(t *testing.T) {
	forEachFaultEngine(t, func(t *testing.T, fc faultCase) {
		f := faultRun(t, fc)
		t.Logf("%s: %v", fc.engine, f)
	})
}

// jvmEngines start Java servers: a JVM's start takes both cores of this
// project's machines for seconds, so their fault runs never run beside
// another. The others' (a C or Go server and a 4-client load) run two at
// a time (go test's -parallel, GOMAXPROCS): their checks count errors and
// successes per second, never throughput, and two at once took half the
// time.
var jvmEngines = []string{"cassandra", "hbase", "couchbase"}

// forEachFaultEngine runs each engine of faultMatrix as a subtest once its
// server is installed, keeping only those of FIELDBENCH_FAULT_ENGINES when
// set; it skips in -short (every one starts servers). The JVM engines run
// first, one at a time; the others then run in parallel.
func forEachFaultEngine(t *testing.T, run func(*testing.T, faultCase)) {
	if testing.Short() {
		t.Skip("starts servers (install with scripts/install-servers.sh)")
	}
	only := os.Getenv("FIELDBENCH_FAULT_ENGINES")
	for _, fc := range faultMatrix {
		t.Run(fc.engine, func(t *testing.T) {
			if !slices.Contains(jvmEngines, fc.engine) {
				t.Parallel()
			}
			if only != "" && !slices.Contains(strings.Split(only, ","), fc.engine) {
				t.Skipf("not in FIELDBENCH_FAULT_ENGINES=%s", only)
			}
			e, err := cluster.Get(fc.engine)
			if err == nil {
				err = e.Check()
			}
			if err != nil {
				t.Fatalf("%s: %v (scripts/install-servers.sh installs it)", fc.engine, err)
			}
			run(t, fc)
		})
	}
}

// faultRun runs fc's experiment and checks what its result says.
func faultRun(t *testing.T, fc faultCase) faultFigures {
	t.Helper()
	nodes, restart := strings.Join(fc.nodes, ", "), strings.Join(fc.nodes, ", ")
	if fc.restart != nil {
		restart = strings.Join(fc.restart, ", ")
	}
	runs, _ := experimentRun(t, fmt.Sprintf(`
name: fault-%s
study: test
description: fault matrix
cluster: {engine: %s, nodes: 1, options: %s}
workload: {name: microblog, options: {users: 100, clients: 4, duration: 10m}}
probe_every: 5s
timeline:
  - {at: 5s, do: kill, nodes: [%s]}
  - {at: 8s, do: restart, nodes: [%s]}
  - {when: restarted, after: %s, do: stop}
`, fc.engine, fc.engine, cmp.Or(fc.options, "{}"), nodes, restart, cmp.Or(fc.served, 8*time.Second)), fc.limit)
	run := runs[0]
	var f faultFigures
	// The first kill and restart, the last restart done (one event each
	// per node).
	for _, ev := range []struct {
		name string
		at   *float64
		last bool
	}{{"kill", &f.killAt, false}, {"restart", &f.restartAt, false}, {"restart-done", &f.restartDone, true}} {
		evs := eventsNamed(run, ev.name)
		if len(evs) != len(fc.nodes) {
			t.Fatalf("%d %q events, want %d; events: %+v", len(evs), ev.name, len(fc.nodes), run.Events)
		}
		*ev.at = evs[0].At
		if ev.last {
			*ev.at = evs[len(evs)-1].At
		}
	}
	if run.Summary == nil || run.Summary.Interrupted {
		t.Fatalf("incomplete result: summary %+v", run.Summary)
	}
	f.kinds = map[string]int64{}
	servedAfter, down := false, false
	for _, iv := range run.Intervals {
		var ok, failed int64
		for op, oi := range iv.Ops {
			ok += oi.Count
			for k, n := range oi.Errors {
				if strings.TrimSpace(k) == "" || n <= 0 {
					t.Errorf("interval at %.0fs, %s: error kind %q counted %d", iv.Start, op, k, n)
				}
				failed += n
				f.kinds[k] += n
			}
		}
		// Requests may hang without an error (HBase's gateway back before
		// its master): served again is the first success after seconds
		// with none.
		switch {
		case iv.Start >= f.killAt && ok == 0:
			down = true
		case down && ok > 0 && f.servedAt == 0:
			f.servedAt = iv.Start
		}
		if failed > 0 {
			f.errors += failed
			f.errorSeconds++
			f.recoveredAt = iv.End
			servedAfter = false
		} else if ok > 0 && iv.Start >= f.restartAt {
			servedAfter = true
		}
	}
	f.unavailable, f.longest = run.Unavailable()
	x := run.Summary.Extra
	f.dials, f.refused = x["reconnect_dials"], x["reconnect_dials_failed"]
	if f.errors == 0 {
		t.Error("no operation failed while the node was down: errors were swallowed")
	}
	if !servedAfter {
		t.Error("the run was not served again, without errors, after the restart")
	}
	if _, ok := x["reconnect_unavailable_seconds"]; !ok {
		t.Errorf("time without service not recorded: extras %v", x)
	}
	if x["reconnect_dials"] == 0 {
		t.Errorf("the adapter's reconnections are not recorded: extras %v", x)
	}
	// Bounded backoff: per address at most one round of dials per delay
	// step (10 ms doubling to 1 s, then 1 s) from each connection the
	// driver keeps, a count that holds on a slow machine as on a fast one.
	// Before the backoff a killed PostgreSQL saw thousands a second.
	outage := f.recoveredAt - f.killAt
	if limit := (outage + 12) * 16; f.refused > limit {
		t.Errorf("%.0f refused dials in a %.0f s outage; the backoff allows about %.0f", f.refused, outage, limit)
	}
	// Everything left is readable by report and scores.
	for _, cmd := range [][]string{{"report", run.Dir}, {"scores", run.Dir}} {
		if code, _, stderr := execute(context.Background(), cmd...); code != 0 {
			t.Errorf("%s: exit %d: %s", cmd[0], code, stderr)
		}
	}
	return f
}
