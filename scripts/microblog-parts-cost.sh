#!/usr/bin/env bash
# Cost of the microblog generator in parts: wall time and peak RSS
# (/usr/bin/time -v) of one process per part, for
#   generate: fieldbench generate microblog --shard I/N (CSV files),
#   load:     the part as load --shard holds it before writing
#             (scripts/mbpart: microblog.GeneratePart),
#   sqlite:   fieldbench load microblog --shard I/N into one SQLite file
#             (every part, at LOAD_USERS users: the timelines' fan-out makes
#             larger loads days long, see docs/microblog-generator.md).
# Runs one process at a time. Prints a Markdown table.
#
#   scripts/microblog-parts-cost.sh
#   CONFIGS="1000000:8 1000000:64 10000000:16 10000000:64" WHICH=ends|all
#   LOAD_USERS=10000 LOAD_PARTS=8 WORK=/tmp/mbcost
#   PG_DSN=postgres://...   also load every part into this (empty) PostgreSQL
#                           database (fieldbench cluster up postgres prints one)
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGS=${CONFIGS:-"1000000:1 1000000:8 1000000:64 10000000:16 10000000:64"}
WHICH=${WHICH:-ends}
LOAD_USERS=${LOAD_USERS:-10000}
LOAD_PARTS=${LOAD_PARTS:-8}
WORK=${WORK:-/tmp/mbcost}
mkdir -p "$WORK"
go build -o "$WORK/fieldbench" ./cmd/fieldbench
go build -o "$WORK/mbpart" ./scripts/mbpart

# measure WHAT USERS I N CMD...: one table row.
measure() {
	local what=$1 users=$2 i=$3 n=$4
	shift 4
	local log="$WORK/time.log"
	/usr/bin/time -v "$@" >"$WORK/out.log" 2>"$log" || { cat "$WORK/out.log" "$log" >&2; exit 1; }
	local wall rss
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
	rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
	echo "| $what | $users | $i/$n | $wall | $rss |"
}

echo "Measured $(date -u +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r); scripts/microblog-parts-cost.sh"
echo
echo "| command | users | part | wall (m:ss) | peak RSS (MB) |"
echo "|---|---|---|---|---|"
for c in $CONFIGS; do
	users=${c%%:*} n=${c##*:}
	if [ "$WHICH" = all ] || [ "$n" -le 2 ]; then parts=$(seq 0 $((n - 1))); else parts="0 $((n - 1))"; fi
	for i in $parts; do
		rm -rf "$WORK/gen"
		measure generate "$users" "$i" "$n" "$WORK/fieldbench" generate microblog --users "$users" --shard "$i/$n" --out "$WORK/gen"
		measure "load (GeneratePart)" "$users" "$i" "$n" "$WORK/mbpart" "$users" 1 "$i" "$n"
	done
done
rm -rf "$WORK/gen" "$WORK"/sqlite.db*
for ((i = 0; i < LOAD_PARTS; i++)); do
	measure "load sqlite" "$LOAD_USERS" "$i" "$LOAD_PARTS" "$WORK/fieldbench" load microblog --users "$LOAD_USERS" --db "sqlite://$WORK/sqlite.db" --shard "$i/$LOAD_PARTS"
done
if [ -n "${PG_DSN:-}" ]; then
	for ((i = 0; i < LOAD_PARTS; i++)); do
		measure "load postgres" "$LOAD_USERS" "$i" "$LOAD_PARTS" "$WORK/fieldbench" load microblog --users "$LOAD_USERS" --db "$PG_DSN" --shard "$i/$LOAD_PARTS"
	done
fi
echo
echo "SQLite file after $LOAD_PARTS parts: $(du -m "$WORK/sqlite.db" | cut -f1) MB"
