#!/usr/bin/env bash
# The whole test suite, as the README's quick start and CI run it: install
# the database servers the adapter tests start (Debian packages, once), then
# run every Go test. Adapter tests start and stop their servers themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
# -p 1: one test package at a time. The adapter and cluster packages start
# real servers (JVMs among them); on a 2-core machine running them side by
# side starves them and turns timeouts into noise.
# -timeout 30m: the Cassandra adapter package (1- and 3-node conformance)
# takes over 10 minutes, go test's default limit, on a loaded machine.
go test -p 1 -timeout 30m ./... "$@"

# Fuzz every parser of user input for a bounded time, one target at a time
# (each target's seed corpus already ran above as an ordinary test). A
# finding fails the suite and leaves its input under the package's
# testdata/fuzz/ to commit as a regression seed. FUZZTIME=0 skips this.
fuzztime="${FUZZTIME:-10s}"
if [ "$fuzztime" != 0 ]; then
  while read -r pkg target; do
    echo "fuzz $target ($pkg) for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done <<'TARGETS'
./adapter FuzzRedact
./adapter/all FuzzParseDSN
./experiment FuzzParse
./workload FuzzParseMix
./workload/trajectory FuzzParseInputs
./workload/wiki FuzzDump
./result FuzzDecode
./result FuzzDecodeHist
./report FuzzReport
TARGETS
fi
