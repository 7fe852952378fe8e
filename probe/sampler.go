package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultInterval is the study's probe period (vmstat every 5 s).
const DefaultInterval = 5 * time.Second

// MachineCounters is one reading of machine-wide figures. Per-node network
// traffic is not observable when every node is a process on the same
// loopback interface (the kernel counts bytes per interface, not per
// process), so loopback bytes are recorded for the machine only.
type MachineCounters struct {
	// CPU is the aggregate "cpu" line of /proc/stat in clock ticks.
	CPU cpuTimes
	// Memory from /proc/meminfo, bytes. MemFree is vmstat's "free" (what
	// the study charted); MemAvailable also counts reclaimable page cache.
	MemTotal, MemFree, MemAvailable int64
	// PageIn and PageOut are /proc/vmstat pgpgin/pgpgout in bytes: all
	// block I/O of the machine, vmstat's bi/bo.
	PageIn, PageOut int64
	// LoopbackRx and LoopbackTx are the "lo" line of /proc/net/dev.
	LoopbackRx, LoopbackTx int64
	// Unknown maps a figure ("cpu", "memory", "blockio", "loopback") to why
	// it could not be read.
	Unknown map[string]string
}

func (m *MachineCounters) unknown(figure string, err error) {
	if m.Unknown == nil {
		m.Unknown = map[string]string{}
	}
	m.Unknown[figure] = err.Error()
}

// cpuTimes are the first eight columns of a /proc/stat cpu line (guest time
// is already inside user and nice, so it is not added again).
type cpuTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

func (c cpuTimes) total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// parseCPULine parses the aggregate "cpu ..." line of /proc/stat.
func parseCPULine(text string) (cpuTimes, error) {
	var c cpuTimes
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return c, fmt.Errorf("/proc/stat: cpu line has %d fields", len(f))
		}
		dst := []*uint64{&c.User, &c.Nice, &c.System, &c.Idle, &c.IOWait, &c.IRQ, &c.SoftIRQ, &c.Steal}
		for i, d := range dst {
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return c, fmt.Errorf("/proc/stat: %w", err)
			}
			*d = v
		}
		return c, nil
	}
	return c, errors.New("/proc/stat: no cpu line")
}

// parseMeminfo returns MemTotal, MemFree and MemAvailable in bytes.
func parseMeminfo(text string) (total, free, avail int64, err error) {
	found := 0
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "MemTotal":
			dst = &total
		case "MemFree":
			dst = &free
		case "MemAvailable":
			dst = &avail
		default:
			continue
		}
		n, err := parseKB(v)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("meminfo %s: %w", k, err)
		}
		*dst = n
		found++
	}
	if found < 3 {
		return total, free, avail, errors.New("meminfo: MemTotal/MemFree/MemAvailable missing")
	}
	return total, free, avail, nil
}

// parseVMStat returns pgpgin and pgpgout of /proc/vmstat in bytes (the
// kernel counts them in KiB whatever the page size).
func parseVMStat(text string) (in, out int64, err error) {
	found := 0
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok || (k != "pgpgin" && k != "pgpgout") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("vmstat %s: %w", k, err)
		}
		if k == "pgpgin" {
			in = n * 1024
		} else {
			out = n * 1024
		}
		found++
	}
	if found < 2 {
		return in, out, errors.New("vmstat: pgpgin/pgpgout missing")
	}
	return in, out, nil
}

// parseNetDev returns the receive and transmit bytes of iface from
// /proc/net/dev.
func parseNetDev(text, iface string) (rx, tx int64, err error) {
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != iface {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			return 0, 0, fmt.Errorf("net/dev %s: %d fields", iface, len(f))
		}
		rx, err1 := strconv.ParseInt(f[0], 10, 64)
		tx, err2 := strconv.ParseInt(f[8], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("net/dev %s: %w", iface, err)
		}
		return rx, tx, nil
	}
	return 0, 0, fmt.Errorf("net/dev: no interface %s", iface)
}

// ReadMachineCounters reads the machine-wide figures; it never fails, what
// cannot be read is named in Unknown.
func ReadMachineCounters() MachineCounters {
	var m MachineCounters
	var err error
	if m.CPU, err = parseCPULine(readFile(procRoot + "/stat")); err != nil {
		m.unknown("cpu", err)
	}
	if m.MemTotal, m.MemFree, m.MemAvailable, err = parseMeminfo(readFile(procRoot + "/meminfo")); err != nil {
		m.unknown("memory", err)
	}
	if m.PageIn, m.PageOut, err = parseVMStat(readFile(procRoot + "/vmstat")); err != nil {
		m.unknown("blockio", err)
	}
	if m.LoopbackRx, m.LoopbackTx, err = parseNetDev(readFile(procRoot+"/net/dev"), "lo"); err != nil {
		m.unknown("loopback", err)
	}
	return m
}

// NodeSample is one node's figures over one interval. A figure that is not
// known is NaN and Unknown says why (NaN does not survive encoding/json:
// convert before writing). A node that is not running is not an error: it
// uses no CPU, memory or I/O, so those are 0 with Alive false; its disk use
// is still measured.
type NodeSample struct {
	Name  string
	PID   int
	Alive bool
	Procs int // live processes in the node's tree
	// CPUPercent is CPU time over the interval as % of one core (200 = two
	// cores busy); CPUShare is the same as a fraction of the whole machine.
	CPUPercent float64
	CPUShare   float64
	// RSSBytes and PSSBytes are levels at the end of the interval.
	RSSBytes float64
	PSSBytes float64
	// ReadBytesPerSec and WriteBytesPerSec are block I/O rates.
	ReadBytesPerSec  float64
	WriteBytesPerSec float64
	// DiskBytes is the data directory's allocated size at the end.
	DiskBytes float64
	// Unknown maps a figure ("cpu", "rss", "pss", "io", "disk") to why it
	// is NaN.
	Unknown map[string]string
}

// MachineSample is the machine's figures over one interval; NaN = unknown.
type MachineSample struct {
	// CPUBusy, CPUIdle and CPUIOWait are fractions of all cores' time
	// (they sum to 1); CPUIdle is vmstat's "id" (iowait excluded), the
	// figure the study charted.
	CPUBusy, CPUIdle, CPUIOWait float64
	// CPUSteal is the share of the busy time the hypervisor gave to
	// another machine (/proc/stat's steal): on a virtual machine, time
	// a node's budget counted that it never had.
	CPUSteal float64
	// Memory levels in bytes at the end of the interval.
	MemTotalBytes, MemFreeBytes, MemAvailableBytes float64
	// DiskRead/WriteBytesPerSec: all block I/O of the machine (vmstat bi/bo).
	DiskReadBytesPerSec, DiskWriteBytesPerSec float64
	// Loopback traffic of the whole machine: every node, every client.
	LoopbackRxBytesPerSec, LoopbackTxBytesPerSec float64
	Unknown                                      map[string]string
}

// Sample is what the Sampler hands its sink once per interval.
type Sample struct {
	Time    time.Time // end of the interval (wall clock)
	Seconds float64   // length of the interval the rates are over
	Nodes   []NodeSample
	Machine MachineSample
}

// Sampler probes a changing set of nodes every Interval and calls Sink
// with rates over the interval. It never stops a benchmark: unreadable
// figures become NaN with a reason, a killed node samples as not alive.
type Sampler struct {
	// Interval between samples; DefaultInterval when zero.
	Interval time.Duration
	// Targets returns the nodes to probe now; it is called once per sample
	// so nodes added or killed during the run are followed. Names must be
	// unique: a node's rates are computed against the previous reading of
	// the same Name.
	Targets func() []Target
	// Sink receives every sample, on the sampler's goroutine: it must not
	// block for long (a slow sink delays the next sample; the rates stay
	// right because they use the measured interval).
	Sink func(Sample)
	// Cores is the machine's core count for CPUShare; runtime.NumCPU when
	// zero.
	Cores int
}

// reading is one probe of everything at one instant.
type reading struct {
	at      time.Time
	nodes   map[string]Counters
	machine MachineCounters
}

func (s *Sampler) read(ctx context.Context) reading {
	var targets []Target
	if s.Targets != nil {
		targets = s.Targets()
	}
	r := reading{at: time.Now(), nodes: make(map[string]Counters, len(targets))}
	r.machine = ReadMachineCounters()
	for _, c := range ReadCounters(ctx, targets) {
		r.nodes[c.Target.Name] = c
	}
	return r
}

// Run samples until ctx is done and then returns promptly (a disk walk in
// progress is abandoned). It takes a baseline at once and delivers a
// sample at every Interval after it, on a fixed grid so samples line up
// with the run's timeline; a grid point that comes less than half an
// Interval after the last reading (because a reading or the sink was slow)
// is skipped rather than sampled twice in quick succession, since rates
// over a very short interval are mostly noise. It starts no goroutine.
func (s *Sampler) Run(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	cores := s.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	prev := s.read(ctx)
	next := prev.at.Add(interval)
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		cur := s.read(ctx)
		if ctx.Err() != nil {
			return // partial disk walks: do not deliver
		}
		if s.Sink != nil {
			s.Sink(rates(prev, cur, cores))
		}
		prev = cur
		for next.Sub(prev.at) < interval/2 || !next.After(time.Now()) {
			next = next.Add(interval)
		}
		timer.Reset(time.Until(next))
	}
}

// rates turns two readings into a Sample. Nodes come out in the order of
// their names so charts and tests are stable.
func rates(prev, cur reading, cores int) Sample {
	dt := cur.at.Sub(prev.at).Seconds()
	out := Sample{Time: cur.at, Seconds: dt, Machine: machineRates(prev.machine, cur.machine, dt)}
	names := make([]string, 0, len(cur.nodes))
	for n := range cur.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p, had := prev.nodes[n]
		out.Nodes = append(out.Nodes, nodeRates(p, had, cur.nodes[n], dt, cores))
	}
	return out
}

// nodeRates computes one node's figures over dt seconds. The counters of
// cur count from zero when the root process started after the previous
// reading (a node restarted or added during the interval); with no usable
// earlier reading the rates are unknown. A counter that went backwards
// (processes left the tree without being reaped inside it) is unknown
// rather than a negative rate.
func nodeRates(prev Counters, hadPrev bool, cur Counters, dt float64, cores int) NodeSample {
	ns := NodeSample{Name: cur.Target.Name, PID: cur.Target.PID, Alive: cur.Alive, Procs: cur.Procs}
	set := func(dst *float64, figure string, v float64) {
		if _, bad := cur.Unknown[figure]; bad {
			*dst = math.NaN()
			ns.unknown(figure, cur.Unknown[figure])
			return
		}
		*dst = v
	}
	set(&ns.DiskBytes, "disk", float64(cur.DiskBytes))
	if !cur.Alive {
		return ns // uses nothing; zero figures
	}
	set(&ns.RSSBytes, "rss", float64(cur.RSSBytes))
	set(&ns.PSSBytes, "pss", float64(cur.PSSBytes))

	var base Counters // zero: counts since the process started
	switch {
	case hadPrev && prev.Alive && prev.Target.PID == cur.Target.PID && prev.StartTicks == cur.StartTicks:
		base = prev
	case hadPrev && float64(cur.StartTicks)/clockTicks >= prev.Uptime && prev.Uptime > 0:
		// started during the interval: all its counts are in it
	default:
		ns.CPUPercent, ns.CPUShare = math.NaN(), math.NaN()
		ns.ReadBytesPerSec, ns.WriteBytesPerSec = math.NaN(), math.NaN()
		ns.unknown("cpu", "no earlier reading of this process")
		ns.unknown("io", "no earlier reading of this process")
		return ns
	}
	if dt <= 0 {
		dt = math.SmallestNonzeroFloat64
	}
	cpu := cur.CPUSeconds - base.CPUSeconds
	if why, bad := cur.Unknown["cpu"]; bad || cpu < 0 {
		if !bad {
			why = "CPU time went backwards (a process left the tree)"
		}
		ns.CPUPercent, ns.CPUShare = math.NaN(), math.NaN()
		ns.unknown("cpu", why)
	} else {
		ns.CPUPercent = 100 * cpu / dt
		ns.CPUShare = cpu / dt / float64(cores)
	}
	rd, wr := cur.ReadBytes-base.ReadBytes, cur.WriteBytes-base.WriteBytes
	if why, bad := cur.Unknown["io"]; bad || rd < 0 || wr < 0 {
		if !bad {
			why = "I/O counters went backwards (a process left the tree)"
		}
		ns.ReadBytesPerSec, ns.WriteBytesPerSec = math.NaN(), math.NaN()
		ns.unknown("io", why)
	} else {
		ns.ReadBytesPerSec = float64(rd) / dt
		ns.WriteBytesPerSec = float64(wr) / dt
	}
	return ns
}

func (ns *NodeSample) unknown(figure, why string) {
	if ns.Unknown == nil {
		ns.Unknown = map[string]string{}
	}
	ns.Unknown[figure] = why
}

func (ms *MachineSample) unknown(figure, why string) {
	if ms.Unknown == nil {
		ms.Unknown = map[string]string{}
	}
	ms.Unknown[figure] = why
}

// machineRates computes the machine's figures over dt seconds.
func machineRates(prev, cur MachineCounters, dt float64) MachineSample {
	ms := MachineSample{}
	bad := func(figure string) (string, bool) {
		if why, ok := cur.Unknown[figure]; ok {
			return why, true
		}
		if why, ok := prev.Unknown[figure]; ok {
			return "previous reading: " + why, true
		}
		return "", false
	}
	nan := math.NaN()
	if why, ok := bad("cpu"); ok {
		ms.CPUBusy, ms.CPUIdle, ms.CPUIOWait, ms.CPUSteal = nan, nan, nan, nan
		ms.unknown("cpu", why)
	} else if tot := float64(cur.CPU.total()) - float64(prev.CPU.total()); tot <= 0 {
		ms.CPUBusy, ms.CPUIdle, ms.CPUIOWait, ms.CPUSteal = nan, nan, nan, nan
		ms.unknown("cpu", "no CPU ticks elapsed")
	} else {
		idle := float64(cur.CPU.Idle) - float64(prev.CPU.Idle)
		wait := float64(cur.CPU.IOWait) - float64(prev.CPU.IOWait)
		ms.CPUIdle, ms.CPUIOWait = idle/tot, wait/tot
		ms.CPUSteal = (float64(cur.CPU.Steal) - float64(prev.CPU.Steal)) / tot
		ms.CPUBusy = 1 - ms.CPUIdle - ms.CPUIOWait
	}
	if why, ok := cur.Unknown["memory"]; ok {
		ms.MemTotalBytes, ms.MemFreeBytes, ms.MemAvailableBytes = nan, nan, nan
		ms.unknown("memory", why)
	} else {
		ms.MemTotalBytes = float64(cur.MemTotal)
		ms.MemFreeBytes = float64(cur.MemFree)
		ms.MemAvailableBytes = float64(cur.MemAvailable)
	}
	rate := func(a, b int64) float64 {
		if dt <= 0 || b < a {
			return nan
		}
		return float64(b-a) / dt
	}
	if why, ok := bad("blockio"); ok {
		ms.DiskReadBytesPerSec, ms.DiskWriteBytesPerSec = nan, nan
		ms.unknown("blockio", why)
	} else {
		ms.DiskReadBytesPerSec = rate(prev.PageIn, cur.PageIn)
		ms.DiskWriteBytesPerSec = rate(prev.PageOut, cur.PageOut)
	}
	if why, ok := bad("loopback"); ok {
		ms.LoopbackRxBytesPerSec, ms.LoopbackTxBytesPerSec = nan, nan
		ms.unknown("loopback", why)
	} else {
		ms.LoopbackRxBytesPerSec = rate(prev.LoopbackRx, cur.LoopbackRx)
		ms.LoopbackTxBytesPerSec = rate(prev.LoopbackTx, cur.LoopbackTx)
	}
	return ms
}

// OwnershipStats is the mean and standard deviation of the share of data
// each node owns (as nodetool status prints it; the study: 16.68 % ±
// 1.23 % over 6 nodes), in the unit given (percent or fraction). The SD is
// the population SD (divisor n): the nodes are the whole cluster, not a
// sample of one, and the study does not say which it used (with 6 nodes
// the sample SD would be 9.5 % larger). NaN for an empty map.
func OwnershipStats(owned map[string]float64) (mean, sd float64) {
	if len(owned) == 0 {
		return math.NaN(), math.NaN()
	}
	// Sum in key order so the result does not depend on map order.
	keys := make([]string, 0, len(owned))
	for k := range owned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mean += owned[k]
	}
	mean /= float64(len(owned))
	var ss float64
	for _, k := range keys {
		d := owned[k] - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(owned)))
}
