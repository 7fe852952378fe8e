package experiment

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/result"
)

// Per-node probe series (points labelled with the node) and the machine's.
const (
	seriesNodeCPU    = "node-cpu"
	seriesNodeRSS    = "node-rss"
	seriesNodeRead   = "node-read"
	seriesNodeWrite  = "node-write"
	seriesNodeDisk   = "node-disk"
	seriesMachineCPU = "machine-cpu"
	// The machine's idle CPU (iowait excluded) and the CPU its
	// hypervisor gave elsewhere (steal): whether the machine, not a
	// node's budget, ran out first.
	seriesMachineIdle  = "machine-idle"
	seriesMachineSteal = "machine-steal"
	// Per host of a virtual network (nodes and the load host), from its
	// eth0's counters: what it received and sent per second.
	seriesNetRx        = "node-net-rx"
	seriesNetTx        = "node-net-tx"
	seriesNetRxPackets = "node-net-rx-packets"
	seriesNetTxPackets = "node-net-tx-packets"
	seriesOwnership    = "ownership"
	// Per node held to a budget (cluster.budget), from its control group:
	// the CPU it used against its quota, the share of the interval's CFS
	// periods in which it was held back, its memory against its limit,
	// its disk reads and writes against its rate.
	seriesBudgetCPU       = "node-budget-cpu"
	seriesBudgetThrottled = "node-budget-throttled"
	seriesBudgetMemory    = "node-budget-memory"
	seriesBudgetDisk      = "node-budget-disk"
)

// probeSeries declares the probe series in a run's header.
func probeSeries(h *result.Header) {
	if h.Series == nil {
		h.Series = map[string]result.SeriesMeta{}
	}
	add := timeSeries(h)
	add(seriesNodeCPU, "CPU per node", "CPU (% of one core)")
	add(seriesNodeRSS, "Resident memory per node", "RSS (bytes)")
	add(seriesNodeRead, "Block reads per node", "read (bytes/s)")
	add(seriesNodeWrite, "Block writes per node", "written (bytes/s)")
	add(seriesNodeDisk, "Disk use of each node's data directory", "disk (bytes)")
	add(seriesMachineCPU, "Machine CPU (all cores; clients included)", "busy (% of the machine)")
	add(seriesMachineIdle, "Machine CPU idle (iowait excluded)", "idle (% of the machine)")
	add(seriesMachineSteal, "Machine CPU stolen by the hypervisor", "steal (% of the machine)")
	h.Series[seriesOwnership] = result.SeriesMeta{Title: "Data owned per node at the end of the run", XLabel: "node", YLabel: "owned (%)"}
}

// timeSeries declares series over the run's elapsed time in h.
func timeSeries(h *result.Header) func(name, title, y string) {
	return func(name, title, y string) {
		h.Series[name] = result.SeriesMeta{Title: title, XLabel: "elapsed (s)", YLabel: y, XIsTime: true}
	}
}

// netSeries declares the per-host network series (a cluster on hosts).
func netSeries(h *result.Header) {
	add := timeSeries(h)
	add(seriesNetRx, "Network received per host (eth0; nodes and load host)", "received (bytes/s)")
	add(seriesNetTx, "Network sent per host (eth0; nodes and load host)", "sent (bytes/s)")
	add(seriesNetRxPackets, "Packets received per host (eth0)", "received (packets/s)")
	add(seriesNetTxPackets, "Packets sent per host (eth0)", "sent (packets/s)")
}

// budgetSeries declares the per-node budget series (a cluster with
// budgets): whether each node was bound by its budget, interval by
// interval (docs/scale-model.md); the disk series where some node has a
// disk rate.
func budgetSeries(h *result.Header, p budget.Plan) {
	add := timeSeries(h)
	add(seriesBudgetCPU, "CPU used per node, against its budget", "CPU (% of the node's budget)")
	add(seriesBudgetThrottled, "Held back by its CPU budget, per node", "throttled (% of the interval's periods)")
	add(seriesBudgetMemory, "Memory used per node, against its budget", "memory (% of the node's budget)")
	disk := p.Node.Disk > 0
	for _, b := range p.Nodes {
		disk = disk || b.Disk > 0
	}
	if disk {
		add(seriesBudgetDisk, "Disk I/O per node, against its budget", "read and written (% of the node's disk rate)")
	}
}

// probe samples every node until ctx ends and writes each figure as a
// point (NaN figures, unreadable ones, are skipped: the probe never stops
// the run).
func (es *expSession) probe(ctx context.Context) {
	x := es.x
	var last []probe.Target
	// The nodes' control groups and budgets, read with the targets (under
	// the lock), and each group's last reading, for the budget series.
	groups := map[string]budget.Group{}
	budgets := map[string]budget.Budget{}
	type reading struct {
		at time.Time
		u  budget.Usage
	}
	prev := map[string]reading{}
	var tally boundTally // what held the budgeted nodes back, over the run
	targets := func() []probe.Target {
		// Adding a node holds the lock for its whole join: keep probing
		// the nodes known before it.
		if !x.mu.TryLock() {
			return last
		}
		defer x.mu.Unlock()
		last = last[:0:0]
		for _, n := range x.cl.Nodes {
			if n.Remote {
				continue // no /proc here: probeRemote asks the database
			}
			pid := n.PID
			if n.Stopped {
				pid = 0
			}
			last = append(last, probe.Target{Name: n.Name, PID: pid, DataDir: n.DataDir})
			if n.Cgroup != nil {
				groups[n.Name], budgets[n.Name] = *n.Cgroup, x.cl.Budget.For(n.Name)
			}
		}
		return last
	}
	start := es.s.Started()
	var jvms jvmViews
	var asking sync.WaitGroup
	defer asking.Wait()
	s := probe.Sampler{Interval: x.sc.ProbeEvery.D(), Targets: targets, Sink: func(smp probe.Sample) {
		for name, pid := range jvms.due(smp.Nodes) {
			asking.Add(1)
			go func() {
				defer asking.Done()
				es.jvmView(ctx, name, pid)
			}()
		}
		at := smp.Time.Sub(start).Seconds()
		put := func(series, node string, v float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
			p := result.Point{Series: series, X: at, Y: v}
			if node != "" {
				p.Labels = map[string]string{"node": node}
			}
			_ = es.s.Point(p)
		}
		for _, n := range smp.Nodes {
			put(seriesNodeCPU, n.Name, n.CPUPercent)
			put(seriesNodeRSS, n.Name, n.RSSBytes)
			put(seriesNodeRead, n.Name, n.ReadBytesPerSec)
			put(seriesNodeWrite, n.Name, n.WriteBytesPerSec)
			put(seriesNodeDisk, n.Name, n.DiskBytes)
		}
		put(seriesMachineCPU, "", 100*smp.Machine.CPUBusy)
		put(seriesMachineIdle, "", 100*smp.Machine.CPUIdle)
		put(seriesMachineSteal, "", 100*smp.Machine.CPUSteal)
		tally.machine(smp.Machine, smp.Seconds)
		for name, g := range groups {
			u, err := g.Usage()
			if err != nil {
				continue // a node whose group is gone (removed) has no figure
			}
			if p, ok := prev[name]; ok {
				use := budget.Use(budgets[name], p.u, u, smp.Time.Sub(p.at).Seconds())
				put(seriesBudgetCPU, name, use.CPU)
				put(seriesBudgetThrottled, name, use.Throttled)
				put(seriesBudgetMemory, name, use.Memory)
				put(seriesBudgetDisk, name, use.Disk)
				if kills := tally.node(name, budgets[name], p.u, u, smp.Time.Sub(p.at).Seconds()); kills > 0 {
					_ = es.s.Event("oom-kill", fmt.Sprintf("%s: %d process(es) killed by the kernel for its memory budget (%s)", name, kills, budgets[name]))
				}
			}
			prev[name] = reading{smp.Time, u}
		}
	}}
	// Each group's first reading now, and its last once the run ended:
	// a run shorter than two probe intervals (PostgreSQL's 0.1 % of the
	// trajectory study, 0.1 s) still has what bound its nodes.
	targets()
	for name, g := range groups {
		if u, err := g.Usage(); err == nil {
			prev[name] = reading{time.Now(), u}
		}
	}
	s.Run(ctx)
	for name, g := range groups {
		p, ok := prev[name]
		u, err := g.Usage()
		if !ok || err != nil {
			continue
		}
		if kills := tally.node(name, budgets[name], p.u, u, time.Since(p.at).Seconds()); kills > 0 {
			_ = es.s.Event("oom-kill", fmt.Sprintf("%s: %d process(es) killed by the kernel for its memory budget (%s)", name, kills, budgets[name]))
		}
	}
	if v, ok := tally.verdict(); ok {
		es.s.AddExtra(v.extras)
		_ = es.s.Event("budget-bound", v.line)
	}
}

// jvmViews remembers the process of each node whose JVM was asked what it
// saw, so that each JVM is asked once: at its first sample, and again after
// a restart (a new process).
type jvmViews struct{ asked map[string]int }

// due returns the nodes (name to PID) of nodes whose running process is a
// JVM not asked yet, and marks them asked.
func (v *jvmViews) due(nodes []probe.NodeSample) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		if !n.Alive || n.PID == 0 || v.asked[n.Name] == n.PID {
			continue
		}
		if v.asked == nil {
			v.asked = map[string]int{}
		}
		v.asked[n.Name] = n.PID
		if _, ok := probe.JavaOf(n.PID); ok {
			out[n.Name] = n.PID
		}
	}
	return out
}

// jvmView records what node name's JVM (pid) saw of its machine, as a
// "jvm-view" event and the summary figures jvm_NODE_processors and
// jvm_NODE_heap_max_mib (issue 44: Java sizes itself from the node's
// budget, so a figure of a JVM node says with how many processors and
// how much heap it ran).
func (es *expSession) jvmView(ctx context.Context, name string, pid int) {
	j, err := probe.ReadJVM(ctx, pid)
	if ctx.Err() != nil {
		return // the run ended first
	}
	if err != nil {
		_ = es.s.Event("jvm-view", fmt.Sprintf("%s (pid %d): unreadable: %v", name, pid, err))
		return
	}
	_ = es.s.Event("jvm-view", fmt.Sprintf("%s (pid %d): %s", name, pid, j))
	es.s.AddExtra(map[string]float64{
		"jvm_" + name + "_processors":   float64(j.Processors),
		"jvm_" + name + "_heap_max_mib": float64(j.HeapMax) / (1 << 20),
	})
}

// ownership records how much of the data each node owns, as the engine
// reports it (Cassandra token ownership, Redis slots, HBase regions), with
// its mean and standard deviation over the nodes (the study's 16.68 % ±
// 1.23 %). Engines that do not spread data (a primary with replicas) have
// nothing to record.
func (es *expSession) ownership(ctx context.Context) {
	x := es.x
	x.mu.Lock()
	sts, err := x.eng.Status(ctx, x.cl)
	x.mu.Unlock()
	if err != nil {
		return
	}
	owned := ownedShares(sts)
	if len(owned) == 0 {
		return
	}
	for _, st := range sts {
		if v, ok := owned[nodeKey(st)]; ok {
			_ = es.s.Point(result.Point{Series: seriesOwnership, X: 0, Y: 100 * v, Labels: map[string]string{"category": nodeKey(st)}})
		}
	}
	mean, sd := probe.OwnershipStats(owned)
	es.s.SetExtra("ownership_mean_pct", 100*mean)
	es.s.SetExtra("ownership_sd_pct", 100*sd)
}

// ownedShares reads each node's share of the data from its status facts.
func ownedShares(sts []cluster.NodeStatus) map[string]float64 {
	out := map[string]float64{}
	total := 0.0
	counts := map[string]float64{}
	for _, st := range sts {
		if st.Role == "replica" {
			continue // a replica holds a copy of its master's share
		}
		if s, ok := st.Detail["owns"]; ok { // Cassandra: "16.7%"
			if v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64); err == nil {
				out[nodeKey(st)] = v / 100
			}
			continue
		}
		for _, k := range []string{"slots", "regions"} { // Redis, HBase
			if s, ok := st.Detail[k]; ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					counts[nodeKey(st)] = v
					total += v
				}
				break
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if total > 0 {
		for n, v := range counts {
			out[n] = v / total
		}
	}
	return out
}

// nodeKey names a status line: its node, or its address for servers
// fieldbench did not start as nodes of their own (HBase's in-process region
// servers).
func nodeKey(st cluster.NodeStatus) string {
	if st.Name != "" {
		return st.Name
	}
	return st.Addr
}

// remoteSeries maps what a database reports about its nodes
// (cluster.ResourceReporter) to the probe series it stands in for.
var remoteSeries = map[string]string{"cpu": seriesNodeCPU, "rss": seriesNodeRSS, "disk": seriesNodeDisk}

// remoteProbes says, for a cluster with nodes fieldbench did not start,
// which per-node series come from the database itself (and where the
// database takes them from) and which are not available (their /proc is
// not readable from here): nil, nil, "" when every node is local.
func (x *expRun) remoteProbes() (fromDB, unavailable []string, source string) {
	remote := false
	for _, n := range x.cl.Nodes {
		remote = remote || n.Remote
	}
	if !remote {
		return nil, nil, ""
	}
	got := map[string]bool{}
	if r, ok := x.eng.(cluster.ResourceReporter); ok {
		for _, k := range r.ReportedResources() {
			if s, ok := remoteSeries[k]; ok {
				got[s] = true
				fromDB = append(fromDB, s)
			}
		}
		if len(fromDB) > 0 {
			source = r.ResourceSource()
		}
	}
	for _, s := range []string{seriesNodeCPU, seriesNodeRSS, seriesNodeRead, seriesNodeWrite, seriesNodeDisk} {
		if !got[s] {
			unavailable = append(unavailable, s)
		}
	}
	sort.Strings(fromDB)
	return fromDB, unavailable, source
}

// probeRemote writes, every probe interval until ctx ends, what the
// database reports about each node fieldbench did not start: CPU (as % of
// one core, from the CPU time it reports between two readings), memory
// and disk, in the same series as the /proc probes.
func (es *expSession) probeRemote(ctx context.Context) {
	x := es.x
	r, ok := x.eng.(cluster.ResourceReporter)
	if !ok || len(r.ReportedResources()) == 0 {
		return
	}
	type cpuMark struct {
		secs float64
		at   time.Time
	}
	prev := map[string]cpuMark{}
	start := es.s.Started()
	tick := time.NewTicker(x.sc.ProbeEvery.D())
	defer tick.Stop()
	for {
		if !x.mu.TryLock() {
			// A node is joining: wait for the next tick.
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				continue
			}
		}
		qctx, cancel := context.WithTimeout(ctx, x.sc.ProbeEvery.D())
		res, err := r.Resources(qctx, x.cl)
		cancel()
		x.mu.Unlock()
		now := time.Now()
		at := now.Sub(start).Seconds()
		put := func(series, node string, v float64) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				_ = es.s.Point(result.Point{Series: series, X: at, Y: v, Labels: map[string]string{"node": node}})
			}
		}
		if err == nil {
			for name, nr := range res {
				if p, ok := prev[name]; ok && nr.CPUSeconds >= p.secs {
					put(seriesNodeCPU, name, 100*(nr.CPUSeconds-p.secs)/now.Sub(p.at).Seconds())
				}
				if !math.IsNaN(nr.CPUSeconds) {
					prev[name] = cpuMark{nr.CPUSeconds, now}
				}
				put(seriesNodeRSS, name, nr.RSSBytes)
				put(seriesNodeDisk, name, nr.DiskBytes)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// netHost is a host whose eth0 counters probeNet reads.
type netHost struct{ name, ns string }

// netHosts are the nodes on hosts and the load host, when the lock is
// free (a node joining holds it: the previous list is kept).
func (x *expRun) netHosts(last []netHost) []netHost {
	if !x.mu.TryLock() {
		return last
	}
	defer x.mu.Unlock()
	var out []netHost
	for _, n := range x.cl.Nodes {
		if n.Netns != "" {
			out = append(out, netHost{n.Name, n.Netns})
		}
	}
	if lh := x.loadHost; lh != nil {
		out = append(out, netHost{lh.Name, lh.NS})
	}
	return out
}

// probeNet reads every host's eth0 counters (vnet.HostCounters) every
// probe interval until ctx ends and writes what each received and sent
// per second over the interval; at the end, each host's totals over the
// run as extras (net_<host>_rx_bytes...). A host whose counters cannot be
// read in a period (its namespace gone) is skipped for it.
func (es *expSession) probeNet(ctx context.Context) {
	x := es.x
	type mark struct {
		c  vnet.Counters
		at time.Time
	}
	first, prev := map[string]mark{}, map[string]mark{}
	start := es.s.Started()
	var hosts []netHost
	tick := time.NewTicker(x.sc.ProbeEvery.D())
	defer tick.Stop()
	for {
		hosts = x.netHosts(hosts)
		for _, h := range hosts {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := vnet.HostCounters(qctx, h.ns)
			cancel()
			now := time.Now()
			if err != nil {
				continue
			}
			if _, ok := first[h.name]; !ok {
				first[h.name] = mark{c, now}
			}
			if p, ok := prev[h.name]; ok && c.RxBytes >= p.c.RxBytes && c.TxBytes >= p.c.TxBytes {
				dt := now.Sub(p.at).Seconds()
				at := now.Sub(start).Seconds()
				for _, v := range []struct {
					series string
					d      uint64
				}{
					{seriesNetRx, c.RxBytes - p.c.RxBytes}, {seriesNetTx, c.TxBytes - p.c.TxBytes},
					{seriesNetRxPackets, c.RxPackets - p.c.RxPackets}, {seriesNetTxPackets, c.TxPackets - p.c.TxPackets},
				} {
					_ = es.s.Point(result.Point{Series: v.series, X: at, Y: float64(v.d) / dt, Labels: map[string]string{"node": h.name}})
				}
			}
			prev[h.name] = mark{c, now}
		}
		select {
		case <-ctx.Done():
			for name, f := range first {
				l := prev[name]
				es.s.SetExtra("net_"+name+"_rx_bytes", float64(l.c.RxBytes-f.c.RxBytes))
				es.s.SetExtra("net_"+name+"_tx_bytes", float64(l.c.TxBytes-f.c.TxBytes))
				es.s.SetExtra("net_"+name+"_rx_packets", float64(l.c.RxPackets-f.c.RxPackets))
				es.s.SetExtra("net_"+name+"_tx_packets", float64(l.c.TxPackets-f.c.TxPackets))
			}
			return
		case <-tick.C:
		}
	}
}
