package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// wikiTable holds one article per partition; len is the body's size in
// bytes, kept so that Counts need not read every body.
const wikiTable = "wiki_articles (id bigint PRIMARY KEY, title text, body text, len bigint)"

// wikiInFlight bounds the bytes of article bodies Populate holds in
// requests at once (articles are up to megabytes).
const wikiInFlight = 64 << 20

type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if err := db.createTables(ctx, wikiTable); err != nil {
		return nil, err
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

// wikiChunk is how many articles Populate checks for existence at once.
const wikiChunk = 100

// Populate implements wiki.Store: one INSERT per article (each is its own
// partition, so a batch would only add coordinator work), with up to the
// DSN's concurrency= in flight and at most 64 MiB of bodies in requests.
// Cassandra writes are upserts, so before each chunk of 100 articles one
// IN query checks that none of their ids exists; when one does (or any
// write fails), Populate deletes what it inserted and returns the error,
// so a refused load keeps nothing.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	c, inserted, err := s.load(ctx, src)
	if err == nil {
		return c, nil
	}
	// Undo with a context of its own: ctx may be what failed.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	dq := "DELETE FROM " + s.db.t("wiki_articles") + " WHERE id = ?"
	if uerr := s.db.parallel(uctx, len(inserted), func(ctx context.Context, i int) error {
		return s.db.s.Query(dq, inserted[i]).ExecContext(ctx)
	}); uerr != nil {
		err = errors.Join(err, fmt.Errorf("cassandra wiki: undo the load: %w", uerr))
	}
	return wiki.Counts{}, err
}

// load does Populate's inserts and returns the ids it sent (some may have
// been written even when an error is returned).
func (s *wikiStore) load(ctx context.Context, src wiki.Source) (wiki.Counts, []int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := "INSERT INTO " + s.db.t("wiki_articles") + " (id, title, body, len) VALUES (?, ?, ?, ?)"
	exq := "SELECT id FROM " + s.db.t("wiki_articles") + " WHERE id IN ?"
	var (
		c        wiki.Counts
		sent     []int64
		mu       sync.Mutex
		first    error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, s.db.cfg.Concurrency)
		cond     = sync.NewCond(&mu)
		held     int64
		chunk    []wiki.Article
		finished bool
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		cond.Broadcast()
		mu.Unlock()
	}
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	send := func(a wiki.Article) {
		size := int64(len(a.Body))
		mu.Lock()
		for held > 0 && held+size > wikiInFlight && first == nil {
			cond.Wait()
		}
		held += size
		mu.Unlock()
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.db.s.Query(q, a.ID, a.Title, a.Body, size).ExecContext(ctx)
			<-slots
			mu.Lock()
			held -= size
			cond.Broadcast()
			mu.Unlock()
			if err != nil {
				fail(fmt.Errorf("cassandra wiki: insert article %d: %w", a.ID, err))
			}
		}()
	}
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		ids := make([]int64, len(chunk))
		for i, a := range chunk {
			ids[i] = a.ID
		}
		var dup int64
		it := s.db.s.Query(exq, ids).IterContext(ctx)
		found := it.Scan(&dup)
		if err := it.Close(); err != nil {
			fail(fmt.Errorf("cassandra wiki: check ids: %w", err))
			return
		}
		if found {
			fail(fmt.Errorf("cassandra wiki: populate: article %d already exists", dup))
			return
		}
		for _, a := range chunk {
			if failed() {
				return
			}
			sent = append(sent, a.ID)
			c.Articles++
			c.Bytes += int64(len(a.Body))
			c.MaxID = max(c.MaxID, a.ID)
			send(a)
		}
		chunk = chunk[:0]
	}
	for !finished && !failed() {
		a, err := src.Next()
		switch {
		case errors.Is(err, io.EOF):
			finished = true
		case err != nil:
			fail(fmt.Errorf("cassandra wiki: read source: %w", err))
		default:
			chunk = append(chunk, a)
		}
		if len(chunk) >= wikiChunk || finished {
			flush()
		}
	}
	wg.Wait()
	return c, sent, first
}

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	a := wiki.Article{ID: id}
	err := s.db.s.Query("SELECT title, body FROM "+s.db.t("wiki_articles")+" WHERE id = ?", id).ScanContext(ctx, &a.Title, &a.Body)
	if errors.Is(err, gocql.ErrNotFound) {
		return wiki.Article{}, fmt.Errorf("cassandra wiki: article %d: %w", id, wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("cassandra wiki: read %d: %w", id, err)
	}
	return a, nil
}

// Update implements wiki.Store: a read of the id, then the write. An
// UPDATE alone would create a missing article (Cassandra writes are
// upserts), and UPDATE ... IF EXISTS would be a Paxos round; articles are
// never deleted during a run, so the read-then-write is exact.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	var got int64
	err := s.db.s.Query("SELECT id FROM "+s.db.t("wiki_articles")+" WHERE id = ?", id).ScanContext(ctx, &got)
	if errors.Is(err, gocql.ErrNotFound) {
		return fmt.Errorf("cassandra wiki: article %d: %w", id, wiki.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("cassandra wiki: update %d: %w", id, err)
	}
	if err := s.db.s.Query("UPDATE "+s.db.t("wiki_articles")+" SET body = ?, len = ? WHERE id = ?", body, int64(len(body)), id).ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra wiki: update %d: %w", id, err)
	}
	return nil
}

// Counts implements wiki.Store: a scan of ids and lengths, token range by
// token range.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	var mu sync.Mutex
	err := s.db.scan(ctx, "wiki_articles", "id", "id, len", func(it *gocql.Iter) {
		var local wiki.Counts
		var id int64
		var n *int64
		for it.Scan(&id, &n) {
			local.Articles++
			if n != nil {
				local.Bytes += *n
			}
			local.MaxID = max(local.MaxID, id)
			n = nil
		}
		mu.Lock()
		c.Articles += local.Articles
		c.Bytes += local.Bytes
		c.MaxID = max(c.MaxID, local.MaxID)
		mu.Unlock()
	})
	if err != nil {
		return wiki.Counts{}, fmt.Errorf("cassandra wiki: counts: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store.
func (s *wikiStore) Reset(ctx context.Context) error { return s.db.truncate(ctx, "wiki_articles") }
