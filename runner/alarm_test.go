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

// TestAlarmPace: a schedule's gap between starts bounds the early wake-up
// to a quarter of it, and only starts closer than coarseGap get a grain;
// with one, a sleep for a moment ahead returns no sooner than that moment
// rounded up to the grain (wakes shared by several starts).
func TestAlarmPace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gap       time.Duration
		wantEarly time.Duration
		wantGrain time.Duration
	}{
		{time.Second, maxEarly, 0},      // 1/s
		{time.Millisecond, maxEarly, 0}, // 1,000/s: a quarter is 250 µs
		{100 * time.Microsecond, 25 * time.Microsecond, 0},
		{coarseGap, coarseGap / 4, 0},                                 // 10,000/s
		{50 * time.Microsecond, 12500 * time.Nanosecond, coarseGrain}, // 20,000/s
		{10 * time.Microsecond, 2500 * time.Nanosecond, coarseGrain},  // 100,000/s
	} {
		a := newAlarm()
		a.early = time.Millisecond // learned on a slower schedule
		a.pace(tc.gap)
		if a.maxEarly != tc.wantEarly || a.early > a.maxEarly || a.grain != tc.wantGrain {
			t.Errorf("gap %s: maxEarly %s early %s grain %s, want %s, at most that, %s", tc.gap, a.maxEarly, a.early, a.grain, tc.wantEarly, tc.wantGrain)
		}
		if a.grain > 0 {
			at := mono() + 30*time.Microsecond
			a.sleepUntil(at)
			if now, want := mono(), (at+a.grain-1)/a.grain*a.grain; now < want {
				t.Errorf("gap %s: woke %s before the grain's moment", tc.gap, want-now)
			}
		}
		a.close()
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

// TestAlarmGrainGate: the sleepers of one schedule due at the same grain's
// moment all wake, none before the moment, and one timer serves them
// (the gate's sleeper); an interrupt of the schedule wakes the gate's
// waiters too, with false.
func TestAlarmGrainGate(t *testing.T) {
	t.Parallel()
	for _, interrupt := range []bool{false, true} {
		s := newSchedule(time.Now(), 100_000, 1_000_000) // 10 µs apart: grained
		at := mono() + 20*coarseGrain
		if interrupt {
			at = mono() + time.Minute
		}
		const sleepers = 8
		type woke struct {
			ok          bool
			called, now time.Duration
		}
		res := make(chan woke, sleepers)
		for range sleepers {
			a := s.alarm()
			if a.gates == nil {
				t.Fatal("an alarm of a 100,000/s schedule has no gate")
			}
			go func() {
				called := mono()
				ok := a.sleepUntil(at)
				res <- woke{ok, called, mono()}
			}()
		}
		if interrupt {
			time.AfterFunc(50*time.Millisecond, s.interrupt)
		}
		want := (at + coarseGrain - 1) / coarseGrain * coarseGrain
		for range sleepers {
			select {
			case w := <-res:
				if w.ok == interrupt {
					t.Fatalf("interrupt %v: a sleeper returned %v", interrupt, w.ok)
				}
				// A sleeper whose goroutine ran only after at (a loaded
				// machine: CI's) is late, not early, and returns at once.
				if !interrupt && w.called < at && w.now < want {
					t.Fatalf("a sleeper woke %s before the grain's moment", want-w.now)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("interrupt %v: a sleeper never woke", interrupt)
			}
		}
		if g := s.gates.Load(); g == nil || g.at != want {
			t.Fatalf("interrupt %v: the gate is %+v, want one at %s", interrupt, g, want)
		}
		s.close()
	}
}
