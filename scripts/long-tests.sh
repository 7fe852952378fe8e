#!/usr/bin/env bash
# Runs every test gated behind FIELDBENCH_LONG_TESTS — the tests too long
# for CI's budget, each of which says in its skip message how long it takes
# and why — one at a time, and prints a table: test, package, result, time.
#
#   scripts/long-tests.sh            # every gated test
#   scripts/long-tests.sh -n         # list them only
#
# The gated tests are found in the code (a test function that calls
# adaptertest.OnlyLong, internal/cli's onlyLong, or reads
# FIELDBENCH_LONG_TESTS itself), so a new one is run without being listed
# here. Their servers come from scripts/install-servers.sh, as CI's do;
# docs/testing.md records the last run. Exit status 1 when any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

list_only=0
[[ "${1:-}" == "-n" ]] && list_only=1

# gated prints "PACKAGE TEST" for every test function whose body holds a
# gate: the last `func TestX(` before the line that gates.
gated() {
  grep -rlE 'OnlyLong\(t|onlyLong\(t|Getenv\("FIELDBENCH_LONG_TESTS"\)' --include='*_test.go' . |
    grep -v '^./adapter/adaptertest/long.go$' | sort | while read -r file; do
    awk -v dir="$(dirname "$file")" '
      /^func Test[A-Za-z0-9_]*\(/ { match($0, /Test[A-Za-z0-9_]*/); name = substr($0, RSTART, RLENGTH) }
      /^func / && !/^func Test/ { name = "" }
      /OnlyLong\(t|onlyLong\(t|Getenv\("FIELDBENCH_LONG_TESTS"\)/ && !/^func / && name != "" { print dir, name; name = "" }
    ' "$file"
  done
}

tests=$(gated)
if [[ $list_only -eq 1 ]]; then
  echo "$tests"
  exit 0
fi
bash scripts/install-servers.sh >/dev/null
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--trimpath}" FIELDBENCH_LONG_TESTS=1

logs=$(mktemp -d "${TMPDIR:-/tmp}/fieldbench-long-XXXXXX")
# Each test is built from the working tree when it starts: a change
# made there during the run is named in the table's heading.
dirty=""
[[ -z "$(git status --porcelain --untracked-files=no)" ]] || dirty=" with uncommitted changes"
rows=() failed=0 begin=$(date +%s)
while read -r pkg name; do
  [[ -n "$pkg" ]] || continue
  echo "long-tests: $name ($pkg)" >&2
  t0=$(date +%s)
  if go test -count=1 -timeout 60m -run "^${name}\$" -v "$pkg" > "$logs/$name.log" 2>&1; then
    result=pass
    grep -q -- "--- SKIP: ${name} " "$logs/$name.log" && result=skip
  else
    result=FAIL failed=1
  fi
  rows+=("| \`$name\` | \`${pkg#./}\` | $result | $(( $(date +%s) - t0 )) |")
done <<< "$tests"

echo
[[ -z "$(git status --porcelain --untracked-files=no)" ]] || dirty=" with uncommitted changes"
echo "Long tests, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)$dirty, $(( $(date +%s) - begin )) s in all (logs: $logs):"
echo
echo "| test | package | result | s |"
echo "|---|---|---|---:|"
printf '%s\n' "${rows[@]}"
exit $failed
