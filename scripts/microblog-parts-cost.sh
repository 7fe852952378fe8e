#!/usr/bin/env bash
# Cost of the microblog generator and of its loads in parts: wall time and
# peak RSS (/usr/bin/time -v) of one process per part, one process at a
# time, printed as Markdown tables, then the cost at 100 M and 500 M users
# extrapolated on paper from the measured per-part cost.
#
#   generate: fieldbench generate microblog --shard I/N (CSV files),
#   load (GeneratePart): the part as load --shard holds it before writing
#             (scripts/mbpart: microblog.GeneratePart; it also prints the
#             part's follows, tweets and timeline rows),
#   load DB MODEL: fieldbench load microblog --shard I/N --model MODEL into
#             SQLite, PostgreSQL, Redis or Cassandra, each (model, users)
#             into a fresh database.
#
# Every model materializes timelines at load: denormalized writes one
# timeline row per tweet and follower of its author, with the body;
# normalized writes the same rows with the tweet id only (the bodies stay
# in the tweets table); neither loads follows and tweets alone. That
# fan-out (Σ tweets × followers) grows much faster than the users: about
# 2.2 M rows at 2,000 users, 26 M at 10,000, 0.8 G at 100,000, 28 G at
# 1 M (mbpart), so the loads are measured at LOAD_CONFIGS sizes.
#
#   scripts/microblog-parts-cost.sh
#   CONFIGS="1000000:8 1000000:64 10000000:16 10000000:64"  generate/GeneratePart
#   WHICH=ends|all         first and last part of each N, or every part
#   LOAD_CONFIGS="2000:8 10000:8" LOAD_WHICH=ends|all|first|last
#   LOAD_DBS="sqlite postgres redis cassandra" LOAD_MODELS="normalized denormalized"
#   LOAD_TIMEOUT=900       seconds one load process may take (then: not finished)
#   CASSANDRA_HEAP=4g      the Cassandra node's heap (cluster up --opt heap=; default
#                          the engine's 512m, under which part 0/64 of 1 M users
#                          failed twice with write timeouts 4-5 minutes in)
#   LOAD_SECONDS=N         stop each load process (by its PID) after N s and
#                          report its wall and peak RSS so far, marked stopped:
#                          the memory of loads too large to finish here
#   SKIP="cassandra:10000" db:users pairs not loaded (too slow here)
#   FANOUT_USERS="100000 1000000"  whole-dataset counts for the extrapolation
#   WORK=/tmp/mbcost       NICE=19
#
# Servers: by default the script starts each (model, users) group's server
# with `fieldbench cluster up ENGINE --dir $WORK/cl-ENGINE` (loopback) and
# brings it down with --purge after the group (and on exit). PG_DSN,
# REDIS_DSN or CASSANDRA_DSN instead load into a server you started; it
# must be empty, so give one model and one size (LOAD_MODELS, LOAD_CONFIGS).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGS=${CONFIGS-"1000000:8 1000000:64 10000000:16 10000000:64"}
WHICH=${WHICH:-ends}
LOAD_CONFIGS=${LOAD_CONFIGS-"2000:8 10000:8"}
LOAD_WHICH=${LOAD_WHICH:-ends}
LOAD_DBS=${LOAD_DBS-"sqlite postgres redis cassandra"}
LOAD_MODELS=${LOAD_MODELS-"normalized denormalized"}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-900}
LOAD_SECONDS=${LOAD_SECONDS:-}
SKIP=${SKIP:-}
FANOUT_USERS=${FANOUT_USERS-"100000 1000000"}
WORK=${WORK:-/tmp/mbcost}
NICE=${NICE:-19}
mkdir -p "$WORK"
go build -o "$WORK/fieldbench" ./cmd/fieldbench
go build -o "$WORK/mbpart" ./scripts/mbpart
FB="$WORK/fieldbench"
RUN=(nice -n "$NICE")

# Clusters this script started, brought down on exit whatever happens.
UP=""
down() {
	local dir=$1
	"$FB" cluster down --purge --dir "$dir" >/dev/null 2>&1 || "$FB" cluster down --dir "$dir" >&2 || true
	UP=${UP//" $dir"/}
}
cleanup() {
	for d in $UP; do down "$d"; done
}
trap cleanup EXIT

# parts N: the parts measured of N.
parts() {
	local n=$1 which=$2
	case $which in
	first) echo 0 ;;
	last) echo $((n - 1)) ;;
	*) if [ "$which" = all ] || [ "$n" -le 2 ]; then seq 0 $((n - 1)); else echo "0 $((n - 1))"; fi ;;
	esac
}

# measure CMD...: runs CMD under /usr/bin/time -v (nice), sets WALL (m:ss),
# SECS, RSS (MiB); returns 1 when CMD failed or ran out of LOAD_TIMEOUT.
measure() {
	local log="$WORK/time.log"
	WALL="" SECS="" RSS=""
	if ! "${RUN[@]}" /usr/bin/time -v "$@" >"$WORK/out.log" 2>"$log"; then
		tail -n 5 "$WORK/out.log" >&2
		sed '/Command being timed/,$d' "$log" | tail -n 5 >&2
		return 1
	fi
	WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
	SECS=$(echo "$WALL" | awk -F: '{s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s}')
	RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
}

# measure_stopped SECONDS CMD...: runs CMD as measure does, but sends it
# SIGTERM (by the PID of the process /usr/bin/time started) after SECONDS
# unless it ended before, and SIGKILL 10 s later if it still runs; sets
# WALL, SECS, RSS and STOPPED (1 when it was stopped); returns 1 when CMD
# failed of itself.
measure_stopped() {
	local secs=$1 log="$WORK/time.log" tpid cpid
	shift
	WALL="" SECS="" RSS="" STOPPED=0
	"${RUN[@]}" /usr/bin/time -v "$@" >"$WORK/out.log" 2>"$log" &
	tpid=$!
	local end=$((SECONDS + secs))
	while [ "$SECONDS" -lt "$end" ] && kill -0 "$tpid" 2>/dev/null; do
		sleep 1
	done
	if kill -0 "$tpid" 2>/dev/null; then
		cpid=$(pgrep -P "$tpid" || true)
		if [ -n "$cpid" ]; then
			kill -TERM "$cpid" 2>/dev/null || true
			# A load that does not look at its context while it builds
			# (Cassandra's before issue 29 grew to 17.8 GiB after SIGTERM).
			end=$((SECONDS + 10))
			while [ "$SECONDS" -lt "$end" ] && kill -0 "$cpid" 2>/dev/null; do sleep 1; done
			if kill -0 "$cpid" 2>/dev/null; then kill -KILL "$cpid" 2>/dev/null || true; fi
		fi
		STOPPED=1
	fi
	local rc=0
	wait "$tpid" || rc=$?
	WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
	SECS=$(echo "$WALL" | awk -F: '{s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s}')
	RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
	if [ "$rc" -ne 0 ] && [ "$STOPPED" = 0 ]; then
		tail -n 5 "$WORK/out.log" >&2
		sed '/Command being timed/,$d' "$log" | tail -n 5 >&2
		return 1
	fi
}

# counts USERS I N: sets FOLLOWS TWEETS TL (timeline rows) of part I/N.
counts() {
	local line
	line=$("${RUN[@]}" "$WORK/mbpart" "$1" 1 "$2" "$3")
	read -r FOLLOWS TWEETS TL < <(echo "$line" | sed -E 's/.* ([0-9]+) follows, ([0-9]+) tweets, ([0-9]+) timeline rows.*/\1 \2 \3/')
}

echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, every process at nice $NICE; scripts/microblog-parts-cost.sh"
echo "CONFIGS=\"$CONFIGS\" WHICH=$WHICH LOAD_CONFIGS=\"$LOAD_CONFIGS\" LOAD_WHICH=$LOAD_WHICH LOAD_DBS=\"$LOAD_DBS\" LOAD_MODELS=\"$LOAD_MODELS\" SKIP=\"$SKIP\""

# Generation: the part as files and as load holds it.
GENROWS="$WORK/gen.rows"
: >"$GENROWS"
if [ -n "$CONFIGS" ]; then
	echo
	echo "| command | users | part | follows | tweets | timeline rows | wall (m:ss) | peak RSS (MiB) |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in $CONFIGS; do
		users=${c%%:*} n=${c##*:}
		for i in $(parts "$n" "$WHICH"); do
			rm -rf "$WORK/gen"
			measure "$FB" generate microblog --users "$users" --shard "$i/$n" --out "$WORK/gen"
			echo "| generate | $users | $i/$n | | | | $WALL | $RSS |"
			rm -rf "$WORK/gen"
			measure "$WORK/mbpart" "$users" 1 "$i" "$n"
			read -r f t tl < <(sed -E 's/.* ([0-9]+) follows, ([0-9]+) tweets, ([0-9]+) timeline rows.*/\1 \2 \3/' "$WORK/out.log")
			echo "| load (GeneratePart) | $users | $i/$n | $f | $t | $tl | $WALL | $RSS |"
			echo "$users $n $RSS" >>"$GENROWS"
		done
	done
fi

# Loads.
LOADROWS="$WORK/load.rows"
: >"$LOADROWS"
if [ -n "$LOAD_CONFIGS" ] && [ -n "$LOAD_DBS" ]; then
	echo
	echo "| command | users | part | follows | tweets | timeline rows | wall (m:ss) | peak RSS (MiB) | µs per row |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for model in $LOAD_MODELS; do
		for c in $LOAD_CONFIGS; do
			users=${c%%:*} n=${c##*:}
			for db in $LOAD_DBS; do
				case " $SKIP " in *" $db:$users "*)
					echo "| load $db $model | $users | – | | | | not run (SKIP) | | |"
					continue
					;;
				esac
				dir=""
				case $db in
				sqlite)
					rm -f "$WORK"/sqlite.db*
					dsn="sqlite://$WORK/sqlite.db"
					;;
				postgres | redis | cassandra)
					case $db in postgres) dsn=${PG_DSN:-} ;; redis) dsn=${REDIS_DSN:-} ;; cassandra) dsn=${CASSANDRA_DSN:-} ;; esac
					if [ -z "$dsn" ]; then
						dir="$WORK/cl-$db"
						rm -rf "$dir"
						up_opts=()
						[ "$db" = cassandra ] && [ -n "${CASSANDRA_HEAP:-}" ] && up_opts=(--opt "heap=$CASSANDRA_HEAP")
						"${RUN[@]}" "$FB" cluster up "$db" --dir "$dir" "${up_opts[@]}" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
						UP="$UP $dir"
						dsn=$("$FB" cluster dsn --dir "$dir")
					fi
					;;
				*)
					echo "unknown database $db" >&2
					exit 2
					;;
				esac
				for i in $(parts "$n" "$LOAD_WHICH"); do
					counts "$users" "$i" "$n"
					rows=$((FOLLOWS + TWEETS + TL))
					if [ -n "$LOAD_SECONDS" ]; then
						if measure_stopped "$LOAD_SECONDS" "$FB" load microblog --users "$users" --model "$model" --db "$dsn" --shard "$i/$n"; then
							if [ "$STOPPED" = 1 ]; then
								echo "| load $db $model | $users | $i/$n | $FOLLOWS | $TWEETS | $TL | stopped after $WALL (LOAD_SECONDS=$LOAD_SECONDS) | $RSS | |"
							else
								us=$(awk -v s="$SECS" -v r="$rows" 'BEGIN {printf "%.1f", s * 1e6 / r}')
								echo "| load $db $model | $users | $i/$n | $FOLLOWS | $TWEETS | $TL | $WALL | $RSS | $us |"
								echo "$db $model $users $n $rows $SECS $RSS" >>"$LOADROWS"
							fi
						else
							echo "| load $db $model | $users | $i/$n | $FOLLOWS | $TWEETS | $TL | failed after $WALL | $RSS | |"
						fi
					elif measure timeout "$LOAD_TIMEOUT" "$FB" load microblog --users "$users" --model "$model" --db "$dsn" --shard "$i/$n"; then
						us=$(awk -v s="$SECS" -v r="$rows" 'BEGIN {printf "%.1f", s * 1e6 / r}')
						echo "| load $db $model | $users | $i/$n | $FOLLOWS | $TWEETS | $TL | $WALL | $RSS | $us |"
						echo "$db $model $users $n $rows $SECS $RSS" >>"$LOADROWS"
					else
						echo "| load $db $model | $users | $i/$n | $FOLLOWS | $TWEETS | $TL | failed or not finished in ${LOAD_TIMEOUT}s | | |"
					fi
				done
				if [ "$db" = sqlite ]; then
					echo "|  (SQLite file after the parts: $(du -m "$WORK/sqlite.db" | cut -f1) MiB) | | | | | | | | |"
					rm -f "$WORK"/sqlite.db*
				fi
				if [ -n "$dir" ]; then down "$dir"; fi
			done
		done
	done
fi

# Whole-dataset counts for the extrapolation: every part of FANOUT_USERS
# in 8 parts (1 for fewer than 1 M users), summed.
FAN="$WORK/fanout.rows"
: >"$FAN"
for u in $FANOUT_USERS; do
	n=1
	if [ "$u" -ge 1000000 ]; then n=8; fi
	F=0 T=0 L=0
	for ((i = 0; i < n; i++)); do
		counts "$u" "$i" "$n"
		F=$((F + FOLLOWS)) T=$((T + TWEETS)) L=$((L + TL))
	done
	echo "$u $F $T $L" >>"$FAN"
done

echo
echo "Extrapolated on paper, not measured: linear in records from the per-part costs above."
awk -v genrows="$GENROWS" -v loadrows="$LOADROWS" -v fan="$FAN" '
function fmtt(s) { if (s < 3600) return sprintf("%.0f min", s / 60); if (s < 86400 * 2) return sprintf("%.1f h", s / 3600); if (s < 86400 * 365) return sprintf("%.0f days", s / 86400); return sprintf("%.1f years", s / 86400 / 365) }
function g(x) { return sprintf("%.3g", x) }
BEGIN {
	# Dataset size: follows and tweets per user as at the largest
	# FANOUT_USERS size (follows per user still grow slowly with the users,
	# so these are low); timeline rows as a power law through the two
	# largest sizes, L(U) = L1 (U/U1)^k.
	nf = 0
	while ((getline line < fan) > 0) { split(line, x, " "); nf++; FU[nf] = x[1]; FF[nf] = x[2]; FT[nf] = x[3]; FL[nf] = x[4] }
	if (nf < 2) { print "(FANOUT_USERS needs two sizes for the extrapolation)"; exit }
	u0 = FU[nf - 1]; l0 = FL[nf - 1]; u1 = FU[nf]; l1 = FL[nf]
	k = log(l1 / l0) / log(u1 / u0)
	fpu = FF[nf] / u1; tpu = FT[nf] / u1
	printf "\nWhole datasets (mbpart, every part summed):\n"
	for (j = 1; j <= nf; j++) printf "  %d users: %d follows, %d tweets, %d timeline rows\n", FU[j], FF[j], FT[j], FL[j]
	printf "  timeline rows L(U) = %s × (U / %d)^k, k = ln(%s / %s) / ln(%d / %d) = %.3f\n", g(l1), u1, g(l1), g(l0), u1, u0, k
	printf "  follows = %.2f U, tweets = %.2f U (per user at %d users)\n", fpu, tpu, u1
	ns = split("100000000 500000000", US, " ")
	for (j = 1; j <= ns; j++) {
		U = US[j]; L[U] = l1 * (U / u1) ^ k; R[U] = fpu * U + tpu * U + L[U]
		printf "  %d users: %s follows + %s tweets + %s timeline rows = %s rows\n", U, g(fpu * U), g(tpu * U), g(L[U]), g(R[U])
	}

	# Memory of GeneratePart: RSS = a·U + b·U/N + c, b from two part sizes
	# at the largest U, a from the same N at two U.
	ng = 0
	while ((getline line < genrows) > 0) { split(line, x, " "); ng++; GU[ng] = x[1]; GN[ng] = x[2]; GR[ng] = x[3] }
	haveMem = 0
	if (ng >= 2) {
		# Largest U: the smallest and largest N (means over the parts measured).
		bigU = 0; for (j = 1; j <= ng; j++) if (GU[j] > bigU) bigU = GU[j]
		nlo = 1e18; nhi = 0
		for (j = 1; j <= ng; j++) if (GU[j] == bigU) { if (GN[j] < nlo) nlo = GN[j]; if (GN[j] > nhi) nhi = GN[j] }
		smallU = 0; for (j = 1; j <= ng; j++) if (GU[j] < bigU && GN[j] == nhi && GU[j] > smallU) smallU = GU[j]
		m1 = mean(bigU, nlo); m2 = mean(bigU, nhi); m3 = mean(smallU, nhi)
		if (nlo < nhi && smallU > 0) {
			b = (m1 - m2) / (bigU / nlo - bigU / nhi)
			a = (m2 - m3 - b * (bigU / nhi - smallU / nhi)) / (bigU - smallU)
			c = m2 - a * bigU - b * bigU / nhi
			haveMem = 1
			printf "\nGeneratePart memory, RSS = a·U + b·U/N + c (MiB, means of the parts measured):\n"
			printf "  b = (%.0f − %.0f) / (%d/%d − %d/%d) = %.2f kiB per user of the part\n", m1, m2, bigU, nlo, bigU, nhi, b * 1024
			printf "  a = (%.0f − %.0f − b·(%d/%d − %d/%d)) / (%d − %d) = %.1f bytes per user of the dataset\n", m2, m3, bigU, nhi, smallU, nhi, bigU, smallU, a * 1048576
			printf "  c = %.0f MiB\n", c
		}
	}

	# Load cost per row: Σ wall / Σ rows over the parts measured at the
	# largest size loaded, per database and model; the process memory
	# beyond GeneratePart taken as the largest measured there.
	nl = 0
	while ((getline line < loadrows) > 0) {
		split(line, x, " "); key = x[1] " " x[2]; x[3] += 0
		if (!(key in LU) || x[3] > LU[key]) { LU[key] = x[3]; S[key] = 0; RW[key] = 0; M[key] = 0; if (!(key in seen)) { seen[key] = 1; order[++nl] = key } }
		if (x[3] == LU[key]) { S[key] += x[6]; RW[key] += x[5]; if (x[7] + 0 > M[key]) M[key] = x[7] + 0 }
	}
	printf "\n| database | model | from | µs per row | 100 M users: total | per process, 64 parts | per process, 1024 parts | 500 M users: total | per process, 64 parts | per process, 1024 parts |\n"
	printf "|---|---|---|---|---|---|---|---|---|---|\n"
	for (j = 1; j <= nl; j++) {
		key = order[j]; split(key, kk, " ")
		us = S[key] * 1e6 / RW[key]
		line = sprintf("| %s | %s | %s s / %s rows at %d users | %.2f |", kk[1], kk[2], S[key], RW[key], LU[key], us)
		for (q = 1; q <= ns; q++) {
			U = US[q]; tot = us * R[U] / 1e6
			line = line sprintf(" %s |", fmtt(tot))
			for (pp = 1; pp <= 2; pp++) {
				N = (pp == 1) ? 64 : 1024
				mem = haveMem ? sprintf(", %.1f GiB", (a * U + b * U / N + c + M[key]) / 1024) : ""
				line = line sprintf(" %s%s |", fmtt(tot / N), mem)
			}
		}
		print line
	}
	printf "\ntotal = µs per row × rows(U): the work of every part one after another;\n"
	printf "per process = total / N, the mean part: parts holding the most followed users hold more of the fan-out;\n"
	if (haveMem) {
		printf "memory = a·U + b·U/N + c (GeneratePart) + the load process peak RSS measured, not scaled\n"
		printf "(the four loads measured here hold a bounded number of timeline rows at once: microblog.TimelineRound for Redis and Cassandra).\n"
	}
}
function mean(u, n,   j, s, k) { s = 0; k = 0; for (j = 1; j <= ng; j++) if (GU[j] == u && GN[j] == n) { s += GR[j]; k++ } return k ? s / k : 0 }
'
