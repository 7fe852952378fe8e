# Sourced by scripts/findmax-confirm.sh and compare-falsealarm.sh (run from
# the repository's root). fb_setup NAME makes a fresh work directory ($work)
# holding the fieldbench binary to run ($fb): FIELDBENCH_BIN when set (a
# build to measure, e.g. of another commit), else one built from this tree.
# Its caller removes $work at exit.
fb_setup() {
  work=$(mktemp -d "/tmp/fieldbench-$1-XXXXXX")
  chmod 755 "$work"
  fb="$work/fieldbench"
  if [[ -n ${FIELDBENCH_BIN:-} ]]; then
    cp "$FIELDBENCH_BIN" "$fb"
  else
    go build -o "$fb" ./cmd/fieldbench
  fi
}
