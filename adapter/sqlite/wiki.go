package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

var _ wiki.Backend = (*DB)(nil)

// The wiki family's table. Bodies are BLOBs so that length(body) is a byte
// count (for TEXT it counts characters) and SQLite need not validate UTF-8;
// the id is the rowid, so a request is one B-tree lookup.
const createArticles = `create table if not exists articles (
	id    integer primary key,
	title text not null,
	body  blob not null
)`

// Populate commits a transaction every populateTxBytes of bodies or
// populateTxRows articles, whichever comes first: large enough that commits
// cost little, small enough that the WAL and memory stay bounded.
const (
	populateTxBytes = 64 << 20
	populateTxRows  = 20_000
)

// wikiStore is the wiki.Store of a SQLite file: reads go to the reader pool,
// writes to the single writer connection.
type wikiStore struct {
	db     *DB
	read   *sql.Stmt // reader pool
	counts *sql.Stmt // reader pool
	update *sql.Stmt // writer
	insert *sql.Stmt // writer
}

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend: a Store over the articles table, created
// when absent.
func (db *DB) Wiki(ctx context.Context) (_ wiki.Store, err error) {
	if _, err := db.w.ExecContext(ctx, createArticles); err != nil {
		return nil, fmt.Errorf("sqlite: create articles table: %w", err)
	}
	s := &wikiStore{db: db}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, p := range []struct {
		pool *sql.DB
		dst  **sql.Stmt
		q    string
	}{
		{db.r, &s.read, `select title, body from articles where id = ?`},
		{db.r, &s.counts, `select count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) from articles`},
		{db.w, &s.update, `update articles set body = ? where id = ?`},
		{db.w, &s.insert, `insert into articles (id, title, body) values (?, ?, ?)`},
	} {
		st, err := p.pool.PrepareContext(ctx, p.q)
		if err != nil {
			return nil, fmt.Errorf("sqlite: prepare wiki statement %q: %w", p.q, err)
		}
		*p.dst = st
	}
	return s, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.read, s.counts, s.update, s.insert} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// Read implements wiki.Store. The error of a missing article carries no id
// so the recorder counts all of them as one kind.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	a := wiki.Article{ID: id}
	err := s.read.QueryRowContext(ctx, id).Scan(&a.Title, &a.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return wiki.Article{}, fmt.Errorf("sqlite: read: %w", wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("sqlite: read article: %w", err)
	}
	return a, nil
}

// Update implements wiki.Store: one autocommitted statement on the writer.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	res, err := s.update.ExecContext(ctx, []byte(body), id)
	if err != nil {
		return fmt.Errorf("sqlite: update article: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: update article: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: update: %w", wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	if err := s.counts.QueryRowContext(ctx).Scan(&c.Articles, &c.Bytes, &c.MaxID); err != nil {
		return c, fmt.Errorf("sqlite: count articles: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store. Dropping and recreating the table is far
// faster than deleting row by row; the freed pages stay in the file for
// the next load.
func (s *wikiStore) Reset(ctx context.Context) (err error) {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin reset: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	for _, q := range []string{`drop table if exists articles`, createArticles} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: reset articles: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit reset: %w", err)
	}
	return nil
}

// Populate implements wiki.Store: the prepared insert in transactions of
// up to populateTxBytes / populateTxRows, streaming from src.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	var total wiki.Counts
	for {
		c, done, err := s.populateTx(ctx, src)
		if err != nil {
			return total, err
		}
		total.Articles += c.Articles
		total.Bytes += c.Bytes
		total.MaxID = max(total.MaxID, c.MaxID)
		if done {
			return total, nil
		}
	}
}

// populateTx inserts one transaction's worth of articles; done reports that
// src is exhausted. Nothing of a failed transaction is kept.
func (s *wikiStore) populateTx(ctx context.Context, src wiki.Source) (c wiki.Counts, done bool, err error) {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return c, false, fmt.Errorf("sqlite: begin populate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			c = wiki.Counts{}
		}
	}()
	ins := tx.StmtContext(ctx, s.insert)
	defer ins.Close()
	for c.Bytes < populateTxBytes && c.Articles < populateTxRows {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			done = true
			break
		}
		if err != nil {
			return c, false, err
		}
		if _, err := ins.ExecContext(ctx, a.ID, a.Title, []byte(a.Body)); err != nil {
			return c, false, fmt.Errorf("sqlite: insert article %d: %w", a.ID, err)
		}
		c.Articles++
		c.Bytes += int64(len(a.Body))
		c.MaxID = max(c.MaxID, a.ID)
	}
	if err := tx.Commit(); err != nil {
		return c, false, fmt.Errorf("sqlite: commit populate: %w", err)
	}
	return c, done, nil
}
