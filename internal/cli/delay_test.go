package cli_test

import (
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// TestRedisHostsDelay runs an experiment on a 3-master Redis Cluster on
// hosts, its load from a load host: every master's replies are delayed
// 50 ms from 4 s to 12 s, the load going on until 22 s. With netem where
// the kernel has it, else through toxiproxy in the load generator; the
// delay event and the header's fault_mechanisms name the one that ran.
// Every operation needs at least one reply from a master, so the median
// latency while delayed is at least 50 ms; before and after (from 4 s
// after the undo) it is far below. The rate is low (10 operations/s of 4
// clients) so that the operations' several round trips of 50 ms each do
// not build a backlog the open loop would still count after the undo (at
// 50/s with 100 ms the p50 after was 5.6 s). About 25 s, long tests only.
func TestRedisHostsDelay(t *testing.T) {
	onlyLong(t, "about 25 s, an experiment of 22 s on a Redis Cluster on hosts whose verdict reads latencies (p50 before and after a delay) a loaded CI machine shifts")
	needHostsCLI(t)
	run := runHostsExperiment(t, "delay-test", `name: delay-test
cluster: {engine: redis, nodes: 3, network: hosts}
workload:
  name: microblog
  options: {users: 100, clients: 4, rate: 10, duration: 22s}
timeline:
  - {at: 4s, do: delay, nodes: [redis1, redis2, redis3], delay: 50ms}
  - {at: 12s, do: unlimit}
audit: true
`)
	var delayAt, undoAt float64
	var detail string
	for _, e := range run.Events {
		switch e.Name {
		case "delay":
			delayAt, detail = e.At, e.Detail
		case "unlimit":
			undoAt = e.At
		}
	}
	if delayAt == 0 || undoAt <= delayAt {
		t.Fatalf("events delay at %v, unlimit at %v: %+v", delayAt, undoAt, run.Events)
	}
	m, _ := run.Header.Options["fault_mechanisms"].(string)
	if !(strings.Contains(detail, "toxiproxy") && strings.Contains(m, "toxiproxy")) &&
		!(strings.Contains(detail, "netem") && strings.Contains(m, "netem")) {
		t.Errorf("delay event %q and fault_mechanisms %q do not name the same mechanism", detail, m)
	}

	// p50 of every operation in the intervals wholly before, within (from
	// 1 s after the event) and after (from 4 s after the undo) the delay.
	p50 := func(from, to float64) (float64, int64) {
		h := hdrhistogram.New(1, 600_000_000, 3)
		for _, iv := range run.Intervals {
			if iv.Warmup || iv.Drain || iv.Start < from || iv.End > to {
				continue
			}
			for _, o := range iv.Ops {
				x, err := result.DecodeHist(o.Hist)
				if err != nil {
					t.Fatal(err)
				}
				h.Merge(x)
			}
		}
		return float64(h.ValueAtQuantile(50)) / 1000, h.TotalCount()
	}
	before, nb := p50(0, delayAt)
	during, nd := p50(delayAt+1, undoAt)
	after, na := p50(undoAt+4, 1e9)
	t.Logf("p50: before %.1f ms (%d ops), delayed %.1f ms (%d), after %.1f ms (%d); %s", before, nb, during, nd, after, na, detail)
	if nb == 0 || nd == 0 || na == 0 {
		t.Fatalf("operations before %d, delayed %d, after %d", nb, nd, na)
	}
	if during < 50 || before >= 25 || after >= 25 {
		t.Errorf("p50 before %.1f ms, delayed %.1f ms, after %.1f ms: want at least 50 ms delayed, under 25 ms outside", before, during, after)
	}
}
