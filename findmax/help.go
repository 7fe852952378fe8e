package findmax

import (
	"fmt"
	"strings"
)

// Help is `fieldbench findmax WORKLOAD --help`'s description of the
// search, kept beside the search (search.go, run.go) so that what it says
// changes with what the code does.
func Help() string {
	return fmt.Sprintf(`findmax runs open-loop steps of the workload (each --step-duration long,
--step-warmup of it excluded) at offered rates from --from-rate, doubling until a
step breaks the objective, then bisecting between the last rate that held and
the first that broke until the bracket is within --precision. A step holds
when every operation's figure named in --slo stays below its limit and at
least --min-achieved of the offered rate completed; a step whose verdict is
close (within 10 %% of a limit) runs twice and holds only if both do. A run
that fails is a step that breaks. It stops by itself after --max-steps.
--confirm D then runs the workload at a fixed rate for D: at the rate found
and, if that breaks (a queue that builds slowly at the knee outlasts a short
step), one --precision step lower at a time, at most --confirm-backoffs times,
until a run holds; the answer is then the rate that held for D. A last run
--confirm-over above it should break; each verdict is printed.

A workload whose run is a fixed amount of work rather than a time (%s) has that work sized so each step lasts --step-duration at
its rate (wiki: one request set; ingest: --records per source; trajectory:
--repeat of the read phases, on a database emptied first); such a step is
cut, and breaks, if it runs past 4 x --step-duration + 5 min.

The other flags are the workload's own run options; every step runs on the
same database (without --db, one SQLite file made for the search). Results go
to results/<time>-findmax-<workload>-search/: a run directory per step and a
result file and report with the knee chart.`, strings.Join(SizedWorkloads(), ", "))
}
