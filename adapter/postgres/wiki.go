package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

var _ wiki.Backend = (*DB)(nil)

// The wiki family's table. Bodies are bytea so that length(body) counts
// bytes, as wiki.Counts wants, and the server does no encoding checks
// (bodies are large: TOASTed, compressed out of line).
const createArticles = `create table if not exists articles (
	id    bigint primary key,
	title text not null,
	body  bytea not null
)`

// populateTxRows bounds one COPY (and transaction) of Populate, so a failed
// load loses little and memory stays bounded.
const populateTxRows = 20_000

// wikiStore is the wiki.Store: reads on the reader pools (replicas with
// read_from=replicas), writes on the primary.
type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if _, err := db.w.Exec(ctx, createArticles); err != nil {
		return nil, fmt.Errorf("postgres: create articles table: %w", err)
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	a := wiki.Article{ID: id}
	var body []byte
	err := s.db.reader().QueryRow(ctx, `select title, body from articles where id = $1`, id).Scan(&a.Title, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return wiki.Article{}, fmt.Errorf("postgres: read: %w", wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("postgres: read article: %w", err)
	}
	a.Body = string(body)
	return a, nil
}

// Update implements wiki.Store: one autocommitted UPDATE on the primary.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	tag, err := s.db.w.Exec(ctx, `update articles set body = $1 where id = $2`, []byte(body), id)
	if err != nil {
		return fmt.Errorf("postgres: update article: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: update: %w", wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store (on the primary).
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	err := s.db.w.QueryRow(ctx, `select count(*), coalesce(sum(length(body)), 0)::bigint, coalesce(max(id), 0) from articles`).
		Scan(&c.Articles, &c.Bytes, &c.MaxID)
	if err != nil {
		return c, fmt.Errorf("postgres: count articles: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store: TRUNCATE (gives the space back at once).
func (s *wikiStore) Reset(ctx context.Context) error {
	if _, err := s.db.w.Exec(ctx, `truncate articles`); err != nil {
		return fmt.Errorf("postgres: reset articles: %w", err)
	}
	return nil
}

// Populate implements wiki.Store: COPY FROM STDIN (binary, via pgx
// CopyFrom) streaming from src, one COPY per populateTxRows articles.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	var total wiki.Counts
	for {
		var c wiki.Counts
		var srcErr error
		done := false
		n := 0
		_, err := s.db.w.CopyFrom(ctx, pgx.Identifier{"articles"}, []string{"id", "title", "body"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if n >= populateTxRows {
					return nil, nil
				}
				a, err := src.Next()
				if errors.Is(err, io.EOF) {
					done = true
					return nil, nil
				}
				if err != nil {
					srcErr = err
					return nil, err
				}
				n++
				c.Articles++
				c.Bytes += int64(len(a.Body))
				c.MaxID = max(c.MaxID, a.ID)
				return []any{a.ID, a.Title, []byte(a.Body)}, nil
			}))
		if srcErr != nil {
			return total, srcErr
		}
		if err != nil {
			return total, fmt.Errorf("postgres: copy articles: %w", err)
		}
		total.Articles += c.Articles
		total.Bytes += c.Bytes
		total.MaxID = max(total.MaxID, c.MaxID)
		if done {
			if _, err := s.db.w.Exec(ctx, "analyze articles"); err != nil {
				return total, fmt.Errorf("postgres: analyze articles: %w", err)
			}
			return total, nil
		}
	}
}
