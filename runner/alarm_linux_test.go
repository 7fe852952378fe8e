//go:build linux

package runner

import (
	"testing"
	"time"
)

// TestPreciseTimerExpiredBeforeWait: a timer that fires before its
// goroutine starts waiting (a short wait, or a goroutine descheduled
// between arming and waiting on a busy machine) must not leave the wait
// hanging. RawConn.Read resets the descriptor's readiness before it asks
// the callback, so the expiry's edge is gone by then; before the fix the
// first call assumed the timer had not fired and the wait never ended
// (TestWikiRateOpenLoop hung under CPU load).
func TestPreciseTimerExpiredBeforeWait(t *testing.T) {
	pt := openPreciseTimer()
	if pt == nil {
		t.Skip("no timerfd here")
	}
	defer pt.close()
	for i := range 20 {
		at := mono() + time.Microsecond
		pt.polled, pt.due = false, at
		if err := pt.arm(at); err != nil {
			t.Fatal(err)
		}
		// Let the timer fire and the netpoller see its edge before the
		// wait begins.
		time.Sleep(2 * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- pt.rc.Read(pt.ready) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			pt.interrupt() // ends the hung wait, so the test can fail
			t.Fatalf("round %d: the wait did not end 10 s after a timer that had fired", i)
		}
	}
}
