package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// WaitSettled polls m until no data moves on c, failing the test after
// limit: a multi-node engine's tests call it after growing or healing a
// cluster, before they check where the data is. (cluster's own tests
// have a copy, waitSettled, for the engines still in package cluster.)
func WaitSettled(t testing.TB, m cluster.Mover, c *cluster.Cluster, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var detail string
	for {
		moving, d, err := m.Moving(ctx, c)
		if err == nil && !moving {
			return
		}
		detail = d
		if err != nil {
			detail = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("data still moving after %v: %s", limit, detail)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
