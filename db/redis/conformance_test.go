package redis

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
)

// TestConformance runs the shared conformance suite against the 3-master
// cluster and the standalone server. A "fresh database" is the shared
// server after FLUSHALL on every master (the suite's checks run one after
// the other, and this package's tests never run in parallel).
func TestConformance(t *testing.T) {
	for _, standalone := range []bool{false, true} {
		t.Run(map[bool]string{false: "cluster", true: "standalone"}[standalone], func(t *testing.T) {
			adaptertest.Run(t, func(t *testing.T) adapter.DB {
				db := open(t, standalone)
				if err := db.forEachMaster(t.Context(), func(ctx context.Context, c *goredis.Client) error {
					return c.FlushAll(ctx).Err()
				}); err != nil {
					t.Fatalf("FLUSHALL: %v", err)
				}
				return db
			})
		})
	}
}
