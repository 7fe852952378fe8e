package live

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Serve is --metrics-addr of a measured command: Listen on addr, the
// endpoint named on progress; stop, once the run ended, says where its
// final figures stay served for linger (unless ctx is done: Ctrl-C ends it
// at once), Lingers and closes the endpoint. It moved here from the CLI
// (issue 45: internal/cli is wiring only), which checks --metrics-linger
// and makes Listen's refusals bad input.
func Serve(ctx context.Context, addr string, allowRemote bool, linger time.Duration, progress io.Writer) (srv *Server, stop func(), err error) {
	srv, err = Listen(addr, allowRemote)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(progress, "metrics: http://%s/metrics\n", srv.Addr())
	return srv, func() {
		if linger > 0 && ctx.Err() == nil {
			fmt.Fprintf(progress, "metrics: run ended; serving its final figures on http://%s/metrics for %s (Ctrl-C to stop now)\n", srv.Addr(), linger)
		}
		srv.Linger(ctx, linger)
		_ = srv.Close()
	}, nil
}
