package job

import (
	"os"
	"runtime/debug"
)

// measuredGCPercent is the garbage collector's setting while a run
// measures, unless GOGC says otherwise. A load generator allocates fast and
// keeps little: every read returns a fresh article (5 KB on average) that
// is garbage at once, while the live heap stays 2-3 MB. With Go's default
// of 100, PostgreSQL point reads (4 clients) collected about 40 times a
// second, 2 % of the client's CPU by Go's own count (GODEBUG=gctrace=1),
// CPU the server on the same cores did not get; at 400, about 7 times a
// second (docs/postgres.md, "Client efficiency"). The heap may then grow to
// five times what is live before a collection.
//
// Only the measured phase needs that: afterwards (reading the intervals
// back, the summary, the report) the same headroom only makes the process
// large. Decoding a 6-minute microblog run's histograms for its report
// peaked at 162 MB of RSS at 400 and 65 MB at 100, for 0.2 s more CPU.
const measuredGCPercent = 400

// relaxGC sets the collector to measuredGCPercent for a measured phase
// unless the user set GOGC; the function it returns puts back the setting
// it found.
func relaxGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(measuredGCPercent)
	return func() { debug.SetGCPercent(old) }
}
