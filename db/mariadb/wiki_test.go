package mariadb

import (
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestWikiStore covers what is MariaDB's own: Populate over several
// multi-row statements and transactions, read back against the generator,
// and an Update to an unchanged body (which affects no row). The store's
// operations proper are checked by adaptertest.
func TestWikiStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openFresh(t)
	s, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1200 // > wikiStmtRows: several multi-row INSERTs
	g, err := wiki.NewGenerator(3, n)
	if err != nil {
		t.Fatal(err)
	}
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
	for id := int64(1); id <= n; id += 7 {
		a, err := s.Read(ctx, id)
		if err != nil || a != g.Article(id) {
			t.Fatalf("Read(%d): %v; article differs from the generator's (%d bytes, want %d)", id, err, len(a.Body), g.Size(id))
		}
	}
	a := g.Article(17)
	for _, body := range []string{a.Body + "1", a.Body + "1"} { // the second writes an unchanged body
		if err := s.Update(ctx, 17, body); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	if b, err := s.Read(ctx, 17); err != nil || b.Body != a.Body+"1" || b.Title != a.Title {
		t.Fatalf("after Update: %v", err)
	}
}
