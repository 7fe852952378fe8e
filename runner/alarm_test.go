package runner

import (
	"testing"
	"time"
)

// TestAlarmNeverEarly: whatever the wait (spun, slept, already past), the
// alarm returns at or after the moment asked, never before it: an
// operation started early would make its latency from the intended start
// shorter than the database took.
func TestAlarmNeverEarly(t *testing.T) {
	t.Parallel()
	a := newAlarm()
	defer a.close()
	for _, d := range []time.Duration{-time.Millisecond, 0, time.Microsecond, 4 * time.Microsecond, 30 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		at := mono() + d
		if !a.sleepUntil(at) {
			t.Fatalf("wait %s: interrupted, no one interrupted it", d)
		}
		if now := mono(); now < at {
			t.Fatalf("wait %s: returned %s early", d, at-now)
		}
	}
}

// TestAlarmInterrupt: an interrupt wakes a sleep in progress at once and
// makes every later one return false.
func TestAlarmInterrupt(t *testing.T) {
	t.Parallel()
	for _, precise := range []bool{true, false} {
		a := newAlarm()
		if !precise && a.precise != nil {
			a.close() // the Go timer path
			a.timer = time.NewTimer(time.Hour)
			a.timer.Stop()
		}
		time.AfterFunc(50*time.Millisecond, a.interrupt)
		t0 := time.Now()
		if a.sleepUntil(mono() + time.Minute) {
			t.Fatalf("precise %v: a minute's sleep returned true", precise)
		}
		if took := time.Since(t0); took > 20*time.Second {
			t.Fatalf("precise %v: the interrupt took %s", precise, took)
		}
		if a.sleepUntil(mono() + time.Second) {
			t.Fatalf("precise %v: a sleep after the interrupt returned true", precise)
		}
		a.close()
	}
}

// TestAlarmPreciseBounded: past maxPrecise open precise timers, alarms use
// Go timers (file descriptors stay for the database's connections), and
// closing one gives its descriptor back.
func TestAlarmPreciseBounded(t *testing.T) {
	// Not parallel: it counts the process's precise timers.
	first := newAlarm()
	if first.precise == nil {
		first.close()
		t.Skip("no precise timer on this system")
	}
	var as []*alarm
	for preciseOpen.Load() < maxPrecise {
		as = append(as, newAlarm())
	}
	over := newAlarm()
	if over.precise != nil {
		t.Fatalf("alarm %d past the bound of %d got a precise timer", preciseOpen.Load(), maxPrecise)
	}
	first.close()
	again := newAlarm()
	if again.precise == nil {
		t.Fatal("a closed precise timer was not given back")
	}
	for _, a := range append(as, over, again) {
		a.close()
	}
}
