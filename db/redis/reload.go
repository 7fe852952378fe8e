package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	goredis "github.com/redis/go-redis/v9"
)

// reloadOnNetError asks the cluster client to read the slot map again
// whenever an operation fails for the network: a connection refused, reset
// or timed out. Why: go-redis (v9.23) reloads its slot map on a MOVED
// reply and otherwise only once a minute (ClusterStateReloadInterval), so
// after a master died its writes kept going to the dead address until the
// master came back: a kill of master redis2 on hosts (kill-redis.yaml,
// 2026-11-29) failed 1,412 operations over 25 s although its replica had
// won the election 4.7 s after the kill. Redis's cluster specification
// leaves the refresh to the client; Lettuce's adaptive refresh does the
// same on reconnection attempts. The reload is go-redis's own LazyReload:
// one at a time, in the background, at most every 200 ms.
type reloadOnNetError struct{ cc *goredis.ClusterClient }

var _ goredis.Hook = reloadOnNetError{}

func (reloadOnNetError) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h reloadOnNetError) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnNetError) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		h.after(ctx, err)
		return err
	}
}

func (h reloadOnNetError) after(ctx context.Context, err error) {
	if isNetError(err) {
		h.cc.ReloadState(ctx)
	}
}

// isNetError: the error came from the connection, not from Redis (a
// reply such as MOVED or a WRONGTYPE is not one).
func isNetError(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
