#!/usr/bin/env bash
# Does the client's memory stay flat over a long run? Runs
# `fieldbench run microblog` with CLIENTS clients (default 1,000) open loop
# at RATE operations per second (default one per client per second) against
# the database DSN (default: a Redis that this script starts with
# `fieldbench cluster up redis` and stops afterwards) for DURATION (default
# 10m), samples the fieldbench process's RSS (VmRSS of /proc/PID/status)
# every 5 s while the run goes on, and prints the mean RSS over the run's
# second minute and over its last minute, their ratio, and the highest RSS
# sampled. Issue 19's target: under 200 MB at 1,000 clients
# and the RSS after 10 minutes within 10 % of the RSS after 1 minute.
#
#   scripts/rss-stability.sh
#   DURATION=2m CLIENTS=200 scripts/rss-stability.sh
#   DSN=redis://127.0.0.1:6379 scripts/rss-stability.sh
set -euo pipefail

cd "$(dirname "$0")/.."
CLIENTS=${CLIENTS:-1000}
RATE=${RATE:-$CLIENTS}
DURATION=${DURATION:-10m}
DSN=${DSN:-}

work=$(mktemp -d)
cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
	[ -d "$work/redis" ] && "$work/fieldbench" cluster down --dir "$work/redis" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/fieldbench" ./cmd/fieldbench
if [ -z "$DSN" ]; then
	"$work/fieldbench" cluster up redis --dir "$work/redis" >/dev/null
	DSN=$("$work/fieldbench" cluster dsn --dir "$work/redis")
fi

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $CLIENTS clients at $RATE ops/s for $DURATION"
"$work/fieldbench" run microblog --db "$DSN" --clients "$CLIENTS" --rate "$RATE" --duration "$DURATION" \
	--results "$work/results" >"$work/out" 2>&1 &
pid=$!
case $DURATION in
*h) dur_s=$(( ${DURATION%h} * 3600 )) ;;
*m) dur_s=$(( ${DURATION%m} * 60 )) ;;
*s) dur_s=${DURATION%s} ;;
*) echo "rss-stability: DURATION like 10m, 90s or 1h" >&2; exit 2 ;;
esac
t0=$(date +%s)
run0=""
: >"$work/samples"
echo "seconds of the run  RSS (MiB)"
while kill -0 "$pid" 2>/dev/null; do
	sleep 5
	# The run loads the dataset first: its clock starts with the first
	# progress line. Sampling stops at the run's end, before the summary and
	# report are made (their memory is not the run's).
	if [ -z "$run0" ] && grep -q '^[0-9][0-9]*s/' "$work/out" 2>/dev/null; then run0=$(( $(date +%s) - t0 )); fi
	[ -z "$run0" ] && continue
	[ $(( $(date +%s) - t0 - run0 )) -ge "$dur_s" ] && break
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
	[ -z "$rss" ] && break
	at=$(( $(date +%s) - t0 - run0 ))
	echo "$at $rss" >>"$work/samples"
	printf '%18d  %9.1f\n' "$at" "$(echo "$rss / 1024" | bc -l)"
done
wait "$pid" || { cat "$work/out" >&2; exit 1; }
pid=""
grep -A6 '^client: CPU' "$work/out"
# A single reading swings with the garbage collector's sawtooth: compare the
# mean over the run's second minute with the mean over its last minute.
awk '
	{ t[NR] = $1; r[NR] = $2; if ($1 > last) last = $1 }
	END {
		for (i = 1; i <= NR; i++) {
			if (t[i] >= 60 && t[i] < 120) { a += r[i]; na++ }
			if (t[i] > last - 60) { b += r[i]; nb++ }
			if (r[i] > peak) peak = r[i]
		}
		printf "RSS over the run'"'"'s 2nd minute: mean %.1f MiB (%d samples)\n", a / na / 1024, na
		printf "RSS over its last minute:       mean %.1f MiB (%d samples)\n", b / nb / 1024, nb
		printf "last minute / 2nd minute: %.3f\n", (b / nb) / (a / na)
		printf "highest RSS sampled during the run: %.1f MiB\n", peak / 1024
	}' "$work/samples"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
