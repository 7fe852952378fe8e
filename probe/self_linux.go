package probe

import "syscall"

// readSelf reads getrusage(RUSAGE_SELF): ru_maxrss is in KiB on Linux.
func readSelf() (SelfReading, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return SelfReading{}, false
	}
	return SelfReading{
		UserSeconds: tvSeconds(ru.Utime),
		SysSeconds:  tvSeconds(ru.Stime),
		MaxRSSBytes: ru.Maxrss * 1024,
	}, true
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}
