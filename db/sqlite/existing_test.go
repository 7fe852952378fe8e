package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
)

// Finding 10 of issue 13: `op` on a missing SQLite file created an empty
// file. adapter.OpenExisting refuses it and creates nothing; an existing
// file opens.
func TestOpenExistingRefusesMissingFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "missing.db")
	_, _, err := adapter.OpenExisting(ctx, "sqlite://"+path)
	if !errors.Is(err, adapter.ErrNoDatabase) {
		t.Fatalf("OpenExisting on a missing file: %v, want ErrNoDatabase", err)
	}
	if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("OpenExisting created %s (stat: %v)", path, serr)
	}
	db, err := Open(ctx, "sqlite://"+path) // a load creates it
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, db2, err := adapter.OpenExisting(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatalf("OpenExisting on an existing file: %v", err)
	}
	if err := db2.Close(); err != nil {
		t.Fatal(err)
	}
}
