#!/usr/bin/env bash
# The whole test suite, as the README's quick start and CI run it: install
# the database servers the adapter tests start (Debian packages, once), then
# run every Go test. Adapter tests start and stop their servers themselves.
#
# Every test's time is recorded (go test -json) in FIELDBENCH_TEST_JSON
# (default: a new file under ${TMPDIR:-/tmp}); the 25 slowest tests are
# printed at the end, and `go run ./scripts/testtimes FILE` prints them
# again (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
# install-servers.sh installed podman: the image test must run, not skip.
export FIELDBENCH_REQUIRE_IMAGE=1
# One build configuration for everything this suite builds — the test
# binaries, the fieldbench binaries tests build, the image's static binary
# (scripts/build-image.sh: CGO_ENABLED=0 -trimpath) — so each package is
# compiled once and the build cache serves the rest. fieldbench needs no
# cgo (SQLite is pure Go); .ci/run sets the same for go vet.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:--trimpath}"

record="${FIELDBENCH_TEST_JSON:-$(mktemp "${TMPDIR:-/tmp}/fieldbench-test-XXXXXX.json")}"
tools=$(mktemp -d)
# On exit (Ctrl-C included) the streams still running stop too.
cleanup() {
  local pids
  pids=$(jobs -p)
  [[ -z "$pids" ]] || kill $pids 2>/dev/null || true
  rm -rf "$tools"
}
trap cleanup EXIT
go build -o "$tools/testtimes" ./scripts/testtimes

# Three streams run side by side, each one package at a time (-p 1):
#   cli:     the end-to-end tests of internal/cli (experiments, faults, hosts),
#            the cluster package, db/cassandra, db/postgres, db/redis and
#            kubernetes (the image);
#   servers: the other database folders (db/<name>) against their real
#            servers, convergence, history, job;
#   others:  every package that starts no server (with
#            FIELDBENCH_TEST_NO_SERVERS=1: one that starts a server there
#            fails and says to list it above), then the fuzzing.
# Within a stream, two packages' servers never run side by side; across
# the two server streams, two may. One stream alone left the machine idle
# about half of the time (sampled from /proc/stat during internal/cli's
# tests, 2026-12-02: 12-85 % idle every 10 s), and every wait in these
# tests is a readiness condition with a generous bound, so two at once
# share the cores without failing: docs/testing.md has the measured times.
# The two server streams are balanced by their measured times
# (docs/testing.md, 2026-12-02: internal/cli took 956 s and cluster 255 s,
# the adapters with convergence and history 1,253 s; then couchdb's and
# mongodb's conformance families and six of internal/cli's Redis and
# pouchdb-server experiments ran side by side, about 340 s and 170 s off
# them, and kubernetes's image build and job moved to servers). When the
# engines moved into their database folders (servers), Cassandra's engine
# tests (TestCassandraThreeNodes 152 s, the cluster package's slowest) went
# with them: db/cassandra runs in cli, where they ran before. Then servers
# ended 320 s after cli (CI of 444fbba: cli 1,390 s, servers 1,712 s), so
# db/postgres, db/redis (81 s together) and kubernetes (79 s) run at the
# end of cli: both streams end near 1,550 s.
cli=(./internal/cli ./cluster ./db/cassandra ./db/postgres ./db/redis ./kubernetes)
mod=$(go list -m)
# servers: every package of the database folders (db/...) that cli does not
# run — so a new database's folder joins this stream by itself, named
# nowhere here — then the other packages that start servers.
mapfile -t servers < <(go list ./db/... | grep -vxF -f <(printf "$mod/%s\n" "${cli[@]#./}") | sed "s|^$mod/|./|")
servers+=(./convergence ./history ./job)
others=$(go list ./... | grep -vxF -f <(printf "$mod/%s\n" "${cli[@]#./}" "${servers[@]#./}"))

# stream NAME GO-TEST-ARGS... runs go test -json through testtimes, which
# records every event and prints each line with the stream's name.
stream() {
  local name=$1
  shift
  go test -json -p 1 "$@" 2>&1 | "$tools/testtimes" -stream "$record" -prefix "[$name] "
}

# Fuzz every parser of user input for a bounded number of inputs, one
# target at a time (each target's seed corpus already ran above as an
# ordinary test), with one fuzzing worker (-parallel 1): it runs beside
# the server streams, and leaves them a core. A finding fails the suite
# and leaves its input under the package's testdata/fuzz/ to commit as a
# regression seed. The budgets are counts of inputs, not durations: with
# a duration, Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" when the time runs out while a worker is
# busy (go.dev/issue/75804, fixed in Go 1.27; seen here on
# FuzzDecodeHist). Minimizing a new input is bounded the same way.
# FUZZTIME=30s or FUZZTIME=1000x sets every target's budget; FUZZTIME=0
# skips this.
fuzz() {
  local fuzztime="${FUZZTIME:-}" failed=0
  [ "$fuzztime" != 0 ] || return 0
  local t0
  t0=$(date +%s)
  while read -r pkg target budget; do
    budget="${fuzztime:-$budget}"
    echo "[fuzz] $target ($pkg), $budget"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" -fuzzminimizetime 200x -parallel 1 "$pkg" 2>&1 | sed 's/^/[fuzz] /' || failed=1
  done <<'TARGETS'
./redact FuzzRedact 10000x
./adapter/all FuzzParseDSN 3000x
./experiment FuzzParse 30000x
./workload FuzzParseMix 200000x
./workload/trajectory FuzzParseInputs 150000x
./workload/wiki FuzzDump 30000x
./result FuzzDecode 30000x
./result FuzzDecodeHist 30000x
./report FuzzReport 20x
TARGETS
  echo "[fuzz] $(( $(date +%s) - t0 )) s"
  return $failed
}

# -timeout: the Cassandra adapter package (1- and 3-node conformance) took
# over 10 minutes, go test's default limit, on a loaded machine.
(FIELDBENCH_TEST_NO_SERVERS=1 stream others -timeout 20m $others "$@" && fuzz) &
others_pid=$!
stream cli -timeout 40m "${cli[@]}" "$@" &
cli_pid=$!
status=0
stream servers -timeout 30m "${servers[@]}" "$@" || status=1
wait "$cli_pid" || status=1
wait "$others_pid" || status=1
# A failure inside a pipe can be lost: it is read back from the record.
if grep -q '"Action":"fail"' "$record"; then
  status=1
fi
echo "--- where the time went (go run ./scripts/testtimes $record):"
"$tools/testtimes" -n 25 "$record" || true
[[ $status -eq 0 ]] || { echo "test.sh: tests failed (see above)" >&2; exit 1; }
