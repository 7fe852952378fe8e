package probe

import (
	"math"
	"testing"
	"time"
)

func TestNodeRates(t *testing.T) {
	t.Parallel()
	tg := Target{Name: "n1", PID: 100, DataDir: "/d"}
	base := Counters{Target: tg, Alive: true, StartTicks: 5000, Procs: 3, CPUSeconds: 10,
		RSSBytes: 1 << 20, PSSBytes: 1 << 19, ReadBytes: 1000, WriteBytes: 2000, DiskBytes: 4096, Uptime: 100}
	later := func(f func(*Counters)) Counters {
		c := base
		c.Uptime = 105
		f(&c)
		return c
	}
	nan := math.NaN()
	tests := []struct {
		name    string
		prev    Counters
		hadPrev bool
		cur     Counters
		// want: CPUPercent, CPUShare, Read/s, Write/s
		cpu, share, rd, wr float64
		alive              bool
		unknown            []string
	}{
		{
			name: "same process", prev: base, hadPrev: true,
			cur: later(func(c *Counters) { c.CPUSeconds = 15; c.ReadBytes = 6000; c.WriteBytes = 12000 }),
			// 5 s of CPU over 5 s = 100 % of a core, half of 2 cores
			cpu: 100, share: 0.5, rd: 1000, wr: 2000, alive: true,
		},
		{
			name: "restarted during the interval counts from zero", prev: base, hadPrev: true,
			cur: later(func(c *Counters) {
				c.Target.PID, c.StartTicks = 200, 10200 // started at 102 s > 100 s
				c.CPUSeconds, c.ReadBytes, c.WriteBytes = 1, 500, 50
			}),
			cpu: 20, share: 0.1, rd: 100, wr: 10, alive: true,
		},
		{
			name: "no earlier reading", hadPrev: false, cur: later(func(*Counters) {}),
			cpu: nan, share: nan, rd: nan, wr: nan, alive: true, unknown: []string{"cpu", "io"},
		},
		{
			name: "new PID that started before the previous reading", prev: base, hadPrev: true,
			cur: later(func(c *Counters) { c.Target.PID, c.StartTicks = 300, 100 }),
			cpu: nan, share: nan, rd: nan, wr: nan, alive: true, unknown: []string{"cpu", "io"},
		},
		{
			name: "counters went backwards", prev: base, hadPrev: true,
			cur: later(func(c *Counters) { c.CPUSeconds = 9; c.WriteBytes = 10 }),
			cpu: nan, share: nan, rd: nan, wr: nan, alive: true, unknown: []string{"cpu", "io"},
		},
		{
			name: "killed node uses nothing", prev: base, hadPrev: true,
			cur: Counters{Target: tg, DiskBytes: 4096, Uptime: 105},
		},
		{
			name: "unreadable io", prev: base, hadPrev: true,
			cur: later(func(c *Counters) { c.CPUSeconds = 10.5; c.Unknown = map[string]string{"io": "permission denied"} }),
			cpu: 10, share: 0.05, rd: nan, wr: nan, alive: true, unknown: []string{"io"},
		},
	}
	same := func(a, b float64) bool {
		return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-9
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeRates(tt.prev, tt.hadPrev, tt.cur, 5, 2)
			if got.Alive != tt.alive || !same(got.CPUPercent, tt.cpu) || !same(got.CPUShare, tt.share) ||
				!same(got.ReadBytesPerSec, tt.rd) || !same(got.WriteBytesPerSec, tt.wr) {
				t.Errorf("nodeRates = alive %v cpu %v%% share %v read %v/s write %v/s; want %v %v %v %v %v",
					got.Alive, got.CPUPercent, got.CPUShare, got.ReadBytesPerSec, got.WriteBytesPerSec,
					tt.alive, tt.cpu, tt.share, tt.rd, tt.wr)
			}
			if got.DiskBytes != 4096 {
				t.Errorf("DiskBytes = %v, want 4096", got.DiskBytes)
			}
			if len(got.Unknown) != len(tt.unknown) {
				t.Errorf("Unknown = %v, want keys %v", got.Unknown, tt.unknown)
			}
			for _, k := range tt.unknown {
				if got.Unknown[k] == "" {
					t.Errorf("Unknown[%q] empty; Unknown = %v", k, got.Unknown)
				}
			}
		})
	}
}

func TestMachineRates(t *testing.T) {
	t.Parallel()
	prev := MachineCounters{CPU: cpuTimes{User: 100, System: 50, Idle: 800, IOWait: 50},
		PageIn: 0, PageOut: 1 << 20, LoopbackRx: 1000, LoopbackTx: 1000}
	cur := MachineCounters{CPU: cpuTimes{User: 250, System: 100, Idle: 1000, IOWait: 100},
		MemTotal: 8 << 30, MemFree: 1 << 30, MemAvailable: 4 << 30,
		PageIn: 4 << 20, PageOut: 3 << 20, LoopbackRx: 3000, LoopbackTx: 5000}
	got := machineRates(prev, cur, 2)
	// ticks elapsed: 150+50+200+50 = 450; idle 200/450, iowait 50/450
	if math.Abs(got.CPUIdle-200.0/450) > 1e-12 || math.Abs(got.CPUIOWait-50.0/450) > 1e-12 ||
		math.Abs(got.CPUBusy-200.0/450) > 1e-12 {
		t.Errorf("CPU busy/idle/iowait = %v %v %v", got.CPUBusy, got.CPUIdle, got.CPUIOWait)
	}
	if got.DiskReadBytesPerSec != 2<<20 || got.DiskWriteBytesPerSec != 1<<20 ||
		got.LoopbackRxBytesPerSec != 1000 || got.LoopbackTxBytesPerSec != 2000 ||
		got.MemFreeBytes != 1<<30 || got.MemAvailableBytes != 4<<30 || len(got.Unknown) != 0 {
		t.Errorf("machineRates = %+v", got)
	}
	// Steal: 45 of the 450+45 ticks went to another machine.
	stolen := cur
	stolen.CPU.Steal = prev.CPU.Steal + 45
	if got := machineRates(prev, stolen, 2); math.Abs(got.CPUSteal-45.0/495) > 1e-12 || math.Abs(got.CPUIdle-200.0/495) > 1e-12 {
		t.Errorf("with steal: idle %v, steal %v; want %v, %v", got.CPUIdle, got.CPUSteal, 200.0/495, 45.0/495)
	}
	if got.CPUSteal != 0 {
		t.Errorf("no steal ticks: steal %v", got.CPUSteal)
	}
	cur.Unknown = map[string]string{"loopback": "no lo"}
	got = machineRates(prev, cur, 2)
	if !math.IsNaN(got.LoopbackRxBytesPerSec) || got.Unknown["loopback"] == "" || math.IsNaN(got.CPUBusy) {
		t.Errorf("unknown loopback: %+v", got)
	}
}

func TestReadMachineCountersReal(t *testing.T) {
	t.Parallel()
	a := ReadMachineCounters()
	time.Sleep(50 * time.Millisecond)
	b := ReadMachineCounters()
	if len(b.Unknown) != 0 {
		t.Fatalf("unknown machine figures on Linux: %v", b.Unknown)
	}
	if b.MemTotal <= 0 || b.MemAvailable <= 0 || b.MemAvailable > b.MemTotal || b.LoopbackRx <= 0 {
		t.Errorf("implausible counters: %+v", b)
	}
	s := machineRates(a, b, 0.05)
	if sum := s.CPUBusy + s.CPUIdle + s.CPUIOWait; !(math.Abs(sum-1) < 1e-9) {
		t.Errorf("busy+idle+iowait = %v, want 1 (%+v)", sum, s)
	}
}
