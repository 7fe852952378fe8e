#!/usr/bin/env bash
# Runs Apache Otava and fieldbench's change-point search on the same series
# of a run history and prints where they agree (docs/history.md).
#
#   scripts/otava-compare.sh [HISTORY [SERIES]]
#
# HISTORY is a history database (default results/history.db), SERIES a
# series ID (default: the history's only one, or the one with most runs).
# The series is exported with `fieldbench history export --format csv`,
# Otava analyzes the CSV with a csv test (its defaults: p 0.001, window 50,
# the t-test), fieldbench with `history changes --json` (the same
# defaults), and for every metric (an operation's figure) the runs where
# each found a change point are set side by side.
#
# MAKE_RUNS=N first makes a history of N short runs of the quick start
# (microblog on SQLite, 3 s each, 50 clients) in a temporary directory,
# the second half with GOMAXPROCS=1 (a client starved of a core: a real
# regression the header does not record, so the runs stay one series),
# and compares on it.
#
# Needs: Go (builds fieldbench), python3, and Apache Otava's `otava`
# (pip install apache-otava; OTAVA=/path/to/otava to use another).
set -euo pipefail
cd "$(dirname "$0")/.."

OTAVA=${OTAVA:-otava}
if ! command -v "$OTAVA" >/dev/null 2>&1; then
	echo "otava-compare: Apache Otava's 'otava' command is not found; install it with: pip install apache-otava (or set OTAVA=/path/to/otava)" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fb=$work/fieldbench
go build -o "$fb" ./cmd/fieldbench

history=${1:-results/history.db}
series=${2:-}
if [[ -n ${MAKE_RUNS:-} ]]; then
	history=$work/history.db
	for i in $(seq 1 "$MAKE_RUNS"); do
		procs=2
		if ((i > MAKE_RUNS / 2)); then procs=1; fi
		GOMAXPROCS=$procs "$fb" run microblog --users 40 --clients 50 --duration 3s --results "$work/results" --history "$history" >/dev/null 2>"$work/run.log" ||
			{ cat "$work/run.log" >&2; exit 1; }
	done
	echo "made $MAKE_RUNS runs (the last $((MAKE_RUNS - MAKE_RUNS / 2)) with GOMAXPROCS=1) in $history"
fi
if [[ -z $series ]]; then
	series=$("$fb" history list --history "$history" --runs 1 | awk '/^series /{sub(":","",$2); n=$0; sub(/.* — /,"",n); sub(/ run.*/,"",n); if (n+0 > best) {best=n+0; id=$2}} END{print id}')
fi
if [[ -z $series ]]; then
	echo "otava-compare: no series in $history" >&2
	exit 2
fi

"$fb" history export --history "$history" --series "$series" --format csv --out "$work/series.csv" >/dev/null
"$fb" history changes --history "$history" --series "$series" --figure throughput,mean,p50,p90,p99,p99.9,max,errors --json >"$work/fieldbench.json"

python3 - "$work" <<'EOF'
import csv, sys
work = sys.argv[1]
with open(f"{work}/series.csv") as f:
    header = next(csv.reader(f))
metrics = header[5:]
with open(f"{work}/otava.yaml", "w") as f:
    f.write("tests:\n  fieldbench:\n    type: csv\n    file: %s/series.csv\n    time_column: time\n" % work)
    f.write("    attributes: [run, commit, server_version, host]\n    metrics: [%s]\n" % ", ".join(metrics))
EOF
"$OTAVA" analyze fieldbench --config-file "$work/otava.yaml" --output json >"$work/otava.json" 2>"$work/otava.log" ||
	{ cat "$work/otava.log" >&2; exit 1; }

python3 - "$work" "$series" "$("$OTAVA" --version 2>/dev/null || pip show apache-otava 2>/dev/null | awk '/^Version/{print $2}')" <<'EOF'
import csv, json, sys
work, series, version = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(f"{work}/series.csv")))
runs = [r["run"] for r in rows]
metrics = list(rows[0].keys())[5:]
otava = {m: set() for m in metrics}
for group in json.load(open(f"{work}/otava.json"))["fieldbench"]:
    for c in group["changes"]:
        otava[c["metric"]].add(group["attributes"]["run"])
fb = {m: set() for m in metrics}
figure_column = lambda op, fig: op + "_" + fig.replace(".", "_")
for c in json.load(open(f"{work}/fieldbench.json")):
    m = figure_column(c["op"], c["figure"])
    if m in fb:
        fb[m].add(c["run"])
num = {r: i + 1 for i, r in enumerate(runs)}
agree = 0
both = fo = ff = 0
print(f"series {series}: {len(runs)} runs, {len(metrics)} metrics; Apache Otava {version or '(version unknown)'} and fieldbench, both p 0.001, window 50, t-test")
print(f"{'metric':<24} {'Otava: change at run':<26} {'fieldbench: change at run':<26} agree")
for m in metrics:
    o, f = sorted(num[r] for r in otava[m]), sorted(num[r] for r in fb[m])
    same = o == f
    agree += same
    both += len(otava[m] & fb[m]); fo += len(otava[m] - fb[m]); ff += len(fb[m] - otava[m])
    print(f"{m:<24} {str(o or '-'):<26} {str(f or '-'):<26} {'yes' if same else 'NO'}")
print(f"agree on {agree} of {len(metrics)} metrics; change points found by both: {both}, by Otava only: {fo}, by fieldbench only: {ff}")
EOF
