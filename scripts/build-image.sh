#!/usr/bin/env bash
# Builds fieldbench's container image from the Dockerfile, pulling nothing:
#   scripts/build-image.sh [TAG]          (default fieldbench:dev)
#   scripts/build-image.sh --context DIR  (only gather the build context in DIR)
# The context is the static binary (CGO_ENABLED=0, as the Dockerfile's
# base has no C library), the machine's CA bundle and a passwd naming the
# non-root user 65532. podman is used when present (with
# scripts/containers.conf unless CONTAINERS_CONF is set), else docker.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

context="" tag="fieldbench:dev"
if [[ "${1:-}" == "--context" ]]; then
  context="${2:?--context needs a directory}"
else
  tag="${1:-$tag}"
fi
keep="$context"
[[ -n "$context" ]] || context="$(mktemp -d)"
[[ -n "$keep" ]] || trap 'rm -rf "$context"' EXIT
mkdir -p "$context"

ca=/etc/ssl/certs/ca-certificates.crt
[[ -r "$ca" ]] || { echo "build-image: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }
(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$context/fieldbench" ./cmd/fieldbench)
cp "$ca" "$context/ca-certificates.crt"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/results:/sbin/nologin\n' > "$context/passwd"
cp "$repo/Dockerfile" "$context/Dockerfile"
[[ -n "$keep" ]] && { echo "build-image: context in $context"; exit 0; }

if command -v podman >/dev/null 2>&1; then
  export CONTAINERS_CONF="${CONTAINERS_CONF:-$repo/scripts/containers.conf}"
  podman build --network=none -q -t "$tag" "$context"
elif command -v docker >/dev/null 2>&1; then
  docker build -q -t "$tag" "$context"
else
  echo "build-image: neither podman nor docker is installed (Debian: apt-get install podman runc)" >&2
  exit 1
fi
echo "build-image: built $tag"
