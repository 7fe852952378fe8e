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
#   RUNS=3 WARMUP=60s OPTS=rf=1 BUDGET=cpu=0.4,memory=2GiB scripts/scale-model.sh cassandra   # each point 3 times
#
# Each point is a fresh cluster (no replicas), `run microblog` with CLIENTS
# closed-loop clients for DURATION after WARMUP, each node's share of the
# run's CFS periods in which it used its whole quota and was held back and
# the cores it used (its group's counters before and after the run: the
# populate and the warm-up included), and the load generator's CPU in
# cores. Needs root (control groups); stops every server and
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
RUNS=${RUNS:-1}   # runs of each point, each on a fresh cluster

# cgsnap CLUSTER-DIR prints one line per budgeted node: name, time (s),
# CFS periods, periods held back, CPU seconds used (v1: cpu.stat and
# cpuacct.usage; v2: cpu.stat).
cgsnap() {
  python3 - "$1/cluster.json" <<'PY'
import json, sys, time, os
c = json.load(open(sys.argv[1]))
for n in c.get("nodes") or []:
    g = n.get("cgroup") or {}
    st, used = {}, None
    for d in g.get("dirs") or []:
        if os.path.exists(d + "/cpu.stat"):
            st.update(dict(l.split() for l in open(d + "/cpu.stat") if len(l.split()) == 2))
        if os.path.exists(d + "/cpuacct.usage"):
            used = int(open(d + "/cpuacct.usage").read()) / 1e9
    if "nr_periods" in st:
        if used is None and "usage_usec" in st:
            used = int(st["usage_usec"]) / 1e6
        print(n["name"], time.time(), st["nr_periods"], st["nr_throttled"], used or 0)
PY
}
# cgheld BEFORE AFTER prints, per node, the share of the run's periods it
# was held back in and the cores it used ("cass1 97% 0.39"), or "-".
cgheld() {
  python3 - "$1" "$2" <<'PY'
import sys
def rows(s):
    return {f[0]: [float(x) for x in f[1:]] for f in (l.split() for l in s.splitlines()) if len(f) == 5}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
out = []
for name in sorted(b):
    if name not in a:
        continue
    dt, dp, dth, du = (y - x for x, y in zip(a[name], b[name]))
    out.append("%s %.0f%% %.2f" % (name, 100 * dth / dp if dp else 0, du / dt if dt else 0))
print(" ".join(out) or "-")
PY
}

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
printf '%-10s %-12s %5s %12s %8s %9s  %s\n' engine budget nodes ops/s "x 1" "load CPU" "per node over the run: held back (share of periods), cores used"
for engine in $ENGINES; do
  for budget in "${budgets[@]}"; do
    base=""
    for n in $NODES; do
      all=()
      for run in $(seq "$RUNS"); do
        cluster="$work/$engine-$n-${budget//[=,.\/]/_}-$run"
        args=(cluster up "$engine" --nodes "$n" --dir "$cluster")
        [[ $budget != none ]] && args+=(--budget "$budget")
        for o in ${OPTS//,/ }; do args+=(--opt "$o"); done
        "$fb" "${args[@]}" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
        dsn=$("$fb" cluster dsn --dir "$cluster")
        res="$work/results-$engine-$n-$run-$RANDOM"
        # Each node's CFS counters before and after the run (cluster.json's
        # groups): the share of the run's periods in which it was held back
        # and the CPU it used, in cores, over the run alone (cluster status
        # counts from the node's start, its own start and joins included).
        before=$(cgsnap "$cluster")
        # The load generator's own CPU (user + system over the whole run,
        # populate included), in cores: whether the load could be the limit.
        TIMEFORMAT='%U %S %R'
        # shellcheck disable=SC2086 # RUN_ARGS is a list of arguments
        { time "$fb" run microblog --db "$dsn" --clients "$CLIENTS" --duration "$DURATION" --warmup "$WARMUP" $RUN_ARGS \
          --summary-json --results "$res" >"$work/run.log" 2>&1 || { tail -20 "$work/run.log" >&2; exit 1; }; } 2>"$work/time"
        load=$(awk '{printf "%.2f", ($1 + $2) / $3}' "$work/time")
        ops=$(python3 -c 'import json,sys,glob; d=json.load(open(glob.glob(sys.argv[1]+"/*/summary.json")[0])); print("%.0f" % sum(o["ops_per_sec"] for o in d["summary"]["ops"].values()))' "$res")
        held=$(cgheld "$before" "$(cgsnap "$cluster")")
        "$fb" cluster down --dir "$cluster" >/dev/null
        cluster=""
        all+=("$ops")
        ratio=-   # the first node count's runs, before their mean is known
        [[ -z $base && $RUNS == 1 ]] && ratio=1.00
        [[ -z $base ]] || ratio=$(python3 -c "print('%.2f' % ($ops / $base))")
        printf '%-10s %-12s %5s %12s %8s %9s  %s\n' "$engine" "$budget" "$n" "$ops" "$ratio" "$load" "$held"
      done
      if [[ -z $base ]]; then
        # The first node count's mean over its runs is what "x 1" divides by.
        base=$(python3 -c 'import sys; v=[float(x) for x in sys.argv[1:]]; print(sum(v)/len(v))' "${all[@]}")
        [[ $RUNS == 1 ]] || printf '# mean at %s node(s) over %s runs: %.0f ops/s\n' "$n" "$RUNS" "$base"
      fi
    done
  done
done
