package runner

import (
	"sync"
	"sync/atomic"
	"time"
)

// schedule is an open loop's intended starts. Each goroutine that is free
// to run an operation claims the next start with one atomic add and sleeps
// until it on an alarm of its own, then calls the database itself. Why
// not one scheduler goroutine that hands each start to a worker: that
// hand-off (a wake-up of another goroutine, often on another thread) sat
// between the intended start and the call, inside every latency, and cost
// a second wake-up per operation; here the goroutine that wakes on time is
// the one that calls. wrk2 gives each connection its own schedule for the
// same reason.
type schedule struct {
	start time.Duration        // the schedule's origin on the mono clock
	rate  float64              // starts per second
	last  int64                // starts before the end (math.MaxInt64: no end)
	next  atomic.Int64         // the next start to claim
	gates atomic.Pointer[gate] // the latest grain's moment slept for (alarm.sleepGrain)

	mu     sync.Mutex
	alarms []*alarm // every sleeper's, to wake them all at the end
	ended  bool
}

func newSchedule(start time.Time, rate float64, last int64) *schedule {
	return &schedule{start: since(start), rate: rate, last: last}
}

// at is start k's intended time on the mono clock, computed from k alone so
// that rounding never accumulates over a long run.
func (s *schedule) at(k int64) time.Duration {
	return s.start + time.Duration(float64(k)*float64(time.Second)/s.rate)
}

// claim takes the next start; false when the schedule is over.
func (s *schedule) claim() (time.Duration, bool) {
	k := s.next.Add(1) - 1
	if k >= s.last {
		return 0, false
	}
	return s.at(k), true
}

// due is how many starts were due by the mono time t (at most the last).
func (s *schedule) due(t time.Duration) int64 {
	if t < s.start {
		return 0
	}
	return min(int64((t-s.start).Seconds()*s.rate)+1, s.last)
}

// alarm returns a new alarm for one sleeper, interrupted at once if the
// schedule has ended.
func (s *schedule) alarm() *alarm {
	a := newAlarm()
	a.pace(time.Duration(float64(time.Second) / s.rate))
	if a.grain > 0 {
		a.gates = &s.gates
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		a.interrupt()
	}
	s.alarms = append(s.alarms, a)
	return a
}

// interrupt wakes every sleeper, and makes every later sleep return at
// once.
func (s *schedule) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for _, a := range s.alarms {
		a.interrupt()
	}
}

// close releases the alarms once no sleeper is left.
func (s *schedule) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.alarms {
		a.close()
	}
	s.alarms = nil
}
