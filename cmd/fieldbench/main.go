// Command fieldbench evaluates databases with realistic workloads on real
// servers. All behaviour lives in internal/cli; main only wires the process.
package main

import (
	"os"

	"github.com/fieldbench/fieldbench/internal/cli"

	_ "github.com/fieldbench/fieldbench/db/all"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
