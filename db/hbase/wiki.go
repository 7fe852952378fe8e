package hbase

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Wiki table "wiki", one column family "a" (one version kept):
//
//	row key  the article id as 16 hex digits (fixed width, so keys sort
//	         by id and a range scan finds a batch's ids)
//	a:t      title
//	a:b      body
//	a:n      body length in bytes (decimal), so Counts scans a few bytes
//	         per article instead of every body
//	a:e      "1": the existence marker Update's check-and-put tests
//
// Consecutive ids are neighbouring keys: a fresh table is one region on one
// region server until HBase splits it (as in the elasticity study, where
// the load's skew over region servers was part of the finding).
//
// Read is one get of the row. Update is one check-and-put of body and
// length conditional on a:e (a row's put is atomic; a missing article is
// refused with ErrNotFound). Populate checks each batch's key range with a
// key-only scan first and refuses the batch if any id exists, so a refused
// batch writes nothing (earlier batches stay, as committed transactions
// would).
const (
	wikiTable      = "wiki"
	wikiFamily     = "a"
	wikiBatchRows  = 500
	wikiBatchBytes = 8 << 20
)

func wikiKey(id int64) string { return fmt.Sprintf("%016x", id) }

type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend, creating the table when absent.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if err := db.ensureTable(ctx, wikiTable, wikiFamily); err != nil {
		return nil, err
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	r, ok, err := s.db.getRow(ctx, wikiTable, wikiKey(id), "a:t", "a:b")
	if err != nil {
		return wiki.Article{}, err
	}
	title, ok1 := r.get("a:t")
	body, ok2 := r.get("a:b")
	if !ok || !ok1 || !ok2 {
		return wiki.Article{}, fmt.Errorf("hbase: read article %d: %w", id, wiki.ErrNotFound)
	}
	return wiki.Article{ID: id, Title: string(title), Body: string(body)}, nil
}

// Update implements wiki.Store: one check-and-put of body and length,
// conditional on the row's existence marker a:e = "1", so a missing
// article is refused (ErrNotFound) in the same round trip.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	ok, err := s.db.checkPut(ctx, wikiTable, wikiKey(id), []cell{
		{Column: []byte("a:b"), Value: []byte(body)},
		{Column: []byte("a:n"), Value: strconv.AppendInt(nil, int64(len(body)), 10)},
		// The gateway wants the checked column among the put's cells.
		{Column: []byte("a:e"), Value: []byte("1")},
	}, cell{Column: []byte("a:e"), Value: []byte("1")})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("hbase: update article %d: %w", id, wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store: a scan of the length column.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	err := s.db.scan(ctx, wikiTable, scanSpec{Columns: []string{"a:n"}, Batch: 5000}, func(r row) error {
		id, err := strconv.ParseInt(string(r.Key), 16, 64)
		if err != nil {
			return fmt.Errorf("hbase: wiki row key %q: %w", r.Key, err)
		}
		n, _ := r.get("a:n")
		size, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return fmt.Errorf("hbase: wiki row %q length %q: %w", r.Key, n, err)
		}
		c.Articles++
		c.Bytes += size
		c.MaxID = max(c.MaxID, id)
		return nil
	})
	if err != nil {
		return wiki.Counts{}, fmt.Errorf("hbase: count articles: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store: drop and recreate the table.
func (s *wikiStore) Reset(ctx context.Context) error {
	return s.db.recreate(ctx, wikiTable, wikiFamily)
}

// Populate implements wiki.Store.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	return wiki.PopulateBatches(src, wikiBatchRows, wikiBatchBytes, func(batch []wiki.Article) error {
		return s.insert(ctx, batch)
	})
}

func (s *wikiStore) insert(ctx context.Context, batch []wiki.Article) error {
	lo, hi := batch[0].ID, batch[0].ID
	ids := make(map[int64]bool, len(batch))
	for _, a := range batch {
		if ids[a.ID] {
			return fmt.Errorf("hbase: insert article %d: twice in one load", a.ID)
		}
		ids[a.ID] = true
		lo, hi = min(lo, a.ID), max(hi, a.ID)
	}
	var dup int64 = -1
	errFound := errors.New("found")
	err := s.db.scan(ctx, wikiTable, scanSpec{
		Start: wikiKey(lo), End: wikiKey(hi + 1), Columns: []string{"a:n"},
		Filter: `{"type":"KeyOnlyFilter"}`, Batch: 5000,
	}, func(r row) error {
		id, err := strconv.ParseInt(string(r.Key), 16, 64)
		if err == nil && ids[id] {
			dup = id
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return fmt.Errorf("hbase: insert articles %d..%d: %w", lo, hi, err)
	}
	if dup >= 0 {
		return fmt.Errorf("hbase: insert article %d: it exists already", dup)
	}
	rows := make([]row, len(batch))
	for i, a := range batch {
		rows[i] = row{Key: []byte(wikiKey(a.ID)), Cells: []cell{
			{Column: []byte("a:t"), Value: []byte(a.Title)},
			{Column: []byte("a:b"), Value: []byte(a.Body)},
			{Column: []byte("a:n"), Value: strconv.AppendInt(nil, int64(len(a.Body)), 10)},
			{Column: []byte("a:e"), Value: []byte("1")},
		}}
	}
	return s.db.putRows(ctx, wikiTable, rows)
}
