#!/usr/bin/env bash
# The open loop's own error (issue 25): how late fieldbench starts
# operations against their intended start, and what that does to the
# latencies it reports, measured where nothing else is in them.
#
#   scripts/open-loop-error.sh                 # null:// grid, then Redis
#   ROUNDS=5 SECONDS_=10 scripts/open-loop-error.sh null
#   FIELDBENCH_BASE_BIN=/tmp/fieldbench-old scripts/open-loop-error.sh null
#                                              # also the CPU of another build
#   scripts/open-loop-error.sh redis           # open vs closed loop reads
#
# null: `run microblog --db null://` (no database: every latency is
#   fieldbench's own) at RATES (default 100 1000 10000 100000 ops/s) with
#   CLIENTS (default 1000 100000), ROUNDS rounds (default 3) of SECONDS_
#   seconds (default 10). Per cell it prints the median and range over the
#   rounds of: the measured latency's p50, p99, p99.9 (the worst of the
#   three operations), the schedule's lateness p50, p99, p99.9 (the
#   result's `schedule`), and the client's CPU per operation (user+sys of
#   the whole process over the operations done; it includes the start and
#   the dataset, so low rates read high). With FIELDBENCH_BASE_BIN the same
#   cells run on that build too, alternating round by round, and the CPU
#   ratio new/base is printed.
# redis: one Redis started by fieldbench on loopback, a wiki dataset of
#   ARTICLES (default 10000); point reads (run wiki --reads 100) closed loop
#   with one thread, and open loop at RATE (default 1000/s, far below what
#   one thread does here) with THREADS (default 4), alternating, ROUNDS
#   rounds of REQUESTS (default 20000) reads; prints the read p50 of each
#   and the open/closed ratio (median and range). For reference, the same
#   server measured by Redis's own tools, without fieldbench: redis-cli
#   --latency (a PING every 10 ms, as an open loop at 100/s; its average,
#   in its own whole-ms-rounded units) and redis-benchmark's PING, one
#   connection closed loop (p50): on a machine whose idle CPUs take tens of
#   microseconds to wake, a request that finds both processes idle is
#   slower than one in a busy closed loop, whoever sends it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib-fieldbench.sh
ROUNDS=${ROUNDS:-3}
SECONDS_=${SECONDS_:-10}
RATES=${RATES:-100 1000 10000 100000}
CLIENTS=${CLIENTS:-1000 100000}
fb_setup open-loop-error
trap 'rm -rf "$work"' EXIT
base=""
if [[ -n ${FIELDBENCH_BASE_BIN:-} ]]; then
  base="$work/fieldbench-base"
  cp "$FIELDBENCH_BASE_BIN" "$base"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), fieldbench $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# figures RESULT.jsonl -> "lat_p50 lat_p99 lat_p999 late_p50 late_p99 late_p999 cpu_us_per_op" (µs)
figures() {
  python3 - "$1" <<'PY'
import json, sys
summary = None
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("kind") == "summary":
        summary = d["summary"]
ops = summary["ops"].values()
n = sum(o["count"] + sum((o.get("errors") or {}).values()) for o in ops)
c = summary.get("client") or {}
cpu = (c.get("cpu_user_seconds", 0) + c.get("cpu_sys_seconds", 0)) * 1e6 / max(n, 1)
s = summary.get("schedule") or {}
print(max(o["p50_us"] for o in ops), max(o["p99_us"] for o in ops), max(o["p999_us"] for o in ops),
      s.get("p50_us", "-"), s.get("p99_us", "-"), s.get("p999_us", "-"), round(cpu, 2))
PY
}

# med VALUES... -> "median (min–max)"
med() {
  python3 -c '
import statistics, sys
v = [float(x) for x in sys.argv[1:] if x != "-"]
if not v: print("-"); sys.exit()
f = lambda x: ("%.0f" % x) if x >= 10 else ("%.2f" % x)
print("%s (%s–%s)" % (f(statistics.median(v)), f(min(v)), f(max(v))))' "$@"
}

null_grid() {
  printf '%-8s %-7s %-5s | %-20s %-20s %-20s | %-20s %-20s %-20s | %-18s %s\n' rate clients build \
    "latency p50 µs" "p99" "p99.9" "lateness p50 µs" "p99" "p99.9" "CPU µs/op" "CPU new/base"
  for rate in $RATES; do
    for clients in $CLIENTS; do
      declare -A col=()
      local builds=(new)
      [[ -n $base ]] && builds+=(base)
      for ((r = 1; r <= ROUNDS; r++)); do
        for b in "${builds[@]}"; do
          local bin=$fb
          [[ $b == base ]] && bin=$base
          local dir="$work/r-$b-$rate-$clients-$r"
          "$bin" run microblog --db null:// --clients "$clients" --rate "$rate" --duration "${SECONDS_}s" \
            --results "$dir" >/dev/null 2>&1
          read -r -a f <<<"$(figures "$dir"/*/result.jsonl)"
          for i in 0 1 2 3 4 5 6; do col[$b,$i]+="${f[$i]} "; done
        done
      done
      for b in "${builds[@]}"; do
        local ratio=""
        if [[ $b == new && -n $base ]]; then
          ratio=$(python3 -c '
import statistics, sys
n = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
r = [x / y for x, y in zip(n, b)]
print("%.2f (%.2f–%.2f)" % (statistics.median(r), min(r), max(r)))' "${col[new,6]}" "${col[base,6]}")
        fi
        # shellcheck disable=SC2086
        printf '%-8s %-7s %-5s | %-20s %-20s %-20s | %-20s %-20s %-20s | %-18s %s\n' "$rate" "$clients" "$b" \
          "$(med ${col[$b,0]})" "$(med ${col[$b,1]})" "$(med ${col[$b,2]})" \
          "$(med ${col[$b,3]})" "$(med ${col[$b,4]})" "$(med ${col[$b,5]})" "$(med ${col[$b,6]})" "$ratio"
      done
      unset col
    done
  done
}

redis_reads() {
  local articles=${ARTICLES:-10000} rate=${RATE:-1000} threads=${THREADS:-4} requests=${REQUESTS:-20000}
  local dsn
  dsn=$("$fb" cluster up redis --nodes 1 --dir "$work/redis" 2>/dev/null | sed -n 's/^DSN: //p')
  [[ -n $dsn ]] || { echo "redis: cluster up failed" >&2; return 1; }
  trap '"$fb" cluster down --dir "$work/redis" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
  "$fb" load wiki --db "$dsn" --articles "$articles" >/dev/null 2>&1
  read_p50() { # run directory -> the read's p50 (µs)
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("kind") == "summary": print(d["summary"]["ops"]["read"]["p50_us"])' "$1"/*/result.jsonl
  }
  local closed="" open="" ratios=""
  for ((r = 0; r <= ROUNDS; r++)); do # round 0 warms the server and is discarded
    "$fb" run wiki --db "$dsn" --articles "$articles" --reads 100 --threads 1 --requests "$requests" --sets 1 --repeat 1 \
      --results "$work/c$r" >/dev/null 2>&1
    "$fb" run wiki --db "$dsn" --articles "$articles" --reads 100 --threads "$threads" --requests "$requests" --sets 1 --repeat 1 \
      --rate "$rate" --results "$work/o$r" >/dev/null 2>&1
    ((r == 0)) && continue
    local c o
    c=$(read_p50 "$work/c$r") o=$(read_p50 "$work/o$r")
    closed+="$c " open+="$o " ratios+="$(python3 -c "print($o / $c)") "
  done
  # shellcheck disable=SC2086
  echo "redis point read p50 µs: closed loop (1 thread) $(med $closed); open loop ($rate/s, $threads threads) $(med $open); open/closed $(med $ratios)"
  local port
  port=$(sed -E 's#redis://127\.0\.0\.1:([0-9]+).*#\1#' <<<"$dsn")
  if command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null; then
    local cli bench
    cli=$(timeout -s INT 10 redis-cli -h 127.0.0.1 -p "$port" --latency --raw 2>/dev/null | tail -1 || true)
    bench=$(redis-benchmark -h 127.0.0.1 -p "$port" -t ping_mbulk -c 1 -n 50000 --csv 2>/dev/null | tail -1 | cut -d, -f5 | tr -d '"')
    echo "reference without fieldbench: redis-cli --latency (a PING every 10 ms) min/max/avg ms, samples: ${cli:-?}; redis-benchmark PING closed loop, 1 connection: p50 ${bench:-?} ms"
  fi
}

which=("${@:-null redis}")
for w in ${which[*]}; do
  case $w in
    null) null_grid ;;
    redis) redis_reads ;;
    *) echo "unknown part $w (null, redis)" >&2; exit 2 ;;
  esac
done
