package null

import (
	"context"
	"errors"
	"io"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(context.Context) (wiki.Store, error) { return wikiStore{db}, nil }

// wikiStore counts what it is given and answers every id in range with an
// empty article (the same answer every time, allocating nothing).
type wikiStore struct{ db *DB }

func (s wikiStore) Populate(_ context.Context, src wiki.Source) (wiki.Counts, error) {
	var c wiki.Counts
	for {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c, err
		}
		c.Articles++
		c.Bytes += int64(len(a.Body))
		c.MaxID = max(c.MaxID, a.ID)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.wikiCount.Articles += c.Articles
	s.db.wikiCount.Bytes += c.Bytes
	s.db.wikiCount.MaxID = max(s.db.wikiCount.MaxID, c.MaxID)
	return c, nil
}

func (s wikiStore) Read(_ context.Context, id int64) (wiki.Article, error) {
	return wiki.Article{ID: id}, nil
}

func (s wikiStore) Update(context.Context, int64, string) error { return nil }

func (s wikiStore) Counts(context.Context) (wiki.Counts, error) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	return s.db.wikiCount, nil
}

func (s wikiStore) Reset(context.Context) error {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.wikiCount = wiki.Counts{}
	return nil
}

func (wikiStore) Close() error { return nil }
