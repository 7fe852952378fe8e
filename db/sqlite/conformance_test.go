package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
)

// TestConformance runs the shared adapter conformance suite: every family
// SQLite implements, each on a new database file, through the registry as
// the CLI opens it.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB {
		return adaptertest.Open(t, openRegistered, "sqlite://"+filepath.Join(t.TempDir(), "x.db"))
	})
}

// openRegistered opens dsn through the adapter registry, as the CLI does.
func openRegistered(ctx context.Context, dsn string) (adapter.DB, error) {
	_, db, err := adapter.Open(ctx, dsn)
	return db, err
}
