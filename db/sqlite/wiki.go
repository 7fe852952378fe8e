package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fieldbench/fieldbench/internal/sqlwiki"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

var _ wiki.Backend = (*DB)(nil)

// The wiki family's table (sqlwiki.CreateTable): bodies are BLOBs (for
// TEXT length(body) counts characters, and SQLite would validate UTF-8);
// the id is the rowid.
var createArticles = sqlwiki.CreateTable("integer primary key", "text", "blob", "")

// Populate commits a transaction every populateTxBytes of bodies or
// populateTxRows articles, whichever comes first.
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
		{db.r, &s.read, sqlwiki.ReadSQL},
		{db.r, &s.counts, sqlwiki.CountsSQL},
		{db.w, &s.update, sqlwiki.UpdateSQL},
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

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	return sqlwiki.Read("sqlite", id, s.read.QueryRowContext(ctx, id))
}

// Update implements wiki.Store: one autocommitted statement on the writer.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	res, err := s.update.ExecContext(ctx, []byte(body), id)
	return sqlwiki.Updated("sqlite", res, err)
}

// Counts implements wiki.Store.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	return sqlwiki.Counts("sqlite", s.counts.QueryRowContext(ctx))
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

// Populate implements wiki.Store: the prepared insert on the writer, in
// transactions of up to populateTxBytes / populateTxRows, streaming from
// src.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	return sqlwiki.Populate(ctx, s.db.w, "sqlite", src, populateTxRows, populateTxBytes, func(tx *sql.Tx) sqlwiki.Writer {
		ins := tx.StmtContext(ctx, s.insert) // closed with tx
		return sqlwiki.Writer{Insert: func(ctx context.Context, a wiki.Article) error {
			if _, err := ins.ExecContext(ctx, a.ID, a.Title, []byte(a.Body)); err != nil {
				return fmt.Errorf("sqlite: insert article %d: %w", a.ID, err)
			}
			return nil
		}}
	})
}
