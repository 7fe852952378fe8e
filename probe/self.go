package probe

import (
	"runtime"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// SelfReading is one reading of the process's own counters.
type SelfReading struct {
	UserSeconds, SysSeconds float64 // CPU since the process started
	MaxRSSBytes             int64   // peak resident set size so far; 0 = unknown
}

// ReadSelf reads the process's own CPU seconds and peak RSS (getrusage on
// Linux); ok is false where they cannot be read.
func ReadSelf() (r SelfReading, ok bool) { return readSelf() }

// SelfMeter measures the client's own cost over a run: CPU (user, system)
// between Start and Stop, the process's peak RSS, and the peak number of
// goroutines, sampled every period (the Go runtime counts them; sampling
// cannot miss a peak by much when clients are long-lived goroutines).
type SelfMeter struct {
	read    func() (SelfReading, bool)
	now     func() time.Time
	start   time.Time
	first   SelfReading
	known   bool
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	peakGor int
	once    sync.Once
	cost    result.ClientCost
}

// StartSelf starts measuring now; period <= 0 samples goroutines every
// 100 ms.
func StartSelf(period time.Duration) *SelfMeter {
	return startSelf(period, readSelf, time.Now, runtime.NumGoroutine)
}

// startSelf is StartSelf with its readings injected (tests fake a busy
// client without loading the machine).
func startSelf(period time.Duration, read func() (SelfReading, bool), now func() time.Time, goroutines func() int) *SelfMeter {
	if period <= 0 {
		period = 100 * time.Millisecond
	}
	m := &SelfMeter{read: read, now: now, stop: make(chan struct{}), done: make(chan struct{})}
	m.first, m.known = read()
	m.start = now()
	m.sample(goroutines())
	go func() {
		defer close(m.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				m.sample(goroutines())
			case <-m.stop:
				m.sample(goroutines())
				return
			}
		}
	}()
	return m
}

func (m *SelfMeter) sample(n int) {
	m.mu.Lock()
	m.peakGor = max(m.peakGor, n)
	m.mu.Unlock()
}

// Stop ends the measurement and returns the client's cost for clients
// clients; Busy is set when it used more than result.BusyShare of the CPUs
// it may use. Later calls return the same figures.
func (m *SelfMeter) Stop(clients int) result.ClientCost {
	m.once.Do(func() {
		close(m.stop)
		<-m.done
		last, ok := m.read()
		c := result.ClientCost{
			WallSeconds: m.now().Sub(m.start).Seconds(),
			CPUs:        runtime.GOMAXPROCS(0),
			Clients:     clients,
		}
		m.mu.Lock()
		c.PeakGoroutines = m.peakGor
		m.mu.Unlock()
		if ok && m.known {
			c.CPUUserSeconds = last.UserSeconds - m.first.UserSeconds
			c.CPUSysSeconds = last.SysSeconds - m.first.SysSeconds
			c.MaxRSSBytes = last.MaxRSSBytes
		}
		c.Busy = c.CPUShare() > result.BusyShare
		m.cost = c
	})
	return m.cost
}
