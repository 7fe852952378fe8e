package mariadb

import (
	"errors"
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestWikiStore covers Populate (several statements and transactions),
// Read against the generator, Update (also to the same body), missing ids,
// a failed populate leaving nothing, Counts and Reset.
func TestWikiStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openFresh(t)
	s, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("new database: counts %+v, %v; want empty", c, err)
	}
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
	for _, op := range []struct {
		name string
		err  error
	}{
		{"read", func() error { _, err := s.Read(ctx, n+1); return err }()},
		{"update", s.Update(ctx, n+1, "x")},
		{"read 0", func() error { _, err := s.Read(ctx, 0); return err }()},
	} {
		if !errors.Is(op.err, wiki.ErrNotFound) {
			t.Errorf("%s of a missing article: %v, want ErrNotFound", op.name, op.err)
		}
	}
	if _, err := s.Populate(ctx, g.Source(n-1, n+5)); err == nil {
		t.Fatal("populating existing ids must fail")
	}
	if c, _ := s.Counts(ctx); c.Articles != n {
		t.Fatalf("failed populate left %d articles, want %d", c.Articles, n)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("after Reset: %+v, %v", c, err)
	}
	if c, err := s.Populate(ctx, g.Source(1, 10)); err != nil || c.Articles != 10 {
		t.Fatalf("populate after Reset: %+v, %v", c, err)
	}
}
