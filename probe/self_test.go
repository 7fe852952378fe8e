package probe

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSelf serves scripted readings: the first at Start, the second at Stop.
type fakeSelf struct {
	mu       sync.Mutex
	readings []SelfReading
	n        int
}

func (f *fakeSelf) read() (SelfReading, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.readings[min(f.n, len(f.readings)-1)]
	f.n++
	return r, true
}

// TestSelfMeterFlagsABusyClient uses injected CPU readings and a fake clock:
// 10 s of wall time on GOMAXPROCS CPUs, with CPU use just under and just
// over 80 % of what the process may use.
func TestSelfMeterFlagsABusyClient(t *testing.T) {
	t.Parallel()
	cpus := float64(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name  string
		share float64
		busy  bool
	}{
		{"idle", 0.10, false},
		{"just under", 0.79, false},
		{"busy", 0.85, true},
		{"saturated", 1.0, true},
	} {
		used := tc.share * 10 * cpus
		f := &fakeSelf{readings: []SelfReading{
			{UserSeconds: 100, SysSeconds: 20, MaxRSSBytes: 30 << 20},
			{UserSeconds: 100 + used*0.75, SysSeconds: 20 + used*0.25, MaxRSSBytes: 50 << 20},
		}}
		t0 := time.Unix(1000, 0)
		clock := []time.Time{t0, t0.Add(10 * time.Second)}
		now := func() time.Time { c := clock[0]; clock = clock[1:]; return c }
		gor := 7
		m := startSelf(time.Hour, f.read, now, func() int { return gor })
		gor = 100_007 // read at Stop
		c := m.Stop(100_000)
		if c.Busy != tc.busy || (c.Warning() != "") != tc.busy {
			t.Errorf("%s: busy %v (share %.2f), warning %q", tc.name, c.Busy, c.CPUShare(), c.Warning())
		}
		if tc.busy && !strings.Contains(c.Warning(), "80 %") {
			t.Errorf("%s: warning %q does not name the threshold", tc.name, c.Warning())
		}
		if d := c.CPUUserSeconds + c.CPUSysSeconds - used; d > 1e-6 || d < -1e-6 || c.MaxRSSBytes != 50<<20 || c.WallSeconds != 10 {
			t.Errorf("%s: cost %+v: CPU must be the difference of the readings, RSS the last", tc.name, c)
		}
		if c.PeakGoroutines != 100_007 || c.Clients != 100_000 {
			t.Errorf("%s: peak goroutines %d, clients %d", tc.name, c.PeakGoroutines, c.Clients)
		}
	}
}

// TestSelfMeterReadsTheProcess reads the real process: some RSS, CPU spent
// by a loop, and goroutines that were alive when sampled.
func TestSelfMeterReadsTheProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("getrusage is read on Linux only")
	}
	m := StartSelf(time.Millisecond)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 500 {
		wg.Add(1)
		go func() { defer wg.Done(); <-stop }()
	}
	x := 0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	c := m.Stop(500)
	close(stop)
	wg.Wait()
	if c.MaxRSSBytes < 1<<20 || c.CPUUserSeconds+c.CPUSysSeconds <= 0 || c.PeakGoroutines < 500 || c.WallSeconds <= 0 || x == 0 {
		t.Fatalf("cost %+v: want RSS ≥ 1 MiB, some CPU, ≥ 500 goroutines", c)
	}
	if again := m.Stop(1); again != c {
		t.Fatal("Stop must return the same figures when called again")
	}
}
