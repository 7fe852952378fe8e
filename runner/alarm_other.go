//go:build !linux

package runner

import "time"

// preciseTimer exists on Linux alone (a timerfd); elsewhere the alarm uses
// a Go timer.
type preciseTimer struct{}

func openPreciseTimer() *preciseTimer { return nil }

func (*preciseTimer) sleepUntil(time.Duration) bool { return true }
func (*preciseTimer) interrupt()                    {}
func (*preciseTimer) close() error                  { return nil }
