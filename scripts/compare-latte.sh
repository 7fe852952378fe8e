#!/usr/bin/env bash
# Client efficiency against a 1-node Cassandra: inserts per client
# CPU-second of fieldbench and of the Rust tool latte (whose published
# figure is ~155k ops per client CPU-second), on the same server.
#
#   scripts/compare-latte.sh                       # defaults below
#   OPS=1000000 INFLIGHT=128 scripts/compare-latte.sh
#
# Needs: what scripts/install-servers.sh installs (java, mvn: fieldbench
# starts Cassandra 5.0 from the cached Maven Central jars) and, for the
# latte side, `latte` in PATH or ~/.cargo/bin (cargo install latte-cli).
# Without latte the fieldbench figure is still measured and the script says
# that latte was unavailable.
#
# What runs (docs/cassandra.md, "Client efficiency", has the figures):
#   fieldbench  `fieldbench run ingest` into the cassandra adapter with the
#               DSN option insert=single: every record is its own prepared
#               single-row INSERT (no batch), ONE, RF 1; one source whose
#               InsertBatch keeps INFLIGHT inserts in flight on one
#               connection (db/cassandra/pipeline.go: the CQL protocol
#               spoken directly, as latte's driver multiplexes its
#               connection); rows of the ingest workload (10 columns,
#               the study's 126-byte record), generated as they are sent;
#               no count afterwards (--verify=false).
#   latte       `latte run` of a workload script written here with the same
#               table and a row of the same shape and sizes, 1 thread,
#               INFLIGHT concurrent requests, ONE; and latte's own
#               workloads/basic/write.rn (one bigint column: the published
#               figure's setting) for reference.
# Client CPU = user+sys seconds of the client process (/usr/bin/time),
# including its start, connection and schema preparation. For fieldbench the
# same command with 1 record (same start-up, connection, table creation,
# truncate and result file) is measured too and subtracted, so that its
# figure covers the insert phase; latte's start-up is not subtracted (it is
# small: its `run` connects and prepares only; schema is created beforehand
# by `latte schema`, not timed), which if anything favours fieldbench less.
# Each side gets a warm-up run (not counted) and ROUNDS measured runs that
# alternate; the median of the rounds is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

OPS=${OPS:-500000}
INFLIGHT=${INFLIGHT:-128}
ROUNDS=${ROUNDS:-3}
HEAP=${HEAP:-1g}

work=$(mktemp -d /tmp/fieldbench-latte-XXXXXX)
fb="$work/fieldbench"
go build -o "$fb" ./cmd/fieldbench
dir="$work/cluster"
cleanup() {
  "$fb" cluster down --dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

latte=$(command -v latte || true)
[ -z "$latte" ] && [ -x "$HOME/.cargo/bin/latte" ] && latte=$HOME/.cargo/bin/latte

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPS=$OPS INFLIGHT=$INFLIGHT ROUNDS=$ROUNDS HEAP=$HEAP latte=${latte:-unavailable}"

"$fb" cluster up cassandra --nodes 1 --dir "$dir" --opt heap="$HEAP" >"$work/up" 2>&1 || { cat "$work/up" >&2; exit 1; }
hostport=$(sed -n 's|^DSN: cassandra://\([^/]*\)/.*|\1|p' "$work/up")
echo "cassandra $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$dir/cluster.json" | head -1) at $hostport"

# timed CMD... : runs CMD; its user+sys CPU seconds go to $work/cpu and its
# wall seconds to $work/wall.
timed() {
  /usr/bin/time -f '%U %S %e' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
    tail -20 "$work/err" >&2
    return 1
  }
  read -r u s e < <(tail -1 "$work/time")
  python3 -c "print($u + $s)" >"$work/cpu"
  echo "$e" >"$work/wall"
}

dsn="cassandra://$hostport/fbcmp?consistency=ONE&rf=1&insert=single&concurrency=$INFLIGHT&conns=1"
fb_run() { # records -> CPU seconds
  timed "$fb" run ingest --db "$dsn" --sources 1 --batch 10000 --records "$1" --verify=false \
    --timeout 30m --results "$work/results"
  cat "$work/cpu"
}

cat >"$work/ingest.rn" <<'RN'
// An ingest-shaped row: the table and column sizes of fieldbench's ingest
// workload (db/cassandra/ingest.go), one single-row INSERT per cycle.
const INSERT = "insert";
const KEYSPACE = "fbcmp_latte";
const TABLE = "ingest_records";

pub async fn schema(db) {
    db.execute(`CREATE KEYSPACE IF NOT EXISTS ${KEYSPACE} \
                WITH REPLICATION = { 'class' : 'SimpleStrategy', 'replication_factor' : 1 }`).await?;
    db.execute(`DROP TABLE IF EXISTS ${KEYSPACE}.${TABLE}`).await?;
    db.execute(`CREATE TABLE ${KEYSPACE}.${TABLE} (source int, bucket int, seq int, id text, channel int,
                measured_us bigint, tag text, quality int, value double, recorded_us bigint,
                PRIMARY KEY ((source, bucket), seq, id))`).await?;
}

pub async fn erase(db) {
    db.execute(`TRUNCATE TABLE ${KEYSPACE}.${TABLE}`).await
}

pub async fn prepare(db) {
    db.prepare(INSERT, `INSERT INTO ${KEYSPACE}.${TABLE} (source, bucket, seq, id, channel, measured_us, tag,
                quality, value, recorded_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).await?;
}

pub async fn run(db, i) {
    let seq = i % 1000000000;
    let t = 1700000000000000 + i * 20000;
    db.execute_prepared(INSERT, [0, seq / 65536, seq, latte::text(i, 36), latte::hash_range(i, 64), t,
        latte::text(i + 1, 50), latte::hash_range(i, 4), latte::uniform(i, 225.0, 235.0), t + 5000]).await?
}
RN
cat >"$work/basic.rn" <<'RN'
// latte's workloads/basic/write.rn: the published figure's workload.
const INSERT = "insert";
const KEYSPACE = "latte";
const TABLE = "basic";

pub async fn schema(db) {
    db.execute(`CREATE KEYSPACE IF NOT EXISTS ${KEYSPACE} \
                WITH REPLICATION = { 'class' : 'SimpleStrategy', 'replication_factor' : 1 }`).await?;
    db.execute(`DROP TABLE IF EXISTS ${KEYSPACE}.${TABLE}`).await?;
    db.execute(`CREATE TABLE ${KEYSPACE}.${TABLE}(id bigint PRIMARY KEY)`).await?;
}

pub async fn prepare(db) {
    db.prepare(INSERT, `INSERT INTO ${KEYSPACE}.${TABLE}(id) VALUES (:id)`).await?;
}

pub async fn run(db, i) {
    db.execute_prepared(INSERT, [i]).await?
}
RN

latte_run() { # workload -> CPU seconds
  (cd "$work" && timed "$latte" run "$work/$1.rn" -d "$OPS" -w 0 -t 1 -p "$INFLIGHT" --consistency ONE \
    -o "$work/latte-$1.json" "$hostport")
  cat "$work/cpu"
}

per_cpu() { python3 -c "print(round($1 / $2))"; }
median() { python3 -c "import statistics, sys; print(round(statistics.median(float(x) for x in sys.argv[1:])))" "$@"; }

echo "fieldbench warm-up run (not counted)..."
fb_run "$OPS" >/dev/null
base=$(fb_run 1)
echo "fieldbench fixed cost (same command, 1 record): $base CPU-s"
if [ -n "$latte" ]; then
  for w in ingest basic; do
    (cd "$work" && "$latte" schema "$work/$w.rn" "$hostport" >/dev/null 2>&1) || { echo "latte schema $w failed" >&2; latte=""; break; }
  done
fi
if [ -n "$latte" ]; then
  echo "latte warm-up run (not counted)..."
  latte_run ingest >/dev/null
fi

fbs=() las=() lbs=()
for r in $(seq 1 "$ROUNDS"); do
  c=$(fb_run "$OPS"); w=$(cat "$work/wall")
  net=$(python3 -c "print(max($c - $base, 1e-9))")
  f=$(per_cpu "$OPS" "$net"); fbs+=("$f")
  line=$(printf 'round %d: fieldbench %8s ins/CPU-s (%.2f CPU-s net of %.2f, %ss wall, %s ins/s)' "$r" "$f" "$net" "$c" "$w" "$(per_cpu "$OPS" "$w")")
  if [ -n "$latte" ]; then
    c=$(latte_run ingest); w=$(cat "$work/wall")
    l=$(per_cpu "$OPS" "$c"); las+=("$l")
    line+=$(printf '   latte ingest-row %8s ins/CPU-s (%.2f CPU-s, %ss wall)' "$l" "$c" "$w")
    c=$(latte_run basic); w=$(cat "$work/wall")
    l=$(per_cpu "$OPS" "$c"); lbs+=("$l")
    line+=$(printf '   latte basic %8s ins/CPU-s (%.2f CPU-s, %ss wall)' "$l" "$c" "$w")
  fi
  echo "$line"
done

f=$(median "${fbs[@]}")
echo
echo "fieldbench (ingest rows, single-row INSERTs): median $f inserts per client CPU-second"
if [ -n "$latte" ]; then
  l=$(median "${las[@]}"); b=$(median "${lbs[@]}")
  echo "latte $("$latte" --version 2>/dev/null | awk 'NR==1 {print $NF}') (same rows):             median $l inserts per client CPU-second"
  echo "latte (its basic write.rn, one bigint):       median $b inserts per client CPU-second"
  echo "ratio fieldbench / latte on the same rows: $(python3 -c "print(round($f / $l, 3))")"
else
  echo "latte: UNAVAILABLE (not in PATH nor ~/.cargo/bin; install with: cargo install latte-cli)"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
