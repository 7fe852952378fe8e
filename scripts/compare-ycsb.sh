#!/usr/bin/env bash
# fieldbench against go-ycsb, the load generator a Go user would pick
# instead, on the same PostgreSQL and Redis (started by fieldbench on
# loopback, stopped at the end): operations per client CPU-second (user +
# system time of the client process, read by /usr/bin/time) for point reads
# and for updates of records of the same size, with the same threads and
# connections.
#
#   scripts/compare-ycsb.sh                     # pg-read pg-update redis-read redis-update
#   ROUNDS=5 OPS=40000 scripts/compare-ycsb.sh pg-read
#   LOOP=1 scripts/compare-ycsb.sh redis-read   # fieldbench's reads through its event loop
#
# go-ycsb (github.com/pingcap/go-ycsb, Apache-2.0) is built from its module
# into ~/.cache/fieldbench/go-ycsb (GO_YCSB overrides the binary): its code
# is never part of this repository. `go install …@latest` refuses it (its
# go.mod has replace directives), so the module is downloaded with `go mod
# download` and built in a copy beside the binary.
#
# Like for like:
#   - same server and data size: ARTICLES wiki articles (fieldbench load
#     wiki) and as many go-ycsb records (recordcount) of one field whose
#     length is the articles' mean size (title and body), in its own table
#     (PostgreSQL: usertable, VARCHAR) or hashes (Redis, go-ycsb's default
#     datatype);
#   - same threads and connections: THREADS client threads on both sides
#     (fieldbench run wiki --threads, go-ycsb threadcount), and the same Go
#     threads running Go code (GOMAXPROCS=CLIENT_THREADS on both, default 1);
#   - same keys: uniform over every record, every key present (go-ycsb's
#     requestdistribution=uniform, fieldbench's default uniform ids);
#   - same design by default (LOOP=0): a goroutine per thread calling the
#     driver, as go-ycsb does;
#   - reads: fieldbench --reads 100 against go-ycsb readproportion=1
#     (workload C); updates: fieldbench --reads 0 (a wiki update rewrites an
#     article's body) against go-ycsb updateproportion=1 (one field
#     rewritten);
#   - the same number of operations on both sides (OPS); ROUNDS rounds
#     alternate the two sides after one discarded warm-up of each; the
#     ratio printed is the median of the per-round ratios of operations per
#     client CPU-second, with their range. Both sides' CPU includes their
#     start-up (fieldbench also counts the articles before and after).
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-4}
CLIENT_THREADS=${CLIENT_THREADS:-1}
ARTICLES=${ARTICLES:-20000}
OPS=${OPS:-40000}
ROUNDS=${ROUNDS:-3}
LOOP=${LOOP:-0}
which=("${@:-pg-read pg-update redis-read redis-update}")

cache=${HOME}/.cache/fieldbench/go-ycsb
ver=v1.0.3
ycsb=${GO_YCSB:-$cache/go-ycsb}
if [[ ! -x $ycsb ]]; then
  echo "building go-ycsb $ver into $cache (once)..." >&2
  mkdir -p "$cache"
  dir=$(cd /tmp && go mod download -json "github.com/pingcap/go-ycsb@$ver" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  rm -rf "$cache/src-$ver"
  cp -r "$dir" "$cache/src-$ver"
  chmod -R u+w "$cache/src-$ver"
  (cd "$cache/src-$ver" && nice -n 10 go build -o "$ycsb" ./cmd/go-ycsb)
fi

work=$(mktemp -d /tmp/fieldbench-ycsb-XXXXXX)
chmod 755 "$work" # the PostgreSQL server runs as its own user
fb="$work/fieldbench"
go build -o "$fb" ./cmd/fieldbench
clusters=()
cleanup() {
  for d in "${clusters[@]}"; do "$fb" cluster down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

py() { python3 -c "$1"; }
echo "machine: $(nproc) cores, shared; load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
echo "THREADS=$THREADS CLIENT_THREADS=$CLIENT_THREADS ARTICLES=$ARTICLES OPS=$OPS ROUNDS=$ROUNDS LOOP=$LOOP go-ycsb $ver"

# timed CMD...: runs CMD; its client CPU seconds (user+sys) go to $work/cpu.
timed() {
  /usr/bin/time -f '%U %S' -o "$work/time" env GOMAXPROCS="$CLIENT_THREADS" "$@" >"$work/out" 2>"$work/err" || {
    cat "$work/err" "$work/out" >&2
    return 1
  }
  py "u, s = open('$work/time').read().split()[-2:]; print(float(u) + float(s))" >"$work/cpu"
}

# summary_of result-dir key-path... -> a figure of the newest run's summary
summary_of() {
  python3 - "$@" <<'PY'
import glob, json, sys
path = sorted(glob.glob(sys.argv[1] + "/*/result.jsonl"))[-1]
for line in open(path):
    l = json.loads(line)
    if l["kind"] == "summary":
        v = l["summary"]
        for k in sys.argv[2:]:
            v = v.get(k, 0) if isinstance(v, dict) else 0
        print(v)
PY
}

# fieldbench dsn reads-percent -> sets FB_OPS (operations done without error)
fb_run() {
  rm -rf "$work/r"
  local per=$((OPS / THREADS * THREADS))
  timed "$fb" run wiki --db "$1" --reads "$2" --threads "$THREADS" --requests "$per" --sets 1 --repeat 1 \
    --results "$work/r" $( ((LOOP)) && echo --loop)
  local op=read
  [[ $2 == 0 ]] && op=update
  FB_OPS=$(summary_of "$work/r" ops "$op" count)
  local errs
  errs=$(python3 - "$work/r" "$op" <<'PY'
import glob, json, sys
path = sorted(glob.glob(sys.argv[1] + "/*/result.jsonl"))[-1]
for line in open(path):
    l = json.loads(line)
    if l["kind"] == "summary":
        print(sum(l["summary"]["ops"][sys.argv[2]].get("errors", {}).values()))
PY
)
  ((errs == 0)) || { echo "fieldbench: $errs errors" >&2; return 1; }
}

# ycsb db props... (run phase) -> sets YC_OPS
yc_run() {
  local db=$1 kind=$2
  shift 2
  local mix=(-p readproportion=1 -p updateproportion=0)
  [[ $kind == update ]] && mix=(-p readproportion=0 -p updateproportion=1)
  timed "$ycsb" run "$db" -P "$cache/src-$ver/workloads/workloadc" "${ycsb_props[@]}" "${mix[@]}" \
    -p operationcount="$OPS" -p threadcount="$THREADS" "$@"
  # go-ycsb prints "READ - Takes(s): …, Count: N, …" per operation kind at the end.
  local up
  up=$(tr a-z A-Z <<<"$kind")
  YC_OPS=$(grep -E "^$up +- " "$work/out" | tail -1 | sed -E 's/.*Count: ([0-9]+).*/\1/')
  if grep -qE "^${up}_ERROR +- " "$work/out"; then
    echo "go-ycsb errors: $(grep -E "^${up}_ERROR" "$work/out" | tail -1)" >&2
    return 1
  fi
  [[ -n $YC_OPS ]] || { cat "$work/out" >&2; return 1; }
}

results=()
compare() { # name dsn reads-percent kind ycsb-db
  local name=$1 dsn=$2 reads=$3 kind=$4 db=$5 i ratios=() f fc y yc r
  fb_run "$dsn" "$reads"; yc_run "$db" "$kind" # warm-up, discarded
  for i in $(seq "$ROUNDS"); do
    fb_run "$dsn" "$reads"; f=$FB_OPS; fc=$(cat "$work/cpu")
    yc_run "$db" "$kind"; y=$YC_OPS; yc=$(cat "$work/cpu")
    r=$(py "print(f'{($f/$fc)/($y/$yc):.3f}')")
    ratios+=("$r")
    printf '%-13s round %d: fieldbench %7d ops in %5.2f CPU-s = %8.0f ops/CPU-s   go-ycsb %7d ops in %5.2f CPU-s = %8.0f ops/CPU-s   ratio %s\n' \
      "$name" "$i" "$f" "$fc" "$(py "print($f/$fc)")" "$y" "$yc" "$(py "print($y/$yc)")" "$r"
  done
  results+=("$(py "import statistics as s; r=[${ratios[*]/%/,}]; print(f'$name median ratio {s.median(r):.3f} over {len(r)} rounds (range {min(r):.3f}-{max(r):.3f}); target > 1')")")
  echo "${results[-1]}"
}

# mean article size (title + body) of the loaded wiki, for go-ycsb's field
mean_size() { # dsn
  rm -rf "$work/r"
  "$fb" run wiki --db "$1" --reads 100 --threads 1 --requests 1 --sets 1 --repeat 1 --results "$work/r" >/dev/null 2>&1
  py "print(int($(summary_of "$work/r" extra total_bytes) / $ARTICLES))"
}

for c in ${which[*]}; do
  case $c in
  pg-read | pg-update)
    if [[ -z ${pdsn:-} ]]; then
      clusters+=("$work/pg")
      pdsn=$("$fb" cluster up postgres --nodes 1 --dir "$work/pg" 2>/dev/null | sed -n 's/^DSN: //p')
      "$fb" load wiki --db "$pdsn" --articles "$ARTICLES" >/dev/null 2>&1
      size=$(mean_size "$pdsn")
      pport=$(sed -E 's#.*@127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$pdsn")
      puser=$(sed -E 's#postgres(ql)?://([^:@]+).*#\2#' <<<"$pdsn")
      pdb=$(sed -E 's#.*/([^/?]+)(\?.*)?$#\1#' <<<"$pdsn")
      echo "postgres: $ARTICLES articles of mean size $size bytes"
      ycsb_props=(-p pg.host=127.0.0.1 -p pg.port="$pport" -p pg.user="$puser" -p pg.db="$pdb"
        -p recordcount="$ARTICLES" -p fieldcount=1 -p fieldlength="$size")
      "$ycsb" load pg -P "$cache/src-$ver/workloads/workloadc" "${ycsb_props[@]}" -p threadcount="$THREADS" >/dev/null 2>&1
    fi
    ycsb_props=(-p pg.host=127.0.0.1 -p pg.port="$pport" -p pg.user="$puser" -p pg.db="$pdb"
      -p recordcount="$ARTICLES" -p fieldcount=1 -p fieldlength="$size")
    if [[ $c == pg-read ]]; then compare "$c" "$pdsn" 100 read pg; else compare "$c" "$pdsn" 0 update pg; fi
    ;;
  redis-read | redis-update)
    if [[ -z ${rdsn:-} ]]; then
      clusters+=("$work/redis")
      rdsn=$("$fb" cluster up redis --nodes 1 --dir "$work/redis" 2>/dev/null | sed -n 's/^DSN: //p')
      "$fb" load wiki --db "$rdsn" --articles "$ARTICLES" >/dev/null 2>&1
      rsize=$(mean_size "$rdsn")
      raddr=$(sed -E 's#redis://([^/?]+).*#\1#' <<<"$rdsn")
      echo "redis: $ARTICLES articles of mean size $rsize bytes"
      "$ycsb" load redis -P "$cache/src-$ver/workloads/workloadc" -p redis.addr="$raddr" \
        -p recordcount="$ARTICLES" -p fieldcount=1 -p fieldlength="$rsize" -p threadcount="$THREADS" >/dev/null 2>&1
    fi
    ycsb_props=(-p redis.addr="$raddr" -p recordcount="$ARTICLES" -p fieldcount=1 -p fieldlength="$rsize")
    if [[ $c == redis-read ]]; then compare "$c" "$rdsn" 100 read redis; else compare "$c" "$rdsn" 0 update redis; fi
    ;;
  *) echo "unknown comparison $c (pg-read pg-update redis-read redis-update)" >&2; exit 2 ;;
  esac
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${results[@]}"
