package history

// Help is `fieldbench history --help`'s description of the run history: its
// series, its commands and its grammar, kept beside what it describes.
const Help = `history keeps runs in a results database — an SQLite file (results/history.db
by default) or a team's PostgreSQL (--history postgres://...) — and reads
them back as series: runs grouped by what must be equal to compare them
(workload, model, mix, adapter, server, the options that change the work,
the cluster, the class of machine). A change of server version, host or
fieldbench version inside a series is shown, never silently mixed.

  add DIR...     record the runs under DIR (runs, experiments, sweeps,
                 studies, merged shards; a run already there is kept once)
  list           the series and their runs
  show RUN       one run, any percentile recomputed from its histogram
  trend          each operation's figures over a series' runs, with each
                 run's interval and the change points (terminal, --html)
  changes        the change points (e-divisive means, as Apache Otava);
                 --fail-on exits 3 when a series' newest segment is a
                 regression beyond the gate
  export         a series as CSV, as Apache Otava reads it

run, sweep, experiment and study record their runs as they finish with
--history. The grouping rule and the method: docs/history.md.`

// ChangesHelp is `fieldbench history changes --help`'s description of the
// method (edivisive.go) and of the gate (analyze.go), kept beside them.
const ChangesHelp = `changes finds where each series' figures change: e-divisive means with
Student's t-test as Apache Otava computes them (or its permutation test,
--method permutation), in both directions, each with the means before and
after, the relative change, its p-value and the runs on each side.

--fail-on makes it a CI gate with compare's grammar (FIGURE[:OP]+N% for a
latency, throughput[:OP]-N%): it exits 3 when the newest segment of a
series (the runs since its last change point) is worse than the segment
before it by more than the limit. A change within the noise is no change
point, so it never fails; an improvement never does. A gate naming an
operation no run has is bad input (exit 2).`
