package adaptertest

import (
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The checks below cover how an adapter loads wiki articles in batches and
// transactions, which its own tests drive with the adapter's batch sizes;
// the suite's checkWiki covers the store's operations.

// WikiSampleDump is the hand-made MediaWiki dump (bzip2-compressed, five
// pages, one of them empty), relative to an adapter package's directory,
// where go test runs its tests.
const WikiSampleDump = "../../workload/wiki/testdata/sample-pages-articles.xml.bz2"

// OpenWiki returns b's wiki store, closed when the test ends.
func OpenWiki(t testing.TB, b wiki.Backend) wiki.Store {
	t.Helper()
	s, err := b.Wiki(t.Context())
	if err != nil {
		t.Fatalf("Wiki: %v", err)
	}
	closeOnCleanup(t, "wiki", s)
	return s
}

// TinyArticle is article id of TinyArticles: tiny, so that a test can load
// many, and known from its id alone, so that any one can be checked.
func TinyArticle(id int64) wiki.Article {
	return wiki.Article{ID: id, Title: "t", Body: strconv.FormatInt(id, 10)}
}

// TinyArticles yields TinyArticle 1 to n.
func TinyArticles(n int64) wiki.Source { return &tinyArticles{n: n} }

type tinyArticles struct{ next, n int64 }

func (s *tinyArticles) Next() (wiki.Article, error) {
	if s.next >= s.n {
		return wiki.Article{}, io.EOF
	}
	s.next++
	return TinyArticle(s.next), nil
}

// WikiPopulateAcrossTransactions loads txRows+10 articles into s, an empty
// store whose Populate commits every txRows rows, so the load spans several
// transactions; the articles on either side of the first commit must be
// there.
func WikiPopulateAcrossTransactions(t testing.TB, s wiki.Store, txRows int) {
	t.Helper()
	ctx := t.Context()
	n := int64(txRows + 10)
	c, err := s.Populate(ctx, TinyArticles(n))
	if err != nil || c.Articles != n || c.MaxID != n {
		t.Fatalf("Populate: %+v, %v; want %d articles", c, err, n)
	}
	for _, id := range []int64{1, int64(txRows), int64(txRows) + 1, n} {
		if a, err := s.Read(ctx, id); err != nil || a.Body != TinyArticle(id).Body {
			t.Fatalf("article %d: %+v, %v", id, a, err)
		}
	}
}

// WikiDump loads WikiSampleDump into s, an empty store: titles with
// non-ASCII letters, a body's size in bytes of UTF-8 (not characters) and
// the empty page must come through unchanged.
func WikiDump(t testing.TB, s wiki.Store) {
	t.Helper()
	ctx := t.Context()
	d, err := wiki.OpenDump(WikiSampleDump, wiki.DumpOptions{})
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

// errSourceFailed is what failingSource returns after its articles.
var errSourceFailed = errors.New("disk on fire")

// failingSource yields n articles, then an error.
type failingSource struct {
	src wiki.Source
	n   int
}

func (f *failingSource) Next() (wiki.Article, error) {
	if f.n == 0 {
		return wiki.Article{}, errSourceFailed
	}
	f.n--
	return f.src.Next()
}

// WikiPopulateSourceError loads into s, an empty store, from a source that
// fails after 30 articles: Populate must return the source's error and keep
// none of the articles, so a broken dump cannot leave a half-loaded store.
func WikiPopulateSourceError(t testing.TB, s wiki.Store) {
	t.Helper()
	ctx := t.Context()
	g, err := wiki.NewGenerator(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Populate(ctx, &failingSource{src: g.Source(1, 100), n: 30})
	if err == nil || err.Error() != errSourceFailed.Error() {
		t.Fatalf("Populate: %v, want the source's error", err)
	}
	if c, _ := s.Counts(ctx); c.Articles != 0 {
		t.Fatalf("the failed transaction left %d articles", c.Articles)
	}
}
