#!/usr/bin/env bash
# Installs the database servers fieldbench starts itself (Debian packages)
# when they are missing. Debian's packages do not start services here:
# fieldbench starts every server on loopback, on ports it checks are free.
set -euo pipefail

packages=(postgresql-15 postgresql-15-postgis-3 mariadb-server galera-4 rsync redis-server redis-tools)
# Cassandra and HBase run from Maven Central jars (fetched and cached by
# fieldbench itself) on Java 17: a JRE and Maven are needed when missing.
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
# jcmd (the JDK's, not the JRE's) asks a node's JVM what it saw of its
# budget (probe.ReadJVM: processors, heap, the control group's limits).
command -v jcmd >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || packages+=(maven)
# pouchdb-server (the couchdb engine) and reqlite (the rethinkdb engine) run
# on Node.js from npm.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
# CouchbaseMock (the couchbase engine) runs in a network namespace: ip.
command -v ip >/dev/null 2>&1 || packages+=(iproute2)
# Network faults on hosts (partition: nft; limit: tc, in iproute2).
command -v nft >/dev/null 2>&1 || packages+=(nftables)
# The container image (scripts/build-image.sh, kubernetes's image test) is
# built and run with podman; runc runs its containers here, where crun
# fails (scripts/containers.conf).
command -v podman >/dev/null 2>&1 || packages+=(podman)
command -v runc >/dev/null 2>&1 || packages+=(runc)
packages+=(containernetworking-plugins) # a Recommends of podman's, skipped by --no-install-recommends
# Budgets on cgroup v2 are tested in a VM (scripts/cgroupv2-vm.sh): qemu,
# then Debian's kernel and busybox, fetched at the end.
command -v qemu-system-x86_64 >/dev/null 2>&1 || packages+=(qemu-system-x86)

# install_npm NAME VERSION ENVVAR puts the npm package NAME@VERSION in
# fieldbench's cache (outside the repository; $ENVVAR overrides the
# directory), where its engine looks, unless a marker says it is complete:
# pouchdb-server 4.2.0 (the couchdb engine) and reqlite 2.3.0 (the
# rethinkdb engine). The engines install them the same way on first use
# when this step was skipped.
install_npm() {
  local name=$1 version=$2 envvar=$3
  local dir="${!envvar:-${XDG_CACHE_HOME:-$HOME/.cache}/fieldbench/$name-$version}"
  [[ -e "$dir/.complete" ]] && { echo "install-servers: $name present ($dir)"; return; }
  mkdir -p "$(dirname "$dir")"
  local work
  work=$(mktemp -d "$(dirname "$dir")/$name.tmp-XXXXXX")
  npm install --no-audit --no-fund --loglevel=error --prefix "$work" "$name@$version"
  echo "$name@$version" > "$work/.complete"
  rm -rf "$dir" && mv "$work" "$dir"
  echo "install-servers: $name installed in $dir"
}
install_pouchdb() { install_npm pouchdb-server 4.2.0 FIELDBENCH_POUCHDB; }
install_reqlite() { install_npm reqlite 2.3.0 FIELDBENCH_REQLITE; }

# fetch_couchbasemock puts the CouchbaseMock 1.5.27 jar (the couchbase
# engine's stand-in for Couchbase Server; one jar, no dependencies) in the
# jar cache the Cassandra and HBase jars use (FIELDBENCH_JARS overrides),
# as the engine does itself on first use when this step was skipped.
fetch_couchbasemock() {
  local gav=com.couchbase.mock:CouchbaseMock:1.5.27
  local dir="${FIELDBENCH_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/fieldbench/jars}/couchbasemock-1.5.27"
  [[ -e "$dir/.complete" ]] && { echo "install-servers: CouchbaseMock present ($dir)"; return; }
  mkdir -p "$(dirname "$dir")"
  local work
  work=$(mktemp -d "$(dirname "$dir")/couchbasemock-1.5.27.tmp-XXXXXX")
  cat > "$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fieldbench</groupId><artifactId>jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>com.couchbase.mock</groupId><artifactId>CouchbaseMock</artifactId><version>1.5.27</version></dependency>
  </dependencies>
</project>
POM
  mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$work/lib"
  echo "$gav" > "$work/lib/.complete"
  rm -rf "$dir" && mv "$work/lib" "$dir" && rm -rf "$work"
  echo "install-servers: CouchbaseMock installed in $dir"
}

# FerretDB (the MongoDB wire-protocol server that `cluster up mongodb`
# starts) is built once from its Go module through the Go toolchain into
# ~/.cache/fieldbench/ferretdb (FIELDBENCH_FERRETDB overrides); its code never
# enters this repository. The engine builds it itself when missing; this
# only does it ahead of the first cluster.
build_ferretdb() {
  if command -v go >/dev/null 2>&1; then
    echo "install-servers: FerretDB: $(cd "$(dirname "$0")/.." && go run ./scripts/buildferretdb)"
  else
    echo "install-servers: go not found: FerretDB (cluster up mongodb) not built" >&2
  fi
}

# Iridium SQL 0.1.13 (the SQL Server stand-in that `cluster up sqlserver`
# starts) is built once from crates.io with cargo into
# ~/.cache/fieldbench/iridium-0.1.13 (FIELDBENCH_IRIDIUM overrides); its
# code never enters this repository. The build took 10 minutes on the
# shared 2-core machine (docs/sqlserver.md); the engine does not start it
# itself.
build_iridium() {
  local root="${FIELDBENCH_IRIDIUM:-${XDG_CACHE_HOME:-$HOME/.cache}/fieldbench/iridium-0.1.13}"
  [[ -x "$root/bin/iridium-server" ]] && { echo "install-servers: Iridium SQL present ($root)"; return; }
  if ! command -v cargo >/dev/null 2>&1; then
    echo "install-servers: cargo not found: Iridium SQL (cluster up sqlserver) not built" >&2
    return
  fi
  echo "install-servers: building Iridium SQL 0.1.13 with cargo (about 10 minutes on 2 cores)"
  cargo install --locked --quiet iridium_server@0.1.13 --root "$root"
  echo "install-servers: Iridium SQL built in $root"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The Iridium build (CPU, minutes) runs beside the package, npm and Maven
# downloads (network) and the FerretDB build rather than after them; its
# output goes to a log, shown when it ends.
iridium_log=$(mktemp)
build_iridium > "$iridium_log" 2>&1 &
iridium_pid=$!
# cleanup ends the build when this script stops before waiting for it,
# and removes the policy-rc.d this script put in place.
policy_rc=""
cleanup() {
  [[ -n "$iridium_pid" ]] && kill "$iridium_pid" 2>/dev/null
  [[ -n "$policy_rc" ]] && $SUDO rm -f "$policy_rc"
  rm -f "$iridium_log"
  return 0
}
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
trap cleanup EXIT

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-servers: all present (${packages[*]})"
else
  echo "install-servers: installing ${missing[*]}"
  # policy-rc.d keeps Debian's maintainer scripts from starting the services.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    policy_rc=/usr/sbin/policy-rc.d
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
mkdir -p "${XDG_CACHE_HOME:-$HOME/.cache}/fieldbench"
install_pouchdb
install_reqlite
fetch_couchbasemock
build_ferretdb
bash "$(dirname "$0")/cgroupv2-vm.sh" --fetch
iridium_ok=1
wait "$iridium_pid" || iridium_ok=0
iridium_pid=""
if [[ $iridium_ok -eq 0 ]]; then
  cat "$iridium_log" >&2
  echo "install-servers: building Iridium SQL failed" >&2
  exit 1
fi
cat "$iridium_log"
echo "install-servers: done"
