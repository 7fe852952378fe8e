//go:build !linux

package probe

// readSelf is not implemented off Linux: the cost is reported unknown (0).
func readSelf() (SelfReading, bool) { return SelfReading{}, false }
