#!/usr/bin/env bash
# Side-by-side: fieldbench against the databases' own load tools on the same
# server, with the same number of connections and no pipelining, and prints
# fieldbench/native ratios. Servers are started by fieldbench on loopback and
# stopped at the end.
#
#   scripts/compare-native.sh            # all comparisons
#   CLIENTS=4 SECONDS_=20 scripts/compare-native.sh pg-read
#
# Comparisons:
#   pg-read     fieldbench wiki point reads vs pgbench -M prepared running
#               the same SELECT (a pgbench -S-style read of one row by key)
#   pg-ingest   fieldbench ingest (COPY per batch) vs psql \copy of the same
#               rows from a CSV file
#   redis-get   fieldbench wiki point reads on Redis vs redis-benchmark -t get
#               with the same key count and value size
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-4}
SECONDS_=${SECONDS_:-15}
ARTICLES=${ARTICLES:-20000}
RECORDS=${RECORDS:-200000}
which=("${@:-pg-read pg-ingest redis-get}")

work=$(mktemp -d /tmp/fieldbench-compare-XXXXXX)
chmod 755 "$work"
fb="$work/fieldbench"
go build -o "$fb" ./cmd/fieldbench
clusters=()
cleanup() {
  for d in "${clusters[@]}"; do "$fb" cluster down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

up() { # engine dir -> prints DSN
  "$fb" cluster up "$1" --nodes 1 --dir "$2" 2>/dev/null | sed -n 's/^DSN: //p'
}

figure() { # result-dir-glob op -> ops/s of op in the newest run's summary
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
path = sorted(glob.glob(sys.argv[1] + "/*/result.jsonl"))[-1]
for line in open(path):
    l = json.loads(line)
    if l["kind"] == "summary":
        s = l["summary"]
        op = sys.argv[2]
        print(s["ops"][op]["ops_per_sec"] if op in s.get("ops", {}) else s["extra"][op])
PY
}

ratio() { python3 -c "print(f'{float($1)/float($2):.3f}')"; }

report() { # name fieldbench native
  printf '%-10s fieldbench %12.0f   native %12.0f   ratio %s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"
}

pg_port() { sed -E 's#.*@127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$1"; }

for c in ${which[*]}; do
  case $c in
  pg-read)
    clusters+=("$work/pg"); dsn=$(up postgres "$work/pg")
    "$fb" load wiki --db "$dsn" --articles "$ARTICLES" >/dev/null
    # fieldbench: read-only request sets, CLIENTS threads, ~SECONDS_ long
    "$fb" run wiki --db "$dsn" --reads 100 --threads "$CLIENTS" --requests $((CLIENTS * 4000)) \
      --sets 1 --repeat 6 --results "$work/r-pg-read" >/dev/null 2>&1
    f=$(figure "$work/r-pg-read" read)
    printf '\\set id random(1, %d)\nselect title, body from articles where id = :id;\n' "$ARTICLES" >"$work/read.sql"
    n=$(pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_" -f "$work/read.sql" \
      -h 127.0.0.1 -p "$(pg_port "$dsn")" -U postgres fieldbench 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    report pg-read "$f" "$n"
    ;;
  pg-ingest)
    clusters+=("$work/pgi"); dsn=$(up postgres "$work/pgi")
    "$fb" run ingest --db "$dsn" --sources 1 --records "$RECORDS" --batch "$RECORDS" --results "$work/r-pg-ingest" >/dev/null 2>&1
    f=$(figure "$work/r-pg-ingest" throughput_records_per_s)
    "$fb" generate ingest --sources 1 --records "$RECORDS" --out "$work/ingest" >/dev/null
    port=$(pg_port "$dsn")
    psql -q -h 127.0.0.1 -p "$port" -U postgres fieldbench -c "truncate ingest_records" >/dev/null
    t0=$(date +%s.%N)
    psql -q -h 127.0.0.1 -p "$port" -U postgres fieldbench -c "\\copy ingest_records from '$work/ingest/records.csv' csv header" >/dev/null
    t1=$(date +%s.%N)
    n=$(python3 -c "print($RECORDS/($t1-$t0))")
    report pg-ingest "$f" "$n"
    ;;
  redis-get)
    clusters+=("$work/redis"); dsn=$(up redis "$work/redis")
    "$fb" load wiki --db "$dsn" --articles "$ARTICLES" >/dev/null
    "$fb" run wiki --db "$dsn" --reads 100 --threads "$CLIENTS" --requests $((CLIENTS * 10000)) \
      --sets 1 --repeat 6 --results "$work/r-redis" >/dev/null 2>&1
    f=$(figure "$work/r-redis" read)
    port=$(sed -E 's#redis://127\.0\.0\.1:([0-9]+).*#\1#' <<<"$dsn")
    size=$(figure "$work/r-redis" total_bytes)
    d=$(python3 -c "print(int($size/$ARTICLES))")
    redis-benchmark -h 127.0.0.1 -p "$port" -t set -n "$ARTICLES" -r "$ARTICLES" -d "$d" -c "$CLIENTS" -q >/dev/null
    n=$(redis-benchmark -h 127.0.0.1 -p "$port" -t get -n $((CLIENTS * 60000)) -r "$ARTICLES" -d "$d" -c "$CLIENTS" -P 1 -q --csv |
      tail -1 | cut -d, -f2 | tr -d '"')
    report redis-get "$f" "$n"
    ;;
  *) echo "unknown comparison $c" >&2; exit 2 ;;
  esac
done
