package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func TestWikiFamilySupported(t *testing.T) {
	t.Parallel()
	found := false
	for _, f := range adapter.FamiliesOf((*DB)(nil)) {
		found = found || f == wiki.Name
	}
	if !found {
		t.Fatalf("FamiliesOf(*DB) = %v lacks wiki", adapter.FamiliesOf((*DB)(nil)))
	}
}

// TestWikiReopen checks that a reopened file keeps the articles and an
// update (the store's operations are checked by adaptertest).
func TestWikiReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "wiki.db")
	db, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 120
	g, _ := wiki.NewGenerator(3, n)
	var wantBytes int64
	for id := int64(1); id <= n; id++ {
		wantBytes += int64(g.Size(id))
	}
	if _, err := s.Populate(ctx, g.Source(1, n)); err != nil {
		t.Fatal(err)
	}
	a := g.Article(17)
	if err := s.Update(ctx, 17, a.Body+"1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db.Close()

	db2, err := Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	s2 := adaptertest.OpenWiki(t, db2)
	if c, err := s2.Counts(ctx); err != nil || c.Articles != n || c.Bytes != wantBytes+1 {
		t.Fatalf("reopened: %+v, %v", c, err)
	}
	if b, err := s2.Read(ctx, 17); err != nil || b.Body != a.Body+"1" || b.Title != a.Title {
		t.Fatalf("reopened: article 17 body of %d bytes, %v; want %d", len(b.Body), err, len(a.Body)+1)
	}
}

// TestWikiLargePopulate crosses the rows-per-transaction limit, so Populate
// commits several transactions.
func TestWikiLargePopulate(t *testing.T) {
	t.Parallel()
	adaptertest.WikiPopulateAcrossTransactions(t, adaptertest.OpenWiki(t, openTemp(t)), populateTxRows)
}

// TestWikiDump loads the hand-made MediaWiki dump, bzip2-compressed,
// including its empty page.
func TestWikiDump(t *testing.T) {
	t.Parallel()
	adaptertest.WikiDump(t, adaptertest.OpenWiki(t, openTemp(t)))
}

// TestWikiPopulateSourceError checks that a failing source rolls the load
// back.
func TestWikiPopulateSourceError(t *testing.T) {
	t.Parallel()
	adaptertest.WikiPopulateSourceError(t, adaptertest.OpenWiki(t, openTemp(t)))
}
