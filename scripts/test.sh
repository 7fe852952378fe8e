#!/usr/bin/env bash
# The whole test suite, as the README's quick start and CI run it: install
# the database servers the adapter tests start (Debian packages, once), then
# run every Go test. Adapter tests start and stop their servers themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
# install-servers.sh installed podman: the image test must run, not skip.
export FIELDBENCH_REQUIRE_IMAGE=1
# -p 1: one test package at a time. The adapter and cluster packages start
# real servers (JVMs among them); on a 2-core machine running them side by
# side starves them and turns timeouts into noise.
# -timeout 30m: the Cassandra adapter package (1- and 3-node conformance)
# takes over 10 minutes, go test's default limit, on a loaded machine.
go test -p 1 -timeout 30m ./... "$@"

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
