package cli_test

import (
	"testing"
	"time"
)

// TestExperimentCrashRedisRetries is TestExperimentCrashRedis (a Redis
// Cluster master killed under load and restarted 8 s later) with the
// microblog client's retry policy (--retries 20, backoff from 250 ms:
// about 37 s of waits at most). Without retries that run counts hundreds
// of failed posts (connection refused, CLUSTERDOWN: on this loaded
// machine the replica was not promoted before the restart); with them,
// operations that failed while the master was down are retried until it
// is back and succeed, and the result says how many.
func TestExperimentCrashRedisRetries(t *testing.T) {
	t.Parallel() // a Redis or pouchdb-server cluster of its own and a small load: two side by side (docs/testing.md)
	if testing.Short() {
		t.Skip("starts Redis (install with scripts/install-servers.sh)")
	}
	start := time.Now()
	runs, _ := experimentRun(t, `
name: crash-retries
study: test
description: test
cluster: {engine: redis, nodes: 3, options: {replicas: "1", node-timeout: "2000"}}
workload: {name: microblog, options: {users: 100, clients: 8, duration: 24s, retries: 20, retry-backoff: 250ms}}
timeline:
  - {at: 6s, do: kill, nodes: [redis2]}
  - {at: 14s, do: restart, nodes: [redis2]}
audit: true
`, 5*time.Minute)
	run := runs[0]
	if len(eventsNamed(run, "kill")) != 1 {
		t.Fatalf("want one kill event; events: %+v", run.Events)
	}
	if got := run.Header.Options["retries"]; got != float64(20) {
		t.Errorf("header option retries = %v (%T), want 20", got, got)
	}
	x := run.Summary.Extra
	if x["retries"] == 0 || x["retry_recovered"] == 0 {
		t.Errorf("no operation was retried and recovered across the failover: %v", x)
	}
	acked := x["audit_acknowledged"]
	if acked == 0 || acked != x["audit_ok"]+x["audit_lost"]+x["audit_stale"] {
		t.Errorf("audit figures do not add up: %v", x)
	}
	if run.Summary.Ops["post"].Count != int64(acked) {
		t.Errorf("posts counted %d, audited as acknowledged %v", run.Summary.Ops["post"].Count, acked)
	}
	// A recovered operation waited at least one backoff (250 ms): its
	// latency, counted from its start, holds it.
	var maxUS int64
	for _, op := range run.Summary.Ops {
		maxUS = max(maxUS, op.MaxUS)
	}
	if maxUS < 250_000 {
		t.Errorf("longest operation %d µs, shorter than one retry's wait", maxUS)
	}
	t.Logf("retries %v, recovered %v, exhausted %v; post errors %v; longest operation %.2f s; took %v",
		x["retries"], x["retry_recovered"], x["retry_exhausted"], run.Summary.Ops["post"].Errors, float64(maxUS)/1e6, time.Since(start).Round(time.Second))
}
