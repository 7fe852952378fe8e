package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
)

// outageDuration is the load of an outage run; the node dies at outageKill
// and stays down to the end.
const (
	outageDuration = 16 * time.Second
	outageKill     = 4 * time.Second
	// outageGrace is the runner's default grace (runner.Config.Grace):
	// how long in-flight operations may finish after the end.
	outageGrace = 10 * time.Second
)

// TestOutage is issue 31, point 1: a server killed in the middle of a run
// and left down. The outage must show as what it is: errors in every
// second of it (not operations waiting in the reconnection backoff and the
// drivers' retries), its seconds in reconnect_unavailable_seconds, and a
// run that ends at its duration, not a grace period later. Before, a Redis
// run of 10 s with its node stopped at 3 s ended after 20 s with 0 errors
// and 0 s without service. The figures are logged (-v) for docs/faults.md.
//
// One engine: go test -run 'TestOutage/redis' ./internal/cli, or
// FIELDBENCH_FAULT_ENGINES=postgres,redis (run the JVM engines one at a
// time: they take minutes to start on a loaded machine).
func TestOutage(t *testing.T) {
	forEachFaultEngine(t, outageRun)
}

// outageRun runs the killed-and-left-down experiment of fc and checks its
// result.
func outageRun(t *testing.T, fc faultCase) {
	t.Helper()
	runs, _ := experimentRun(t, fmt.Sprintf(`
name: outage-%s
study: test
description: a node killed and left down
cluster: {engine: %s, nodes: 1}
workload: {name: microblog, options: {users: 100, clients: 4, duration: %s}}
timeline:
  - {at: %s, do: kill, nodes: [%s]}
`, fc.engine, fc.engine, outageDuration, outageKill, strings.Join(fc.nodes, ", ")), fc.limit)
	run := runs[0]
	kills := eventsNamed(run, "kill")
	if len(kills) == 0 || run.Summary == nil {
		t.Fatalf("no kill event or no summary: events %+v", run.Events)
	}
	killAt := kills[len(kills)-1].At
	// The seconds surely inside the outage: from 3 s after the last kill
	// (time for the clients to notice) to the end of the load.
	from, to := killAt+3, outageDuration.Seconds()
	var end float64
	var inside, withErrors int
	var errs, maxPerSecond int64
	var perSecond []string
	for _, iv := range run.Intervals {
		if iv.Drain {
			continue
		}
		end = max(end, iv.End)
		var ok, failed int64
		for _, oi := range iv.Ops {
			ok += oi.Count
			for _, n := range oi.Errors {
				failed += n
			}
		}
		if iv.Start >= killAt {
			perSecond = append(perSecond, fmt.Sprintf("%.0fs:%d/%d", iv.Start, ok, failed))
		}
		if iv.Start < from || iv.End > to {
			continue
		}
		inside++
		errs += failed
		maxPerSecond = max(maxPerSecond, failed)
		if failed > 0 {
			withErrors++
		}
		if ok > 0 {
			t.Errorf("second %.0f-%.0f of the outage: %d operations succeeded on a killed server", iv.Start, iv.End, ok)
		}
	}
	total, longest := run.Unavailable()
	x := run.Summary.Extra
	t.Logf("%s: killed at %.1f s; load ends at %.1f s (duration %s); %d errors in %d of %d seconds inside the outage (at most %d in one); "+
		"%.0f s without service (longest %.0f s), reconnect_unavailable_seconds %.0f; dials %.0f (refused %.0f); waited %.1f s; per second after the kill (ok/errors): %s; kinds: %v",
		fc.engine, killAt, end, outageDuration, errs, withErrors, inside, maxPerSecond, total, longest,
		x["reconnect_unavailable_seconds"], x["reconnect_dials"], x["reconnect_dials_failed"], x["reconnect_wait_seconds"],
		strings.Join(perSecond, " "), run.Summary.Ops)

	// The run ends at its duration plus the bound of an operation in
	// flight (adapter.OutageBound), with room for a slow machine — never
	// a grace period (10 s) later.
	if limit := (outageDuration + adapter.OutageBound + outageGrace/2).Seconds(); end > limit {
		t.Errorf("the load ended at %.1f s; want at most %.1f s (duration %s + operation bound %s + margin)", end, limit, outageDuration, adapter.OutageBound)
	}
	// Errors, second by second: about one per client per backoff step.
	// Wide margins: most seconds (not all: a slow machine can push a
	// round of failures past a tick), and no spinning.
	if inside < 5 {
		t.Fatalf("only %d seconds inside the outage (killed at %.1f s)", inside, killAt)
	}
	if withErrors*4 < inside*3 {
		t.Errorf("errors in %d of the %d seconds inside the outage; want at least three quarters", withErrors, inside)
	}
	const clients = 4
	if limit := int64(clients * 50); maxPerSecond > limit {
		t.Errorf("%d errors in one second from %d clients: the clients spin (want at most %d)", maxPerSecond, clients, limit)
	}
	// Time without service: at least the seconds inside the outage, at
	// most from the kill to the end of the load (plus the last partial
	// second), and the summary says the same as the series.
	if total < float64(inside) || total > end-killAt+2 {
		t.Errorf("%.1f s without service; want between %d s and %.1f s", total, inside, end-killAt+2)
	}
	if got := x["reconnect_unavailable_seconds"]; got != total {
		t.Errorf("reconnect_unavailable_seconds %.1f, the series says %.1f", got, total)
	}
}
