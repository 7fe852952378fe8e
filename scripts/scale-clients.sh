#!/usr/bin/env bash
# What one client costs: runs microblog, wiki (threads) and ingest (sources)
# on null:// (no database: every operation answers at once) at 1, 1,000,
# 10,000 and 100,000 clients, open loop at one operation per client per
# second, and prints per step the peak RSS of the fieldbench process, the
# RSS per client ((peak RSS at N - peak RSS at 1) / N), the client's CPU per
# operation, the achieved/offered rate, the peak goroutines and the CPU
# the process got (its CPU seconds over the wall time, in % of one CPU:
# CPU/op × offered rate is what it needed; on a machine loaded past its
# cores a niced process gets less, and the achieved rate shows it). Every
# step is its own process (peak RSS is per process) and runs under
# nice -n 10.
#
#   scripts/scale-clients.sh
#   STEPS="1 1000" DURATION=5s scripts/scale-clients.sh microblog
#   CLI=0 scripts/scale-clients.sh        # skip the microblog runs through the CLI
#
# Families: microblog, wiki and ingest are driven by cmd/fieldbench-scale
# (the workloads' real clients, runner and recorder on the null adapter;
# wiki and ingest have no open loop in the CLI). "microblog-cli" runs
# `fieldbench run microblog --db null:// --clients N --rate N` and reads the
# client's cost from the summary of its result.jsonl, as a user would.
# An ingest operation is one batch of BATCH records (default 10).
set -euo pipefail

cd "$(dirname "$0")/.."
STEPS=${STEPS:-"1 1000 10000 100000"}
DURATION=${DURATION:-15s}
BATCH=${BATCH:-10}
CLI=${CLI:-1}
FAMILIES=("$@")
if [ ${#FAMILIES[@]} -eq 0 ]; then
	FAMILIES=(microblog wiki ingest)
	[ "$CLI" = 1 ] && FAMILIES+=(microblog-cli)
fi
command -v jq >/dev/null || { echo "scale-clients: jq is needed to read the figures" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/fieldbench-scale" ./cmd/fieldbench-scale
go build -o "$work/fieldbench" ./cmd/fieldbench
secs=$(echo "$DURATION" | sed 's/s$//')

# step FAMILY N prints one JSON object: the figures of one process.
step() {
	local fam=$1 n=$2
	if [ "$fam" = microblog-cli ]; then
		nice -n 10 "$work/fieldbench" run microblog --db null:// --clients "$n" --rate "$n" \
			--duration "$DURATION" --results "$work/results" >"$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
		local res
		res=$(ls -d "$work"/results/*/ | tail -1)result.jsonl
		jq -c --argjson n "$n" --argjson secs "$secs" 'select(.kind == "summary") | .summary |
			([.ops[].count] | add) as $done | ([.ops[].errors // {} | .[]] | add // 0) as $errs |
			{family: "microblog-cli", clients: $n, offered_ops_per_sec: $n,
			 achieved_ops_per_sec: ($done / $secs), completed: $done, errors: $errs,
			 client: .client,
			 cpu_per_op_us: ((.client.cpu_user_seconds + .client.cpu_sys_seconds) / ($done + $errs) * 1e6)}' "$res"
		rm -rf "$work/results"
	else
		nice -n 10 "$work/fieldbench-scale" -family "$fam" -clients "$n" -duration "$DURATION" -batch "$BATCH"
	fi
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
printf '%-14s %8s %11s %15s %11s %12s %10s %9s %10s %8s\n' family clients "peak RSS" "RSS per client" "CPU/op" "achieved/s" "offered/s" achieved goroutines "CPU got"
for fam in "${FAMILIES[@]}"; do
	base=""
	for n in $STEPS; do
		j=$(step "$fam" "$n")
		rss=$(jq -r '.client.max_rss_bytes' <<<"$j")
		[ -z "$base" ] && base=$rss
		jq -r --argjson base "$base" --arg fam "$fam" '
			def mib: (. / 1048576 * 10 | round / 10 | tostring) + " MiB";
			[$fam, .clients, (.client.max_rss_bytes | mib),
			 (if .clients > 1 then ((.client.max_rss_bytes - $base) / .clients / 1024 * 10 | round / 10 | tostring) + " KiB" else "-" end),
			 ((.cpu_per_op_us * 10 | round / 10 | tostring) + " µs"),
			 (.achieved_ops_per_sec | round), .offered_ops_per_sec,
			 ((.achieved_ops_per_sec / .offered_ops_per_sec * 1000 | round / 10 | tostring) + " %"),
			 .client.peak_goroutines,
			 (((.client.cpu_user_seconds + .client.cpu_sys_seconds) / .client.wall_seconds * 100 | round | tostring) + " %")] | @tsv' <<<"$j" |
			awk -F'\t' '{printf "%-14s %8s %11s %15s %11s %12s %10s %9s %10s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
