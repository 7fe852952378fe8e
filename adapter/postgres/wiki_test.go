package postgres

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

func openWiki(t *testing.T, db *DB) wiki.Store {
	t.Helper()
	s, err := db.Wiki(t.Context())
	if err != nil {
		t.Fatalf("Wiki: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close wiki store: %v", err)
		}
	})
	return s
}

type tinySource struct{ next, n int64 }

func (s *tinySource) Next() (wiki.Article, error) {
	if s.next >= s.n {
		return wiki.Article{}, io.EOF
	}
	s.next++
	return wiki.Article{ID: s.next, Title: "t", Body: strconv.FormatInt(s.next, 10)}, nil
}

// TestWikiLargePopulate crosses the rows-per-transaction limit, so Populate
// commits several transactions.
func TestWikiLargePopulate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	n := int64(populateTxRows + 10)
	c, err := s.Populate(ctx, &tinySource{n: n})
	if err != nil || c.Articles != n || c.MaxID != n {
		t.Fatalf("Populate: %+v, %v", c, err)
	}
	for _, id := range []int64{1, populateTxRows, populateTxRows + 1, n} {
		if a, err := s.Read(ctx, id); err != nil || a.Body != strconv.FormatInt(id, 10) {
			t.Fatalf("article %d: %+v, %v", id, a, err)
		}
	}
}

// TestWikiDump loads the hand-made MediaWiki dump, bzip2-compressed,
// including its empty page.
func TestWikiDump(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	d, err := wiki.OpenDump("../../workload/wiki/testdata/sample-pages-articles.xml.bz2", wiki.DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := s.Populate(ctx, d)
	if err != nil || c.Articles != 5 || c.MaxID != 5 {
		t.Fatalf("Populate from dump: %+v, %v", c, err)
	}
	for id, title := range map[int64]string{1: "Albert Einstein", 3: "Zürich", 5: "Empty page"} {
		a, err := s.Read(ctx, id)
		if err != nil || a.Title != title {
			t.Errorf("article %d: %q, %v; want %q", id, a.Title, err, title)
		}
	}
	if a, _ := s.Read(ctx, 3); len(a.Body) != 137 { // bytes of UTF-8, not characters
		t.Errorf("Zürich: body of %d bytes, want 137", len(a.Body))
	}
	if a, _ := s.Read(ctx, 5); a.Body != "" {
		t.Errorf("empty page has body %q", a.Body)
	}
}

// failingSource yields n articles, then an error.
type failingSource struct {
	src wiki.Source
	n   int
}

func (f *failingSource) Next() (wiki.Article, error) {
	if f.n == 0 {
		return wiki.Article{}, errors.New("disk on fire")
	}
	f.n--
	return f.src.Next()
}

func TestWikiPopulateSourceError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	g, _ := wiki.NewGenerator(1, 100)
	_, err := s.Populate(ctx, &failingSource{src: g.Source(1, 100), n: 30})
	if err == nil || err.Error() != "disk on fire" {
		t.Fatalf("Populate: %v, want the source's error", err)
	}
	if c, _ := s.Counts(ctx); c.Articles != 0 {
		t.Fatalf("the failed transaction left %d articles", c.Articles)
	}
}

// TestWikiReadPrepared reads through the prepared statement on every
// pooled connection at once, before and after the table is emptied and
// loaded again (TRUNCATE keeps the statement valid), and for a missing id.
func TestWikiReadPrepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	const n = 40
	for round := range 2 {
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Populate(ctx, &tinySource{n: n}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for id := int64(1); id <= n; id++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := s.Read(ctx, id)
				if err == nil && (a.ID != id || a.Title != "t" || a.Body != strconv.FormatInt(id, 10)) {
					err = fmt.Errorf("got %+v", a)
				}
				if err != nil {
					errs <- fmt.Errorf("round %d, article %d: %w", round, id, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if _, err := s.Read(ctx, n+1); !errors.Is(err, wiki.ErrNotFound) {
			t.Fatalf("Read(%d) = %v, want ErrNotFound", n+1, err)
		}
	}
}
