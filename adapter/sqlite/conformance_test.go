package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	_ "github.com/fieldbench/fieldbench/adapter/sqlite"
)

// TestConformance runs the shared adapter conformance suite: every family
// SQLite implements, each on a new database file, through the registry as
// the CLI opens it.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB {
		_, db, err := adapter.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "x.db"))
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() {
			if err := db.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return db
	})
}
