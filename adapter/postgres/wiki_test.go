package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestWikiLargePopulate crosses the rows-per-transaction limit, so Populate
// commits several transactions.
func TestWikiLargePopulate(t *testing.T) {
	t.Parallel()
	adaptertest.WikiPopulateAcrossTransactions(t, adaptertest.OpenWiki(t, openFresh(t)), populateTxRows)
}

// TestWikiDump loads the hand-made MediaWiki dump, bzip2-compressed,
// including its empty page.
func TestWikiDump(t *testing.T) {
	t.Parallel()
	adaptertest.WikiDump(t, adaptertest.OpenWiki(t, openFresh(t)))
}

// TestWikiPopulateSourceError checks that a failing source rolls the load
// back.
func TestWikiPopulateSourceError(t *testing.T) {
	t.Parallel()
	adaptertest.WikiPopulateSourceError(t, adaptertest.OpenWiki(t, openFresh(t)))
}

// TestWikiLoopReads reads through runner/loop: the connections pgconn set
// up and gave away, with the statement prepared on each.
func TestWikiLoopReads(t *testing.T) {
	t.Parallel()
	adaptertest.WikiLoopReads(t, adaptertest.OpenWiki(t, openFresh(t)))
}

// TestWikiReadPrepared reads through the prepared statement on every
// pooled connection at once, before and after the table is emptied and
// loaded again (TRUNCATE keeps the statement valid), and for a missing id.
func TestWikiReadPrepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := adaptertest.OpenWiki(t, openFresh(t))
	const n = 40
	for round := range 2 {
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Populate(ctx, adaptertest.TinyArticles(n)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for id := int64(1); id <= n; id++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := s.Read(ctx, id)
				if err == nil && a != adaptertest.TinyArticle(id) {
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
