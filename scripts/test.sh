#!/usr/bin/env bash
# The whole test suite, as the README's quick start and CI run it: install
# the database servers the adapter tests start (Debian packages, once), then
# run every Go test. Adapter tests start and stop their servers themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-servers.sh
go test ./... "$@"
