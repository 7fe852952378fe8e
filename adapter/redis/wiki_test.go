package redis

import (
	"context"
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

func openWikiStore(t *testing.T) wiki.Store {
	t.Helper()
	s, err := open(t, false).Wiki(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Reset(context.Background()); s.Close() })
	return s
}

// TestWikiStore populates the 3-master cluster with more articles than
// one populate pipeline holds and reads back across the boundary (the
// store's operations proper are checked by adaptertest).
func TestWikiStore(t *testing.T) {
	ctx := t.Context()
	s := openWikiStore(t)
	const n = 1200 // more than one populate pipeline
	g, _ := wiki.NewGenerator(3, n)
	var wantBytes int64
	for id := int64(1); id <= n; id++ {
		wantBytes += int64(g.Size(id))
	}
	want := wiki.Counts{Articles: n, Bytes: wantBytes, MaxID: n}
	if got, err := s.Populate(ctx, g.Source(1, n)); err != nil || got != want {
		t.Fatalf("Populate = %+v, %v; want %+v", got, err, want)
	}
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
	}
	for _, id := range []int64{1, 17, 1000, 1001, n} {
		if a, err := s.Read(ctx, id); err != nil || a != g.Article(id) {
			t.Fatalf("Read(%d): %v", id, err)
		}
	}
}
