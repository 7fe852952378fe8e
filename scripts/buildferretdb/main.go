// Command buildferretdb builds (once) and caches the FerretDB binary that
// `fieldbench cluster up mongodb` starts, through mongodb.FerretDBBinary,
// and prints its path. scripts/install-servers.sh runs it so that the first
// cluster does not wait minutes for the build.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/fieldbench/fieldbench/db/mongodb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bin, err := mongodb.FerretDBBinary(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildferretdb:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
