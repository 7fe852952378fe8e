package compare

// Help is `fieldbench compare --help`'s description of the method, kept
// beside the method (compare.go, gate.go; docs/compare.md has it whole)
// so that what it says changes with what the code does.
const Help = `compare reads run directories (or result.jsonl files) and compares each NEW
run with BASE, per operation: throughput, mean, p50, p99 and p99.9. The
change is that of the whole-run figures; whether it is significant comes from
the runs' per-second series with Welch's t-test, each mean's variance
inflated for the series' lag-1 autocorrelation (consecutive seconds of a
benchmark are not independent), as latte does, on the log of the ratio of
the per-second means (so no interval goes below -100 %); for a percentile
the series is each second's percentile, so one stalled second moves the
whole-run figure but cannot make it significant. The method is in
docs/compare.md. A run needs 10 measured seconds for a verdict (fewer give
only the change, and say so); 30 or more give useful intervals.

Runs of different workloads, adapters, data models or mixes are refused
(exit 2) unless --force is given: their differences are not the build's.

Runs of different loads (clients, threads, sources, rate, batch, dataset
size) are compared, with a warning naming each option that differs.

--fail-on makes it a gate for CI: it exits 3 when a figure got significantly
worse by more than the limit (a change within the noise never fails). A rule
naming an operation that neither run measured is bad input (exit 2), and so
is a gate that could not be evaluated: a run under 10 measured seconds gives
no verdict, so the gate would pass any change; compare says which gate,
which runs and why, and exits 2 before printing (without --fail-on the
change is shown).`
