package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// TestWikiLoop reads and updates through runner/loop: the connections
// pgconn set up and gave away, with the statements prepared on each.
func TestWikiLoop(t *testing.T) {
	t.Parallel()
	adaptertest.WikiLoop(t, adaptertest.OpenWiki(t, openFresh(t)))
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

// TestWikiReadDirectFailures covers what the direct read (wikiread.go)
// does when a read does not simply succeed, on a pool of one connection so
// that every read after a failure uses what the failure left: a server
// error (a lock not granted within lock_timeout) leaves the connection in
// step, and the next read on it succeeds; a read cancelled by its context
// while the server holds it returns the context's error, and the pool
// replaces the connection; and the pgconn path the direct read falls back
// to returns the same article.
func TestWikiReadDirectFailures(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := freshDSN(t)
	db := adaptertest.Open(t, Open, dsn+"&pool_max_conns=1&lock_timeout=300")
	s := adaptertest.OpenWiki(t, db)
	if _, err := s.Populate(ctx, adaptertest.TinyArticles(3)); err != nil {
		t.Fatal(err)
	}
	readOK := func(when string) {
		t.Helper()
		if a, err := s.Read(ctx, 2); err != nil || a != adaptertest.TinyArticle(2) {
			t.Fatalf("Read(2) %s = %+v, %v", when, a, err)
		}
	}
	readOK("before")

	// Another session holds the table.
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "lock table articles in access exclusive mode"); err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if _, err := s.Read(ctx, 2); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("Read(2) under a lock with lock_timeout = %v; want the server's lock_not_available (55P03)", err)
	}
	pid := db.w.Stat().TotalConns()
	shortCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = s.Read(shortCtx, 2)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read(2) cancelled while waiting = %v; want context.DeadlineExceeded", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	readOK("after the lock")
	if pid != 1 {
		t.Fatalf("pool of %d connections; want 1", pid)
	}

	// The fallback path reads the same article.
	c, err := db.reader().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	sd, err := c.Conn().Prepare(ctx, wikiReadStmt, wikiReadSQL)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := readPgconn(ctx, c, sd.Name, 3); err != nil || a != adaptertest.TinyArticle(3) {
		t.Fatalf("readPgconn(3) = %+v, %v", a, err)
	}
	if _, err := readPgconn(ctx, c, sd.Name, 4); !errors.Is(err, wiki.ErrNotFound) {
		t.Fatalf("readPgconn(4) = %v; want ErrNotFound", err)
	}
}

// TestWikiHeldConns checks the connections the wiki read keeps between
// reads (held.go): whatever the pool's size, updates and counts still get
// a connection while reads hold theirs; Close does not wait for them; and
// a held connection the server ended is given back to the pool once it
// has been idle for heldIdle, so the read after it gets a live one.
func TestWikiHeldConns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		poolMax int
		held    int // held after 4 concurrent reads
	}{
		{1, 0},
		{2, 1},
		{8, 4},
	} {
		t.Run(fmt.Sprintf("pool of %d", tc.poolMax), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := freshDSN(t)
			db, err := Open(ctx, dsn+fmt.Sprintf("&pool_max_conns=%d", tc.poolMax))
			if err != nil {
				t.Fatal(err)
			}
			s, err := db.Wiki(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Populate(ctx, adaptertest.TinyArticles(4)); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for id := int64(1); id <= 4; id++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Read(ctx, id); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			n := db.held.conns.Len()
			if n > tc.held {
				t.Fatalf("%d connections held after 4 concurrent reads; want at most %d", n, tc.held)
			}
			if err := s.Update(ctx, 2, "new body"); err != nil {
				t.Fatalf("Update while reads hold connections: %v", err)
			}
			if c, err := s.Counts(ctx); err != nil || c.Articles != 4 {
				t.Fatalf("Counts while reads hold connections = %+v, %v", c, err)
			}

			// The server ends every other session; a read after heldIdle
			// gets a live connection.
			if _, err := s.Read(ctx, 1); err != nil {
				t.Fatal(err)
			}
			admin, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			if _, err := admin.Exec(ctx, "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(heldIdle + 100*time.Millisecond)
			if a, err := s.Read(ctx, 2); err != nil || a.Body != "new body" {
				t.Fatalf("Read after the server ended the held connections = %+v, %v", a, err)
			}

			done := make(chan struct{})
			go func() { s.Close(); db.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Close still waiting after 30 s")
			}
		})
	}
}
