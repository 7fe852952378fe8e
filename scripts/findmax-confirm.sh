#!/usr/bin/env bash
# Confirms `fieldbench findmax` on servers fieldbench starts itself on
# loopback: for each engine, a rate search, then (findmax --confirm) a
# fixed-rate run at the rate found, backing off one PRECISION step at a time
# until one meets the objective (BACKOFFS at most), and one OVER (20 %)
# above the rate that held, which should not. Prints one line per round with the
# figures; the servers are stopped at the end. Each engine gets a fresh
# cluster, loaded by the first step; the rounds reuse it.
#
#   scripts/findmax-confirm.sh                       # postgres and cassandra, 1 round each
#   ROUNDS=3 scripts/findmax-confirm.sh postgres
#   SLO='p99<200ms' STEP=20s CONFIRM=1m scripts/findmax-confirm.sh cassandra
#   FIELDBENCH_BIN=/tmp/fieldbench scripts/findmax-confirm.sh
#
# The workload is microblog, open loop, read operations only by default
# (MIX): on a machine shared with other jobs the tail latency of an fsync
# is set by everyone's disk traffic, not by the database under test. A
# verdict on a loaded machine is noisy: run several ROUNDS and report how
# often the confirmations came out as expected (docs/findmax.md).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-1}
STEP=${STEP:-10s}
WARMUP=${WARMUP:-3s}
CONFIRM=${CONFIRM:-30s}
OVER=${OVER:-0.2}
SLO=${SLO:-p90<100ms}
CLIENTS=${CLIENTS:-32}
MIX=${MIX:-userline=1,timeline=1}
PRECISION=${PRECISION:-0.1}
BACKOFFS=${BACKOFFS:-3}
engines=(${@:-postgres cassandra})

. scripts/lib-fieldbench.sh
fb_setup findmax
clusters=()
cleanup() {
  for d in "${clusters[@]}"; do "$fb" cluster down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "SLO=$SLO STEP=$STEP WARMUP=$WARMUP CONFIRM=$CONFIRM OVER=$OVER BACKOFFS=$BACKOFFS CLIENTS=$CLIENTS MIX=$MIX PRECISION=$PRECISION ROUNDS=$ROUNDS"
for engine in "${engines[@]}"; do
  case $engine in
  postgres) from=${FROM:-200} ;;
  cassandra) from=${FROM:-100} ;;
  *) from=${FROM:-100} ;;
  esac
  # Loaded before the search, so a load that fails (a write timeout on a
  # loaded machine: Cassandra's populate times out there now and then) is
  # not taken for the first step breaking; it is tried again on a fresh
  # cluster, LOAD_TRIES times in all.
  dsn=""
  for ((t = 1; t <= ${LOAD_TRIES:-3}; t++)); do
    dir="$work/$engine-$t"
    clusters+=("$dir")
    dsn=$("$fb" cluster up "$engine" --nodes 1 --dir "$dir" 2>/dev/null | sed -n 's/^DSN: //p')
    [[ -n $dsn ]] || { echo "$engine: the cluster did not start (see $dir)" >&2; exit 1; }
    "$fb" load microblog --db "$dsn" >"$work/load" 2>&1 && break
    echo "$engine: loading the dataset failed (try $t):" >&2; tail -1 "$work/load" >&2
    "$fb" cluster down --dir "$dir" >/dev/null 2>&1 || true
    dsn=""
  done
  [[ -n $dsn ]] || continue
  for ((r = 1; r <= ROUNDS; r++)); do
    res="$work/results-$engine-$r"
    "$fb" findmax microblog --db "$dsn" --mix "$MIX" --clients "$CLIENTS" --slo "$SLO" \
      --step-duration "$STEP" --step-warmup "$WARMUP" --from-rate "$from" --precision "$PRECISION" \
      --confirm "$CONFIRM" --confirm-over "$OVER" --confirm-backoffs "$BACKOFFS" --results "$res" >"$work/out" 2>"$work/err" || {
      echo "$engine round $r: findmax failed:" >&2; tail -5 "$work/err" >&2; continue; }
    jq -r --arg e "$engine" --arg r "$r" --arg load "$(cut -d' ' -f1 /proc/loadavg)" 'select(.kind=="summary") | .summary.extra |
      def held(k): if .[k+"_held"] == 1 then "holds" else "breaks" end;
      "\($e) round \($r): steps held up to \(.search_max_rate) ops/s (\(.steps) steps); max for the confirmation length \(.max_sustainable_rate) ops/s after \(.confirm_backoffs // 0) back-offs, bracket [\(.bracket_low), \(.bracket_high // "inf")); " +
      "at \(.confirm_rate // "-"): \(held("confirm")) (\(.confirm_achieved // 0 | floor) achieved); " +
      "at \(.confirm_over_rate // "-"): \(held("confirm_over")) (\(.confirm_over_achieved // 0 | floor) achieved); load average \($load)"' \
      "$res"/*-findmax-microblog-search/result.jsonl
    grep -E '^step [0-9]+: .* achieved' "$work/err" | sed 's/^/    /' || true
    grep -E '^confirmation at' "$work/out" | sed 's/^/    /' || true
  done
  "$fb" cluster down --dir "$dir" >/dev/null 2>&1 || true
done
