# The fieldbench image for running shards on Kubernetes ('fieldbench kube
# job'): a static binary (every driver, SQLite included, is pure Go) on a
# distroless base, running as a non-root user. Not built on the project's
# own machines, which have no container engine: see docs/shards.md.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /fieldbench ./cmd/fieldbench

FROM gcr.io/distroless/static-debian12
COPY --from=build /fieldbench /fieldbench
USER 65532:65532
WORKDIR /results
ENTRYPOINT ["/fieldbench"]
