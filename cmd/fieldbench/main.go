// Command fieldbench evaluates databases with realistic workloads on real
// servers. All behaviour lives in internal/cli; main only wires the process.
package main

import (
	"os"
	"runtime/debug"

	"github.com/fieldbench/fieldbench/internal/cli"

	_ "github.com/fieldbench/fieldbench/adapter/all"
)

// gcPercent is the garbage collector's setting unless GOGC says otherwise.
// A load generator allocates fast and keeps little: every read returns a
// fresh article (5 KB on average) that is garbage at once, while the live
// heap stays 2-3 MB. With Go's default of 100, PostgreSQL point reads
// (4 clients) collected about 40 times a second, 2 % of the client's CPU by
// Go's own count (GODEBUG=gctrace=1), CPU the server on the same cores did
// not get; at 400, about 7 times a second (docs/postgres.md, "Client
// efficiency"). The heap may then grow to five times what is live before a
// collection, still small for this process.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
