#!/usr/bin/env bash
# Measures the bytes per unit of the sizing rule (job/sizing.go, issue 40):
# each command below runs twice, at a small and a large value of the option
# it sizes, under GNU time; the difference of the two peak RSS over the
# difference of the two values is the cost of one unit, to compare with the
# figure job/sizing.go holds (the peak follows the collector's timing: take
# the larger of two runs). A dump's reading, bounded whatever its size, is
# measured at its worst cases. What only the Go heap holds (trajectory
# users, queries and requests) is measured by TestMeasureSizing (job), run
# last, which fails where a cost is above job/sizing.go's figure.
#
#   scripts/measure-sizing.sh           # 5-6 minutes on 2 cores
#   FIELDBENCH_BIN=/tmp/fb scripts/measure-sizing.sh
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-fieldbench.sh
source scripts/lib-fieldbench.sh
fb_setup sizing
trap 'rm -rf "$work"' EXIT
[ -x /usr/bin/time ] || { echo "measure-sizing: needs GNU time (/usr/bin/time)" >&2; exit 2; }

# rss CMD... prints the command's peak RSS in bytes (its output discarded).
rss() {
	/usr/bin/time -o "$work/time" -f '%M' "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	echo $(( $(tail -1 "$work/time") * 1024 ))
}

# slope NAME UNIT LO HI CMD...: runs CMD with @N@ replaced by LO, then HI
# (the work files are removed before each run), and prints the cost.
slope() {
	local name=$1 unit=$2 lo=$3 hi=$4
	shift 4
	local r=()
	for n in "$lo" "$hi"; do
		rm -rf "$work/db" "$work/out" && mkdir -p "$work/db" "$work/out"
		# generate wiki writes articles.jsonl: to /dev/null, not the disk.
		ln -s /dev/null "$work/out/articles.jsonl"
		r+=("$(rss "${@//@N@/$n}")")
	done
	awk -v name="$name" -v unit="$unit" -v lo="$lo" -v hi="$hi" -v a="${r[0]}" -v b="${r[1]}" 'BEGIN {
		printf "%-22s %8.0f B per %s   (peak RSS %.0f MB at %d, %.0f MB at %d)\n", name, (b - a) / (hi - lo), unit, a / 1e6, lo, b / 1e6, hi }'
}

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GB", $2 * 1024 / 1e9}' /proc/meminfo), $("$fb" --version)"
echo "base                   $(rss "$fb" list) B peak RSS of 'fieldbench list'"
slope ingest-record record 200000 1000000 "$fb" op ingest batch --db "sqlite://$work/db/in.db" --source 0 --index 0 --count @N@
slope microblog-user user 10000 160000 "$fb" load microblog --db null:// --users @N@
slope microblog-gen-user user 10000 160000 "$fb" generate microblog --users @N@ --out "$work/out"
slope wiki-size article 100000 1000000 "$fb" generate wiki --articles @N@ --out "$work/out"
slope trajectory-record record 10000 100000 "$fb" load trajectory --db "sqlite://$work/db/t.db" --scale 0.02 --batch @N@
# A dump's reading is bounded whatever its size: its worst cases.
python3 -c 'import sys
w = sys.stdout.write
w("<mediawiki>")
for i in range(4):
    w("<page><title>T%d</title><revision><text>" % i + "a" * (16 * 1024 * 1024 - 64) + "</text></revision></page>")
w("</mediawiki>")' >"$work/pages.xml"
echo "wiki-dump-pages        $(rss "$fb" load wiki --db "sqlite://$work/db/w1.db" --from "$work/pages.xml") B peak RSS of load wiki --from 4 pages of 16 MiB"
# /dev/zero is refused (exit 2): its peak RSS is taken all the same.
/usr/bin/time -o "$work/time" -f '%M' "$fb" load wiki --db "sqlite://$work/db/w2.db" --from /dev/zero >/dev/null 2>&1 || true
echo "wiki-dump-zero         $(( $(tail -1 "$work/time") * 1024 )) B peak RSS of load wiki --from /dev/zero (refused)"
FIELDBENCH_MEASURE_SIZING=1 go test ./job -run TestMeasureSizing -count=1 -v | grep -E '^ +sizing|^(ok|FAIL|---)'
