package experiment

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster"
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
	seriesOwnership  = "ownership"
)

// probeSeries declares the probe series in a run's header.
func probeSeries(h *result.Header) {
	if h.Series == nil {
		h.Series = map[string]result.SeriesMeta{}
	}
	add := func(name, title, y string) {
		h.Series[name] = result.SeriesMeta{Title: title, XLabel: "elapsed (s)", YLabel: y, XIsTime: true}
	}
	add(seriesNodeCPU, "CPU per node", "CPU (% of one core)")
	add(seriesNodeRSS, "Resident memory per node", "RSS (bytes)")
	add(seriesNodeRead, "Block reads per node", "read (bytes/s)")
	add(seriesNodeWrite, "Block writes per node", "written (bytes/s)")
	add(seriesNodeDisk, "Disk use of each node's data directory", "disk (bytes)")
	add(seriesMachineCPU, "Machine CPU (all cores; clients included)", "busy (% of the machine)")
	h.Series[seriesOwnership] = result.SeriesMeta{Title: "Data owned per node at the end of the run", XLabel: "node", YLabel: "owned (%)"}
}

// probe samples every node until ctx ends and writes each figure as a
// point (NaN figures, unreadable ones, are skipped: the probe never stops
// the run).
func (es *expSession) probe(ctx context.Context) {
	x := es.x
	var last []probe.Target
	targets := func() []probe.Target {
		// Adding a node holds the lock for its whole join: keep probing
		// the nodes known before it.
		if !x.mu.TryLock() {
			return last
		}
		defer x.mu.Unlock()
		last = last[:0:0]
		for _, n := range x.cl.Nodes {
			pid := n.PID
			if n.Stopped {
				pid = 0
			}
			last = append(last, probe.Target{Name: n.Name, PID: pid, DataDir: n.DataDir})
		}
		return last
	}
	start := es.s.Started()
	s := probe.Sampler{Interval: x.sc.ProbeEvery.D(), Targets: targets, Sink: func(smp probe.Sample) {
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
	}}
	s.Run(ctx)
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
