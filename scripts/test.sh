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
trap 'rm -rf "$tools"' EXIT
go build -o "$tools/testtimes" ./scripts/testtimes

# The packages whose tests start database servers (JVMs among them) run
# one at a time (-p 1): on a 2-core machine two of them side by side starve
# each other and turn timeouts into noise. Every other package runs beside
# them, also one at a time, with FIELDBENCH_TEST_NO_SERVERS=1: a package
# that starts a server there fails and says to list it here.
servers=(
  ./adapter/cassandra ./adapter/couchbase ./adapter/couchdb ./adapter/hbase
  ./adapter/mariadb ./adapter/mongodb ./adapter/postgres ./adapter/redis
  ./adapter/rethinkdb ./adapter/sqlserver ./cluster ./experiment/convergence
  ./history ./internal/cli ./job ./kubejob
)
mod=$(go list -m)
others=$(go list ./... | grep -vxF -f <(printf "$mod/%s\n" "${servers[@]#./}"))

# -timeout 30m: the Cassandra adapter package (1- and 3-node conformance)
# took over 10 minutes, go test's default limit, on a loaded machine.
others_out="$tools/others.txt"
FIELDBENCH_TEST_NO_SERVERS=1 go test -json -p 1 -timeout 20m $others "$@" 2>&1 |
  "$tools/testtimes" -stream "$record" > "$others_out" &
others_pid=$!
status=0
go test -json -p 1 -timeout 30m "${servers[@]}" "$@" 2>&1 | "$tools/testtimes" -stream "$record" || status=1
wait "$others_pid" || status=1
# go test's own exit status is lost in the pipe: a failure is read back.
echo "--- packages that start no server:"
cat "$others_out"
if grep -q '"Action":"fail"' "$record"; then
  status=1
fi
echo "--- where the time went (go run ./scripts/testtimes $record):"
"$tools/testtimes" -n 25 "$record" || true
[[ $status -eq 0 ]] || { echo "test.sh: tests failed (see above)" >&2; exit 1; }

# Fuzz every parser of user input for a bounded number of inputs, one
# target at a time (each target's seed corpus already ran above as an
# ordinary test). A finding fails the suite and leaves its input under the
# package's testdata/fuzz/ to commit as a regression seed. The budgets are
# counts of inputs (about 10 s of each target on a loaded 2-core machine),
# not durations: with a duration, Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" when the time runs out
# while a worker is busy (go.dev/issue/75804, fixed in Go 1.27; seen here
# on FuzzDecodeHist). Minimizing a new input is bounded the same way (up
# to 60 s each by default). FUZZTIME=30s or FUZZTIME=1000x sets every target's
# budget; FUZZTIME=0 skips this.
fuzztime="${FUZZTIME:-}"
if [ "$fuzztime" != 0 ]; then
  while read -r pkg target budget; do
    budget="${fuzztime:-$budget}"
    echo "fuzz $target ($pkg), $budget"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" -fuzzminimizetime 200x "$pkg"
  done <<'TARGETS'
./adapter FuzzRedact 10000x
./adapter/all FuzzParseDSN 3000x
./experiment FuzzParse 30000x
./workload FuzzParseMix 200000x
./workload/trajectory FuzzParseInputs 150000x
./workload/wiki FuzzDump 30000x
./result FuzzDecode 30000x
./result FuzzDecodeHist 30000x
./report FuzzReport 20x
TARGETS
fi
