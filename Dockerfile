# The fieldbench image, for shards on Kubernetes ('fieldbench kube job') or
# any container engine: the static binary (every driver, SQLite included, is
# pure Go), the CA bundle for TLS to a database, and a non-root user, on an
# empty base. Nothing is pulled, so it builds where no registry is
# reachable (this project's machines, an air-gapped cluster). Build it with
#   scripts/build-image.sh [TAG]
# which compiles the binary (CGO_ENABLED=0) and gathers the context this
# file copies from, then runs podman or docker, whichever is there. The
# scenarios are built into the binary (package scenarios): 'study NAME' and
# 'experiment scenarios/...' run in the image without a copy of them.
FROM scratch
COPY passwd /etc/passwd
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY fieldbench /fieldbench
USER 65532:65532
WORKDIR /results
ENTRYPOINT ["/fieldbench"]
