#!/usr/bin/env bash
# Measures `fieldbench compare` on real runs against a PostgreSQL that
# fieldbench starts on loopback (stopped at the end):
#   - false alarms: PAIRS pairs of runs of the same build and the same server
#     settings, back to back; for each pair, how many of its (operation,
#     figure) rows compare calls significant, and whether --fail-on GATES
#     would have failed a CI job;
#   - a real slowdown: SLOW_PAIRS pairs whose second run has the server
#     setting SLOW (applied with ALTER SYSTEM and a reload, removed after
#     the run); the throughput ratio measured and whether compare flags it.
# Prints a line per pair and the totals.
#
#   scripts/compare-falsealarm.sh
#   PAIRS=20 SECONDS_=30 scripts/compare-falsealarm.sh
#   SLOW='commit_delay=60000 commit_siblings=0' SLOW_PAIRS=5 scripts/compare-falsealarm.sh
#   FIELDBENCH_BIN=/tmp/fieldbench scripts/compare-falsealarm.sh
#
# Runs are microblog, closed loop, CLIENTS clients, SECONDS_ long of which
# WARMUP is left out, on one dataset loaded once (posts accumulate from run
# to run, as they would between two CI jobs on one server). On a machine
# shared with other jobs, their load changes between the two runs of a
# pair: that is part of what a false alarm here measures.
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-10}
SLOW_PAIRS=${SLOW_PAIRS:-3}
SECONDS_=${SECONDS_:-20}
WARMUP=${WARMUP:-5}
CLIENTS=${CLIENTS:-8}
USERS=${USERS:-400}
SLOW=${SLOW:-commit_delay=30000 commit_siblings=0}
GATES=${GATES:-throughput-10%,p99+25%}

. scripts/lib-fieldbench.sh
fb_setup falsealarm
dir="$work/pg"
cleanup() {
  "$fb" cluster down --dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PAIRS=$PAIRS SLOW_PAIRS=$SLOW_PAIRS SECONDS_=$SECONDS_ WARMUP=$WARMUP CLIENTS=$CLIENTS USERS=$USERS SLOW='$SLOW' GATES=$GATES"
dsn=$("$fb" cluster up postgres --nodes 1 --dir "$dir" 2>/dev/null | sed -n 's/^DSN: //p')
[[ -n $dsn ]] || { echo "postgres did not start (see $dir)" >&2; exit 1; }
"$fb" load microblog --db "$dsn" --users "$USERS" >/dev/null

run() { # -> prints the run directory
  local r
  r=$(mktemp -d "$work/run-XXXXXX")
  "$fb" run microblog --db "$dsn" --users "$USERS" --clients "$CLIENTS" --duration "${SECONDS_}s" --warmup "${WARMUP}s" \
    --results "$r" >/dev/null 2>&1
  ls -d "$r"/*/
}
throughput() { # run dir -> ops/s over every operation
  jq -r 'select(.kind=="summary") | [.summary.ops[] | .ops_per_sec] | add' "$1/result.jsonl"
}
settings() { # "k=v k=v" | reset (ALTER SYSTEM runs outside a transaction: one -c each)
  local args=()
  if [[ $1 == reset ]]; then
    args=(-c "ALTER SYSTEM RESET ALL")
  else
    for kv in $1; do args+=(-c "ALTER SYSTEM SET ${kv%%=*} = '${kv#*=}'"); done
  fi
  psql -q "$dsn" "${args[@]}" -c "SELECT pg_reload_conf()" >/dev/null
}
# compare base new -> "rows significant total, throughput rows significant, gate broken"
judge() {
  local out code=0
  out=$("$fb" compare "$1" "$2" --fail-on "$GATES" 2>/dev/null) || code=$?
  local sig tot tsig
  tot=$(awk '$2 ~ /^(throughput|mean|p50|p99|p99\.9)$/ && $NF != "run" {t++} END {print t+0}' <<<"$out")
  sig=$(grep -cE ' (better|WORSE)$' <<<"$out" || true)
  tsig=$(grep -E '^[a-z-]+ +throughput ' <<<"$out" | grep -cE ' (better|WORSE)$' || true)
  echo "$sig $tot $tsig $([[ $code == 3 ]] && echo 1 || echo 0)"
}

echo
echo "same build, same settings:"
alarms=0 rows=0 rowsig=0 tpairs=0 gates=0
for ((i = 1; i <= PAIRS; i++)); do
  a=$(run)
  b=$(run)
  read -r sig tot tsig gate < <(judge "$a" "$b")
  rows=$((rows + tot)) rowsig=$((rowsig + sig)) gates=$((gates + gate))
  ((sig > 0)) && alarms=$((alarms + 1))
  ((tsig > 0)) && tpairs=$((tpairs + 1))
  printf 'pair %d: %.0f vs %.0f ops/s; %d of %d rows significant (%d throughput); gate %s; load average %s\n' \
    "$i" "$(throughput "$a")" "$(throughput "$b")" "$sig" "$tot" "$tsig" "$([[ $gate == 1 ]] && echo broken || echo passed)" "$(cut -d' ' -f1 /proc/loadavg)"
done
echo "false alarms: $rowsig of $rows rows significant; pairs with any row significant: $alarms of $PAIRS; with a throughput row significant: $tpairs of $PAIRS; gate '$GATES' broken in $gates of $PAIRS"

echo
echo "slowed with $SLOW:"
found=0 tfound=0
for ((i = 1; i <= SLOW_PAIRS; i++)); do
  a=$(run)
  settings "$SLOW"
  b=$(run)
  settings reset
  read -r sig tot tsig gate < <(judge "$a" "$b")
  ta=$(throughput "$a") tb=$(throughput "$b")
  ((tsig > 0)) && tfound=$((tfound + 1))
  ((gate == 1)) && found=$((found + 1))
  printf 'pair %d: %.0f vs %.0f ops/s (ratio %.2f); %d of %d rows significant (%d throughput); gate %s; load average %s\n' \
    "$i" "$ta" "$tb" "$(jq -n "$tb / $ta")" "$sig" "$tot" "$tsig" "$([[ $gate == 1 ]] && echo broken || echo passed)" "$(cut -d' ' -f1 /proc/loadavg)"
done
echo "slowdown found: throughput significant in $tfound of $SLOW_PAIRS pairs; gate '$GATES' broken in $found of $SLOW_PAIRS"
