package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestRedisHostsPartition runs an experiment on a 3-master Redis Cluster on
// hosts, its load from a load host: redis3 is cut off from every other
// host at 4 s and healed at 12 s, the load going on until 28 s. While cut,
// redis3 sends nothing (its eth0 tx bytes/s stay near zero, where they
// were well above it before) and the load is no longer served as before
// (clients block on the cut master's slots, or get errors once the others
// mark it failed); after the heal the cluster serves again and redis3
// sends again. The audit ran, and nothing of the network is left.
func TestRedisHostsPartition(t *testing.T) {
	needHostsCLI(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("nft not installed (scripts/install-servers.sh): %v", err)
	}
	run := runHostsExperiment(t, "partition-test", `name: partition-test
cluster: {engine: redis, nodes: 3, network: hosts}
workload:
  name: microblog
  options: {users: 100, clients: 4, rate: 100, duration: 28s}
probe_every: 1s
timeline:
  - {at: 4s, do: partition, nodes: [redis3]}
  - {at: 12s, do: heal, nodes: [redis3]}
audit: true
`)
	at := map[string]float64{}
	for _, e := range run.Events {
		if _, seen := at[e.Name]; !seen {
			at[e.Name] = e.At
		}
	}
	cut, heal := at["partition"], at["heal"]
	if cut == 0 || heal <= cut {
		t.Fatalf("events partition at %v, heal at %v: %+v", cut, heal, run.Events)
	}
	if _, ok := at["audit"]; !ok {
		t.Errorf("no audit event: %+v", run.Events)
	}
	if lh := run.Header.Machine.LoadHost; lh == nil || lh.Addr != "198.18.1.1" {
		t.Errorf("header's load host: %+v", lh)
	}
	if m, _ := run.Header.Options["fault_mechanisms"].(string); !strings.Contains(m, "nftables") {
		t.Errorf("fault_mechanisms = %q", m)
	}

	// redis3's eth0: sent bytes/s before, during and after (from 2 s
	// after the heal) the partition. A probe is during it when the period
	// it measures (from the previous probe) lies within the cut; the heal
	// event is written just after the rules are gone, so a probe read in
	// between may count traffic of the healed link: the median of the
	// probes during the cut is judged, not their maximum.
	var before, after, duringAll []float64
	prevX := -1.0
	for _, p := range run.Points {
		if p.Series != "node-net-tx" || p.Labels["node"] != "redis3" {
			continue
		}
		switch {
		case p.X < cut:
			before = append(before, p.Y)
		case prevX >= cut && p.X <= heal:
			duringAll = append(duringAll, p.Y)
		case p.X > heal+2:
			after = append(after, p.Y)
		}
		prevX = p.X
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(max(len(v), 1))
	}
	nDuring := len(duringAll)
	slices.Sort(duringAll)
	during := 0.0
	if nDuring > 0 {
		during = duringAll[nDuring/2]
	}
	t.Logf("redis3 tx: before %.0f B/s (mean of %d), during %v B/s (median %.0f), after %.0f B/s (mean of %d)",
		mean(before), len(before), duringAll, during, mean(after), len(after))
	if nDuring < 3 || len(before) == 0 || len(after) == 0 {
		t.Fatalf("too few network probes of redis3: %d before, %d during, %d after", len(before), nDuring, len(after))
	}
	// Cut, it sends nothing (ARP, which nftables' inet rules do not see,
	// is a few dozen bytes).
	if during > 2048 || mean(before) < 4*max(during, 256) || mean(after) < 4*max(during, 256) {
		t.Errorf("redis3's sent bytes/s do not show the partition: before %.0f, during %.0f (median), after %.0f", mean(before), during, mean(after))
	}

	// The load: served before, not served as before while cut (blocked or
	// failing), served again after the heal.
	var okBefore, okDuring, errDuring, okAfter int64
	var secBefore, secDuring float64
	for _, iv := range run.Intervals {
		if iv.Warmup || iv.Drain {
			continue
		}
		var ok, failed int64
		for _, oi := range iv.Ops {
			ok += oi.Count
			for _, n := range oi.Errors {
				failed += n
			}
		}
		switch {
		case iv.End <= cut:
			okBefore += ok
			secBefore += iv.End - iv.Start
		case iv.Start >= cut+1 && iv.End <= heal:
			okDuring += ok
			errDuring += failed
			secDuring += iv.End - iv.Start
		case iv.Start >= heal:
			okAfter += ok
		}
	}
	t.Logf("ops/s: before %.0f, during %.0f (%d errors), after the heal %d ops", float64(okBefore)/secBefore, float64(okDuring)/secDuring, errDuring, okAfter)
	if okBefore == 0 || secDuring == 0 {
		t.Fatalf("no operation before the cut (%d) or no second within it (%.0f s)", okBefore, secDuring)
	}
	if errDuring == 0 && float64(okDuring)/secDuring > 0.5*float64(okBefore)/secBefore {
		t.Errorf("the partition changed neither errors nor throughput: before %.0f ops/s, during %.0f ops/s, no errors", float64(okBefore)/secBefore, float64(okDuring)/secDuring)
	}
	if okAfter == 0 {
		t.Error("not served again after the heal")
	}
}

// runHostsExperiment runs the scenario (named name, with a microblog
// workload on Redis) through the fieldbench binary, checks that it
// succeeded and left nothing of its network, and returns its run.
func runHostsExperiment(t *testing.T, name, scenarioYAML string) *result.Run {
	t.Helper()
	bin := fieldbenchBin(t)
	base := t.TempDir()
	scenario := filepath.Join(base, name+".yaml")
	if err := os.WriteFile(scenario, []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(base, "results")
	code, out, stderr := runBin(t, bin, "experiment", scenario, "--results", res)
	exps, _ := filepath.Glob(filepath.Join(res, "*-experiment-"+name))
	if len(exps) != 1 {
		t.Fatalf("experiment directories %v: exit %d\n%s\n%s", exps, code, out, stderr)
	}
	assertNetworkGone(t, filepath.Join(exps[0], "cluster"))
	if code != 0 {
		t.Fatalf("experiment: exit %d\n%s\n%s", code, out, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(exps[0], "*-microblog-redis"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v", runs)
	}
	run, err := result.Read(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRedisHostsNetBudgetUnlimit: a node whose budget sets its host's
// link (net=100mbit) is limited further by a scenario's limit (10mbit) and
// goes back to its budget's rate, not to an unlimited link, when the
// scenario lifts the limit: the unlimit event says so once the rate is set
// again.
func TestRedisHostsNetBudgetUnlimit(t *testing.T) {
	needHostsCLI(t)
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skipf("tc not installed (scripts/install-servers.sh): %v", err)
	}
	run := runHostsExperiment(t, "netbudget-test", `name: netbudget-test
cluster:
  engine: redis
  nodes: 3
  network: hosts
  budgets: {redis2: "net=100mbit"}
workload:
  name: microblog
  options: {users: 50, clients: 2, duration: 4s}
timeline:
  - {at: 1s, do: limit, nodes: [redis2], rate: 10mbit}
  - {at: 2s, do: unlimit, nodes: [redis2]}
`)
	var detail string
	for _, e := range run.Events {
		if e.Name == "unlimit" {
			detail = e.Detail
		}
	}
	if !strings.Contains(detail, "redis2 back at its budget's net=100mbit") {
		t.Errorf("unlimit event %q, want redis2 back at its budget's rate; events %+v", detail, run.Events)
	}
}
