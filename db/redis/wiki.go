package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Wiki keys: an article is two strings sharing the hash tag of its id, so
// a read is one MGET and the pair is created atomically by one MSETNX even
// in a cluster:
//
//	wiki:{ID}:t  title
//	wiki:{ID}:b  body
//
// Update is SET wiki:{ID}:b body XX: one command, refused (ErrNotFound)
// when the article does not exist. APPEND would be Redis's native way to
// add "1", but the workload's request is read-modify-write (it writes back
// the body it read, losing concurrent appends as the study's databases
// did), so the adapter keeps those semantics.
func wikiTitle(id int64) string { return "wiki:{" + strconv.FormatInt(id, 10) + "}:t" }
func wikiBody(id int64) string  { return "wiki:{" + strconv.FormatInt(id, 10) + "}:b" }

// Populate sends a pipeline every wikiBatchRows articles or wikiBatchBytes
// of bodies.
const (
	wikiBatchRows  = 1000
	wikiBatchBytes = 16 << 20
)

type wikiStore struct {
	db *DB
	rd *wikiReader // the reads' own connections (wikiread.go)
}

var (
	_ wiki.Store      = (*wikiStore)(nil)
	_ wiki.ReaderInto = (*wikiStore)(nil)
)

// Wiki implements wiki.Backend (nothing to create).
func (db *DB) Wiki(context.Context) (wiki.Store, error) {
	return &wikiStore{db: db, rd: newWikiReader(db)}, nil
}

// Close implements wiki.Store: closes the reads' connections.
func (s *wikiStore) Close() error {
	s.rd.close()
	return nil
}

// Read implements wiki.Store: one MGET of title and body, sent by
// wikiReader (go-redis when a read is redirected or a connection fails).
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	return s.read(ctx, id, nil)
}

// ReadInto implements wiki.ReaderInto: Read, the values read into *buf
// (strings of their own when go-redis does the read).
func (s *wikiStore) ReadInto(ctx context.Context, id int64, buf *[]byte) (wiki.Article, error) {
	return s.read(ctx, id, buf)
}

func (s *wikiStore) read(ctx context.Context, id int64, buf *[]byte) (wiki.Article, error) {
	title, body, ok, err := s.rd.read(ctx, id, buf)
	if err != nil {
		return wiki.Article{}, fmt.Errorf("redis: read article: %w", err)
	}
	if !ok {
		return wiki.Article{}, fmt.Errorf("redis: read: %w", wiki.ErrNotFound)
	}
	return wiki.Article{ID: id, Title: title, Body: body}, nil
}

// mgetArticle is the read through go-redis: MGET of title and body, with
// its redirections and retries.
func (db *DB) mgetArticle(ctx context.Context, id int64) (title, body string, ok bool, err error) {
	v, err := db.rdb.MGet(ctx, wikiTitle(id), wikiBody(id)).Result()
	if err != nil {
		return "", "", false, err
	}
	title, ok1 := v[0].(string)
	body, ok2 := v[1].(string)
	return title, body, ok1 && ok2, nil
}

// Update implements wiki.Store: SET ... XX.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	ok, err := s.db.rdb.SetXX(ctx, wikiBody(id), body, 0).Result()
	if err != nil {
		return fmt.Errorf("redis: update article: %w", err)
	}
	if !ok {
		return fmt.Errorf("redis: update: %w", wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store by scanning the body keys of every master
// and pipelining STRLEN: exact, and O(articles) — a run calls it before
// and after, never per request.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var mu sync.Mutex
	var c wiki.Counts
	err := s.db.forEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		return scanKeys(ctx, n, "wiki:{*}:b", func(keys []string) error {
			p := n.Pipeline()
			lens := make([]*goredis.IntCmd, len(keys))
			for i, k := range keys {
				lens[i] = p.StrLen(ctx, k)
			}
			if _, err := p.Exec(ctx); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for i, k := range keys {
				id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(k, "wiki:{"), "}:b"), 10, 64)
				if err != nil {
					continue
				}
				c.Articles++
				c.Bytes += lens[i].Val()
				c.MaxID = max(c.MaxID, id)
			}
			return nil
		})
	})
	if err != nil {
		return wiki.Counts{}, fmt.Errorf("redis: count articles: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store: UNLINK every wiki key on every master.
func (s *wikiStore) Reset(ctx context.Context) error {
	if err := s.db.scanDelete(ctx, "wiki:*"); err != nil {
		return fmt.Errorf("redis: reset articles: %w", err)
	}
	return nil
}

// Populate implements wiki.Store: pipelines of MSETNX (title, body) per
// article. An id that exists fails the load; the articles of the failing
// pipeline that were created are removed again, so a failed batch leaves
// nothing (earlier batches stay, as committed transactions would).
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	return wiki.PopulateBatches(src, wikiBatchRows, wikiBatchBytes, func(batch []wiki.Article) error {
		return s.insert(ctx, batch)
	})
}

func (s *wikiStore) insert(ctx context.Context, batch []wiki.Article) error {
	p := s.db.rdb.Pipeline()
	cmds := make([]*goredis.BoolCmd, len(batch))
	for i, a := range batch {
		cmds[i] = p.MSetNX(ctx, wikiTitle(a.ID), a.Title, wikiBody(a.ID), a.Body)
	}
	_, execErr := p.Exec(ctx)
	var dup int64 = -1
	var undo []string
	for i, c := range cmds {
		ok, err := c.Result()
		switch {
		case err == nil && ok:
			undo = append(undo, wikiTitle(batch[i].ID), wikiBody(batch[i].ID))
		case err == nil && !ok && dup < 0:
			dup = batch[i].ID
		}
	}
	if execErr == nil && dup < 0 {
		return nil
	}
	up := s.db.rdb.Pipeline()
	for _, k := range undo {
		up.Del(ctx, k)
	}
	_, undoErr := up.Exec(ctx)
	if execErr != nil {
		return fmt.Errorf("redis: insert articles %d..%d: %w", batch[0].ID, batch[len(batch)-1].ID, errors.Join(execErr, undoErr))
	}
	if undoErr != nil {
		return fmt.Errorf("redis: insert article %d: it exists already, and removing the batch's other articles failed: %w", dup, undoErr)
	}
	return fmt.Errorf("redis: insert article %d: it exists already", dup)
}
