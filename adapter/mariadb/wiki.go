package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The wiki family's table: the id is the clustered primary key, so a
// request is one B-tree lookup; bodies are LONGBLOBs (byte lengths, no
// character set conversion).
const createArticles = `create table if not exists articles (
	id    bigint not null primary key,
	title varchar(1024) not null,
	body  longblob not null
) engine=InnoDB`

// Populate sends multi-row INSERTs of up to wikiStmtRows articles or
// wikiStmtBytes of bodies (well below max_allowed_packet), and commits
// every wikiTxBytes / wikiTxRows (bounded memory, bounded Galera write
// sets).
const (
	wikiStmtRows  = 500
	wikiStmtBytes = 4 << 20
	wikiTxRows    = 20_000
	wikiTxBytes   = 64 << 20
)

type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if _, err := db.first().ExecContext(ctx, createArticles); err != nil {
		return nil, fmt.Errorf("mariadb: create articles table: %w", err)
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	a := wiki.Article{ID: id}
	var body []byte
	err := s.db.pick().QueryRowContext(ctx, "select title, body from articles where id = ?", id).Scan(&a.Title, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return wiki.Article{}, fmt.Errorf("mariadb: read: %w", wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("mariadb: read article: %w", err)
	}
	a.Body = string(body)
	return a, nil
}

// Update implements wiki.Store: one autocommitted UPDATE. The DSN's
// clientFoundRows makes "rows affected" count matched rows, so writing a
// body equal to the stored one is not mistaken for a missing article.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	res, err := s.db.pick().ExecContext(ctx, "update articles set body = ? where id = ?", []byte(body), id)
	if err != nil {
		return fmt.Errorf("mariadb: update article: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("mariadb: update article: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("mariadb: update: %w", wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	if err := s.db.first().QueryRowContext(ctx,
		"select count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) from articles").
		Scan(&c.Articles, &c.Bytes, &c.MaxID); err != nil {
		return c, fmt.Errorf("mariadb: count articles: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store: TRUNCATE (drops and recreates the table's
// file; replicated to every Galera node as DDL).
func (s *wikiStore) Reset(ctx context.Context) error {
	if _, err := s.db.first().ExecContext(ctx, "truncate table articles"); err != nil {
		return fmt.Errorf("mariadb: reset articles: %w", err)
	}
	return nil
}

// Populate implements wiki.Store, streaming from src.
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

// populateTx inserts one transaction's worth of articles; done reports
// that src is exhausted. Nothing of a failed transaction is kept.
func (s *wikiStore) populateTx(ctx context.Context, src wiki.Source) (c wiki.Counts, done bool, err error) {
	tx, err := s.db.first().BeginTx(ctx, nil)
	if err != nil {
		return c, false, fmt.Errorf("mariadb: begin populate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			c = wiki.Counts{}
		}
	}()
	args := make([]any, 0, 3*wikiStmtRows)
	var stmtBytes int
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "insert into articles (id, title, body) values "+values(3, len(args)/3), args...); err != nil {
			return fmt.Errorf("mariadb: insert %d articles: %w", len(args)/3, err)
		}
		args, stmtBytes = args[:0], 0
		return nil
	}
	for c.Bytes < wikiTxBytes && c.Articles < wikiTxRows {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			done = true
			break
		}
		if err != nil {
			return c, false, err
		}
		args = append(args, a.ID, a.Title, []byte(a.Body))
		stmtBytes += len(a.Body) + len(a.Title)
		c.Articles++
		c.Bytes += int64(len(a.Body))
		c.MaxID = max(c.MaxID, a.ID)
		if len(args) >= 3*wikiStmtRows || stmtBytes >= wikiStmtBytes {
			if err := flush(); err != nil {
				return c, false, err
			}
		}
	}
	if err := flush(); err != nil {
		return c, false, err
	}
	if err := tx.Commit(); err != nil {
		return c, false, fmt.Errorf("mariadb: commit populate: %w", err)
	}
	return c, done, nil
}
