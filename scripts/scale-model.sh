#!/usr/bin/env bash
# The scale model (docs/scale-model.md): throughput against node count,
# every node held to the same budget (cluster up --budget), and the same
# without budgets, in one run. With budgets a node is a small machine of its
# own, so the shape over node count is the database's; without them every
# node shares this machine's cores and the shape is the machine's.
#
#   scripts/scale-model.sh                         # redis, 1 2 4 masters
#   NODES="1 2" BUDGET=cpu=0.3 scripts/scale-model.sh redis
#   DURATION=30s CLIENTS=64 scripts/scale-model.sh redis
#   NODES="1 2" BUDGET=cpu=0.5 OPTS=rf=1 scripts/scale-model.sh cassandra
#   FIELDBENCH_BIN=/tmp/fieldbench scripts/scale-model.sh
#   RUN_ARGS="--mix userline=1" NONE=0 scripts/scale-model.sh cassandra   # reads of one partition only, budgets only
#
# Each point is a fresh cluster (no replicas), `run microblog` with CLIENTS
# closed-loop clients for DURATION after WARMUP, and the nodes' share of
# CFS periods in which they used their whole quota and were held back
# (cluster status), and the load generator's CPU in cores. Needs root (control groups); stops every server and
# removes every group it made, also when interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib-fieldbench.sh

ENGINES=${*:-redis}
NODES=${NODES:-1 2 4}
BUDGET=${BUDGET:-cpu=0.2}
CLIENTS=${CLIENTS:-64}
DURATION=${DURATION:-20s}
WARMUP=${WARMUP:-5s}
OPTS=${OPTS:-}   # engine options for every cluster, comma-separated (cluster up --opt)
RUN_ARGS=${RUN_ARGS:-}   # more arguments of every `run microblog` (e.g. --mix userline=1)
NONE=${NONE:-1}   # 0: only the budgeted points, not the same without budgets

fb_setup scale-model
cluster=""
cleanup() {
  if [[ -n $cluster && -f $cluster/cluster.json ]]; then
    "$fb" cluster down --dir "$cluster" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "# scale model, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
budgets=("$BUDGET")
[[ $NONE == 0 ]] || budgets+=(none)
echo "# microblog${RUN_ARGS:+ $RUN_ARGS}, $CLIENTS clients, $DURATION after a $WARMUP warm-up; budget per node: ${budgets[*]}; engine options: ${OPTS:-none}"
printf '%-10s %-12s %5s %12s %8s %9s  %s\n' engine budget nodes ops/s "x 1" "load CPU" "held back (share of periods, per node)"
for engine in $ENGINES; do
  for budget in "${budgets[@]}"; do
    base=""
    for n in $NODES; do
      cluster="$work/$engine-$n-${budget//[=,.\/]/_}"
      args=(cluster up "$engine" --nodes "$n" --dir "$cluster")
      [[ $budget != none ]] && args+=(--budget "$budget")
      for o in ${OPTS//,/ }; do args+=(--opt "$o"); done
      "$fb" "${args[@]}" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
      dsn=$("$fb" cluster dsn --dir "$cluster")
      res="$work/results-$engine-$n-$RANDOM"
      # shellcheck disable=SC2086 # RUN_ARGS is a list of arguments
      # The load generator's own CPU (user + system over the whole run,
      # populate included), in cores: whether the load could be the limit.
      TIMEFORMAT='%U %S %R'
      { time "$fb" run microblog --db "$dsn" --clients "$CLIENTS" --duration "$DURATION" --warmup "$WARMUP" $RUN_ARGS \
        --summary-json --results "$res" >"$work/run.log" 2>&1 || { tail -20 "$work/run.log" >&2; exit 1; }; } 2>"$work/time"
      load=$(awk '{printf "%.2f", ($1 + $2) / $3}' "$work/time")
      ops=$(python3 -c 'import json,sys,glob; d=json.load(open(glob.glob(sys.argv[1]+"/*/summary.json")[0])); print("%.0f" % sum(o["ops_per_sec"] for o in d["summary"]["ops"].values()))' "$res")
      held=$("$fb" cluster status --dir "$cluster" --json | python3 -c 'import json,sys; print(" ".join("%s %s" % (s["name"], (s.get("detail") or {}).get("cpu_throttled", "-").split(" of")[0]) for s in json.load(sys.stdin)))')
      "$fb" cluster down --dir "$cluster" >/dev/null
      cluster=""
      [[ -z $base ]] && base=$ops
      ratio=$(python3 -c "print('%.2f' % ($ops / $base))")
      printf '%-10s %-12s %5s %12s %8s %9s  %s\n' "$engine" "$budget" "$n" "$ops" "$ratio" "$load" "$held"
    done
  done
done
