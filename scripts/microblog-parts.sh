#!/usr/bin/env bash
# Statistics of the microblog generator: version 1 (the whole graph at
# once, built from git revision OLD_REV) against the current version (3:
# in parts, following weights corrected for saturation; this tree), at
# 400, 10,000 and 100,000 users, seed 1; the current version both as one
# part and as the union of 7 parts (they must agree row for row). Prints a
# Markdown table (docs/microblog-generator.md, "Version 3 against
# versions 1 and 2"). Version 2's rows there came from this script at
# revision 517a736.
#
#   scripts/microblog-parts.sh [SIZES...]      (default: 400 10000 100000)
#   OLD_REV=<rev> PARTS=7 SEED=1 WORK=/tmp/mbparts
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_REV=${OLD_REV:-9471571}
PARTS=${PARTS:-7}
SEED=${SEED:-1}
WORK=${WORK:-/tmp/mbparts}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(400 10000 100000)
mkdir -p "$WORK"
if [ ! -x "$WORK/fb-old" ]; then
	rm -rf "$WORK/old-src" && mkdir -p "$WORK/old-src"
	git archive "$OLD_REV" | tar -x -C "$WORK/old-src"
	(cd "$WORK/old-src" && go build -o "$WORK/fb-old" ./cmd/fieldbench)
fi
go build -o "$WORK/fb-new" ./cmd/fieldbench
go build -o "$WORK/mbstats" ./scripts/mbstats

echo "| generator | users | follows | per user | tweets | per user | max followers / following | follower fit α / R² | following fit α / R² | mean tweets at 0–15 / 16–63 / 64–255 / 256+ followers | self-follows / duplicates |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${sizes[@]}"; do
	rm -rf "$WORK/v1-$n" "$WORK/v2-$n" "$WORK/v2p-$n"
	"$WORK/fb-old" generate microblog --users "$n" --seed "$SEED" --out "$WORK/v1-$n" >/dev/null
	"$WORK/fb-new" generate microblog --users "$n" --seed "$SEED" --out "$WORK/v2-$n" >/dev/null
	for ((i = 0; i < PARTS; i++)); do
		"$WORK/fb-new" generate microblog --users "$n" --seed "$SEED" --shard "$i/$PARTS" --out "$WORK/v2p-$n" >/dev/null
	done
	"$WORK/mbstats" "v1" "$WORK/v1-$n"
	"$WORK/mbstats" "v3, 1 part" "$WORK/v2-$n"
	"$WORK/mbstats" "v3, $PARTS parts" "$WORK/v2p-$n"
	# The parts' rows are the one part's rows.
	for f in users follows tweets; do
		if ! cmp -s <(tail -q -n +2 "$WORK/v2-$n/$f.csv" | sort) <(tail -q -n +2 "$WORK"/v2p-"$n"/"$f"-*-of-"$PARTS".csv | sort); then
			echo "MISMATCH: $n users, $f: $PARTS parts differ from one part" >&2
			exit 1
		fi
	done
done
