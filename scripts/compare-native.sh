#!/usr/bin/env bash
# Side-by-side: fieldbench against the databases' own load tools on the same
# server, with the same number of connections and no pipelining, and prints
# fieldbench/native ratios. Servers are started by fieldbench on loopback and
# stopped at the end.
#
#   scripts/compare-native.sh            # all comparisons
#   CLIENTS=4 SECONDS_=10 ROUNDS=5 scripts/compare-native.sh pg-read
#   CLIENT_THREADS=2 scripts/compare-native.sh redis-get
#   FIELDBENCH_BIN=/tmp/fieldbench-old scripts/compare-native.sh   # another build
#   CORES=split scripts/compare-native.sh pg-read   # one core placement only
#   LOOP=0 scripts/compare-native.sh pg-read        # fieldbench's goroutine-per-thread reads
#
# Comparisons:
#   pg-read     fieldbench wiki point reads vs pgbench -M prepared running
#               the same SELECT (a pgbench -S-style read of one row by key)
#   pg-mixed    fieldbench wiki with READS % reads (default 80) and the rest
#               updates vs pgbench -M prepared running the same SELECT and,
#               for an update, the SELECT then an UPDATE writing the body
#               back with one byte appended (scripts weighted READS and
#               100-READS); operations per second, an update counting once.
#               pgbench's update sends the body as a text parameter, which
#               the server checks as UTF-8 and concatenates with '1' itself;
#               fieldbench sends bytea in binary: a little less server work
#               on fieldbench's side
#   pg-ingest   fieldbench ingest (COPY per batch) vs psql \copy of the same
#               rows from a CSV file
#   redis-get   fieldbench wiki point reads on Redis vs redis-benchmark -t get
#               with as many keys, every one present, of the mean article size
#   redis-mget  the same fieldbench reads vs redis-benchmark sending what a
#               wiki read sends: MGET of a title-sized and a body-sized key
#
# How it stays like-for-like (see docs/postgres.md and docs/redis.md,
# "Client efficiency"):
#   - one server per comparison, loaded once; a warm-up run of each side is
#     discarded, then ROUNDS rounds alternate the sides (fieldbench, native,
#     fieldbench, native, ...) so that load from other jobs on the machine
#     hits both; the ratio printed is the median of the per-round ratios;
#   - same connections: CLIENTS fieldbench threads, each using one
#     connection at a time (CLIENTS in use), against CLIENTS
#     pgbench/redis-benchmark connections;
#   - same client design for the reads and updates (LOOP, default 1): fieldbench run
#     wiki --loop sends every connection's requests from one event loop,
#     as pgbench and redis-benchmark do; LOOP=0 measures its default
#     driver, a goroutine per thread, which costs more client CPU;
#   - same client OS threads for the reads and updates: CLIENT_THREADS (default 1, what
#     pgbench -j and redis-benchmark --threads default to) is pgbench -j,
#     redis-benchmark --threads and fieldbench's GOMAXPROCS (Go's documented
#     setting for how many threads run Go code at once); the ingest runs
#     both sides with their defaults (psql is one thread; fieldbench
#     generates its records while it sends them, psql reads a CSV made
#     beforehand);
#   - same keys: ids uniform over all ARTICLES, every key present;
#   - same measured phase, about SECONDS_ long on both sides: operations
#     completed / wall time of the phase, connection set-up excluded on both
#     sides (fieldbench: sum of its request-set times; pgbench: its tps
#     "without initial connection time"; redis-benchmark: its requests per
#     second; psql: \timing of the \copy);
#   - same bytes: pgbench has no binary mode, and in text format a bytea
#     body comes back hex-encoded (twice the bytes, and the server's work
#     to encode them); so pgbench reads articles_text, a copy of the table
#     whose body is text, which goes over the wire as it is, while
#     fieldbench reads its bytea table in binary;
#   - core placement (CORES, default "shared split": both, one after the
#     other, each with its own warm-up and rounds):
#       shared  client and server processes may run on every core, as
#               they do when both are started on one machine;
#       split   the server (every process of it, and the backends it forks
#               later) is pinned to core 0 and the client, either side, to
#               the other cores (taskset): the client competes only with
#               itself, as on a client machine of its own. Needs 2 cores.
#     Both figures are printed; they answer different questions (what a
#     co-located run measures; what the database answers a client that
#     does not take its cores);
#   - client CPU per operation (user+sys of the whole client process /
#     operations; fieldbench's includes its start and the article counts
#     before and after, so it is a little high) is printed too: on a small machine the client competes with the server
#     for the cores, so it is what decides the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-4}
SECONDS_=${SECONDS_:-10}
ARTICLES=${ARTICLES:-20000}
RECORDS=${RECORDS:-200000}
ROUNDS=${ROUNDS:-3}
CLIENT_THREADS=${CLIENT_THREADS:-1}
LOOP=${LOOP:-1}
CORES=${CORES:-shared split}
READS=${READS:-80}
[[ $READS =~ ^[0-9]+$ ]] && ((READS <= 100)) || { echo "READS is a percentage, 0 to 100 (got $READS)" >&2; exit 2; }
which=("${@:-pg-read pg-mixed pg-ingest redis-get redis-mget}")

work=$(mktemp -d /tmp/fieldbench-compare-XXXXXX)
chmod 755 "$work"
fb="$work/fieldbench"
if [[ -n ${FIELDBENCH_BIN:-} ]]; then # a build to compare, e.g. of another commit
  cp "$FIELDBENCH_BIN" "$fb"
else
  go build -o "$fb" ./cmd/fieldbench
fi
clusters=()
cleanup() {
  for d in "${clusters[@]}"; do "$fb" cluster down --dir "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "CLIENTS=$CLIENTS CLIENT_THREADS=$CLIENT_THREADS LOOP=$LOOP READS=$READS SECONDS_=$SECONDS_ ARTICLES=$ARTICLES RECORDS=$RECORDS ROUNDS=$ROUNDS CORES=$CORES"
ncpu=$(nproc)
for m in $CORES; do
  case $m in
  shared) ;;
  split) ((ncpu >= 2)) || { echo "CORES=split needs 2 cores; this machine has $ncpu" >&2; exit 2; } ;;
  *) echo "unknown core placement $m (shared or split)" >&2; exit 2 ;;
  esac
done

up() { # engine dir -> prints DSN
  "$fb" cluster up "$1" --nodes 1 --dir "$2" 2>/dev/null | sed -n 's/^DSN: //p'
}

py() { python3 -c "$1"; }

# place mode cluster-dir: puts the cluster's server processes (and their
# children; a postmaster's later backends inherit it) on core 0 (split) or
# every core (shared), and sets where the clients run.
place() {
  local cpus=0-$((ncpu - 1)) pids pid
  client_cpus=
  if [[ $1 == split ]]; then cpus=0; client_cpus=1-$((ncpu - 1)); fi
  pids=$(python3 -c "import json,sys; print(' '.join(str(n['pid']) for n in json.load(open(sys.argv[1]))['nodes'] if n.get('pid')))" "$2/cluster.json")
  for pid in $pids $(for p in $pids; do pgrep -P "$p" || true; done); do
    taskset -a -p -c "$cpus" "$pid" >/dev/null
  done
}

# timed CMD... : runs CMD, leaves its stdout in $work/out and its client CPU
# seconds (user+sys, children included) in $work/cpu.
# In split placement the client runs on cores 1.. (client_cpus).
client_cpus=
pinned() {
  if [[ -n $client_cpus ]]; then taskset -c "$client_cpus" "$@"; else "$@"; fi
}
timed() {
  /usr/bin/time -f '%U %S' -o "$work/time" taskset -c "${client_cpus:-0-$((ncpu - 1))}" "$@" >"$work/out" 2>"$work/err" || {
    cat "$work/err" >&2
    return 1
  }
  py "u, s = open('$work/time').read().split()[-2:]; print(float(u) + float(s))" >"$work/cpu"
}

extra() { # result-dir key -> a summary extra figure of the newest run
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
path = sorted(glob.glob(sys.argv[1] + "/*/result.jsonl"))[-1]
for line in open(path):
    l = json.loads(line)
    if l["kind"] == "summary":
        print(l["summary"]["extra"][sys.argv[2]])
PY
}

# fb_ops result-dir -> "ops/s ops" of the newest wiki run: completed reads
# and updates over the summed request-set times (the measured phase; the
# gaps between repetitions and the counts before and after are not in it).
fb_ops() {
  python3 - "$1" <<'PY'
import glob, json, sys
path = sorted(glob.glob(sys.argv[1] + "/*/result.jsonl"))[-1]
wall, ops = 0.0, 0
for line in open(path):
    l = json.loads(line)
    if l["kind"] == "point":
        wall += l["point"]["y"] * l["point"]["n"]
    elif l["kind"] == "summary":
        for name, op in l["summary"]["ops"].items():
            if op.get("errors"):
                sys.exit(f"fieldbench {name} errors: {op['errors']}")
            ops += op["count"]
print(ops / wall, ops)
PY
}

# fb_wiki dsn requests-per-set -> runs fieldbench's request sets (CLIENTS
# threads, 5 repetitions of one set, FB_READS % reads); sets FB_RATE, FB_OPS.
FB_READS=100
fb_wiki() {
  rm -rf "$work/r-wiki"
  timed env GOMAXPROCS="$CLIENT_THREADS" "$fb" run wiki --db "$1" --reads "$FB_READS" --threads "$CLIENTS" --requests "$2" \
    --sets 1 --repeat 5 --results "$work/r-wiki" $( ((LOOP)) && echo --loop)
  read -r FB_RATE FB_OPS < <(fb_ops "$work/r-wiki")
}

# requests_for rate -> requests per set so that 5 repetitions last ~SECONDS_
requests_for() { py "print(max($CLIENTS, int($1 * $SECONDS_ / 5) // $CLIENTS * $CLIENTS))"; }

us_per_op() { py "print(f'{1e6 * float($1) / float($2):.1f}')"; }

results=()
# round name i fieldbench native fb-cpu-us native-cpu-us
round() {
  local r
  r=$(py "print(f'{float($3)/float($4):.3f}')")
  printf '%-17s round %d: fieldbench %10.0f/s  native %10.0f/s  ratio %s   client CPU µs/op: fieldbench %s native %s\n' \
    "$1" "$2" "$3" "$4" "$r" "$5" "$6"
  eval "ratios_$(tr - _ <<<"$1")+=($r)"
}
summary() { # name target
  local -n rs="ratios_$(tr - _ <<<"$1")"
  ((${#rs[@]} > 0)) || return 0
  local m
  m=$(py "import statistics; print(f'{statistics.median([${rs[*]/%/,}]):.3f}')")
  results+=("$(printf '%-17s median ratio %s over %d rounds (%s)   target >= %s' "$1" "$m" "${#rs[@]}" "${rs[*]}" "$2")")
  echo "${results[-1]}"
}

# read_rounds name dsn requests native-command...: ROUNDS rounds, each
# fieldbench's read sets then the native command (which sets NA_RATE and
# NA_OPS), and their median ratio.
read_rounds() {
  local name=$1 dsn=$2 req=$3 i f fc n nc
  shift 3
  eval "ratios_$(tr - _ <<<"$name")=()"
  for i in $(seq "$ROUNDS"); do
    fb_wiki "$dsn" "$req"; f=$FB_RATE; fc=$(us_per_op "$(cat "$work/cpu")" "$FB_OPS")
    "$@"; n=$NA_RATE; nc=$(us_per_op "$(cat "$work/cpu")" "$NA_OPS")
    round "$name" "$i" "$f" "$n" "$fc" "$nc"
  done
  summary "$name" 0.95
}

pg_port() { sed -E 's#.*@127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$1"; }

for c in ${which[*]}; do
  case $c in
  pg-read | pg-mixed)
    FB_READS=100
    [[ $c == pg-mixed ]] && FB_READS=$READS
    clusters+=("$work/$c"); dsn=$(up postgres "$work/$c")
    port=$(pg_port "$dsn")
    "$fb" load wiki --db "$dsn" --articles "$ARTICLES" >/dev/null 2>&1
    # pgbench can only ask for text results, in which a bytea body comes
    # back hex-encoded: twice the bytes, and the server's encoding work. So
    # it reads a copy of the table whose body is text (the same bytes sent
    # as they are), and both sides move the same bytes through the same
    # primary-key lookup; fieldbench reads its own bytea table in binary.
    psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres fieldbench >/dev/null <<'SQL'
create table articles_text as select id, title, convert_from(body, 'UTF8') as body from articles;
alter table articles_text add primary key (id);
vacuum analyze articles_text;
SQL
    printf '\\set id random(1, %d)\nselect title, body from articles_text where id = :id;\n' "$ARTICLES" >"$work/read.sql"
    # An update as fieldbench's: read the article, write its body back with
    # one byte appended (under -M prepared :body is a bind parameter; in
    # pgbench's simple mode it would be pasted into the SQL unquoted).
    printf '\\set id random(1, %d)\nselect title, body from articles_text where id = :id \\gset\nupdate articles_text set body = :body || '"'1'"' where id = :id;\n' "$ARTICLES" >"$work/update.sql"
    scripts=(-f "$work/read.sql")
    ((FB_READS < 100)) && scripts=(-f "$work/read.sql@$FB_READS" -f "$work/update.sql@$((100 - FB_READS))")
    pgb() { # seconds -> sets NA_RATE, NA_OPS
      timed pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENT_THREADS" -T "$1" "${scripts[@]}" \
        -h 127.0.0.1 -p "$port" -U postgres fieldbench
      NA_RATE=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/out")
      NA_OPS=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/out")
    }
    for mode in $CORES; do
      place "$mode" "$work/$c"
      # warm-up (discarded): both sides read every page they will read, and
      # fieldbench's rate sizes its request sets to ~SECONDS_.
      pgb 3
      fb_wiki "$dsn" $((CLIENTS * 2000))
      req=$(requests_for "$FB_RATE")
      read_rounds "$c-$mode" "$dsn" "$req" pgb "$SECONDS_"
    done
    ;;
  pg-ingest)
    clusters+=("$work/pgi"); dsn=$(up postgres "$work/pgi")
    port=$(pg_port "$dsn")
    "$fb" generate ingest --sources 1 --records "$RECORDS" --out "$work/ingest" >/dev/null
    fbi() {
      rm -rf "$work/r-ingest"
      pinned "$fb" run ingest --db "$dsn" --sources 1 --records "$RECORDS" --batch "$RECORDS" --results "$work/r-ingest" >/dev/null 2>&1
      extra "$work/r-ingest" throughput_records_per_s
    }
    psqlc() { # the \copy alone, timed by psql (connection set-up excluded)
      psql -q -h 127.0.0.1 -p "$port" -U postgres fieldbench -c "truncate ingest_records" >/dev/null
      ms=$(printf '\\timing on\n\\copy ingest_records from %s csv header\n' "'$work/ingest/records.csv'" |
        pinned psql -q -h 127.0.0.1 -p "$port" -U postgres fieldbench | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
      py "print($RECORDS / ($ms / 1e3))"
    }
    for mode in $CORES; do
      place "$mode" "$work/pgi"
      fbi >/dev/null; psqlc >/dev/null # warm-up (discarded)
      eval "ratios_pg_ingest_$mode=()"
      for i in $(seq "$ROUNDS"); do
        f=$(fbi); n=$(psqlc)
        round "pg-ingest-$mode" "$i" "$f" "$n" - -
      done
      summary "pg-ingest-$mode" 0.9
    done
    ;;
  redis-get | redis-mget)
    FB_READS=100
    if [[ -z ${rdsn:-} ]]; then
      clusters+=("$work/redis"); rdsn=$(up redis "$work/redis")
      rport=$(sed -E 's#redis://127\.0\.0\.1:([0-9]+).*#\1#' <<<"$rdsn")
      "$fb" load wiki --db "$rdsn" --articles "$ARTICLES" >/dev/null 2>&1
      # redis-benchmark's keys (key:%012d, ids 0..ARTICLES-1 as -r draws
      # them), EVERY one present: a missing key would answer nil, a cheaper
      # read than fieldbench's. Values: the mean body size, and for the MGET
      # comparison {x}t:/{x}b: keys of the mean title and body sizes (one
      # hash tag: redis-benchmark draws the two ids independently, and a
      # cluster node refuses an MGET across slots).
      rm -rf "$work/r-wiki"
      "$fb" run wiki --db "$rdsn" --reads 100 --threads 1 --requests 1 --sets 1 --repeat 1 --results "$work/r-wiki" >/dev/null 2>&1
      body=$(py "print(int($(extra "$work/r-wiki" total_bytes) / $ARTICLES))")
      title=$(redis-cli -h 127.0.0.1 -p "$rport" --no-raw eval \
        "local s=0 for i=1,1000 do s=s+redis.call('strlen','wiki:{'..i..'}:t') end return math.floor(s/1000)" 0 | tr -dc 0-9)
      python3 - "$ARTICLES" "$body" "$title" <<'PY' | redis-cli -h 127.0.0.1 -p "$rport" --pipe >/dev/null
import sys
n, body, title = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out = sys.stdout.buffer
def cmd(*args):
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
bv, tv = b"x" * body, b"t" * title
for i in range(n):
    k = b"%012d" % i
    cmd(b"SET", b"key:" + k, bv)
    cmd(b"SET", b"{x}b:" + k, bv)
    cmd(b"SET", b"{x}t:" + k, tv)
PY
    fi
    rb() { # command... -> sets NA_RATE (redis-benchmark's own figure) and NA_OPS
      local threads=()
      ((CLIENT_THREADS > 1)) && threads=(--threads "$CLIENT_THREADS")
      timed redis-benchmark "${threads[@]}" -h 127.0.0.1 -p "$rport" -c "$CLIENTS" -P 1 -n "$rn" -r "$ARTICLES" -d "$body" -q --csv "$@"
      NA_RATE=$(tail -1 "$work/out" | cut -d, -f2 | tr -d '"')
      NA_OPS=$rn
    }
    if [[ $c == redis-get ]]; then native=(-t get); else native=(MGET '{x}t:__rand_int__' '{x}b:__rand_int__'); fi
    for mode in $CORES; do
      place "$mode" "$work/redis"
      # warm-up (discarded) of both sides, also sizing the request sets
      fb_wiki "$rdsn" $((CLIENTS * 5000))
      rreq=$(requests_for "$FB_RATE")
      rn=$(py "print(int($FB_RATE * $SECONDS_))")
      rb "${native[@]}"
      read_rounds "$c-$mode" "$rdsn" "$rreq" rb "${native[@]}"
    done
    ;;
  *) echo "unknown comparison $c" >&2; exit 2 ;;
  esac
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${results[@]}"
