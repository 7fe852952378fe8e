package adaptertest

import (
	"context"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
)

// Open opens dsn with an adapter's own open function and closes the DB when
// the test ends. It is generic so that the adapter's tests get its concrete
// type back (they reach into pools and files), and it reports a failed
// Close, which would otherwise hide a leaked connection or file lock.
func Open[D adapter.DB](t testing.TB, open func(context.Context, string) (D, error), dsn string) D {
	t.Helper()
	db, err := open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", redact.DSN(dsn), err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close %s: %v", redact.DSN(dsn), err)
		}
	})
	return db
}
