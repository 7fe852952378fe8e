package mariadb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fieldbench/fieldbench/internal/sqlwiki"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The wiki family's table (sqlwiki.CreateTable): bodies are LONGBLOBs,
// clustered on the id.
var createArticles = sqlwiki.CreateTable("bigint not null primary key", "varchar(1024)", "longblob", " engine=InnoDB")

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
	return sqlwiki.Read("mariadb", id, s.db.pick().QueryRowContext(ctx, sqlwiki.ReadSQL, id))
}

// Update implements wiki.Store: one autocommitted UPDATE. The DSN's
// clientFoundRows makes "rows affected" count matched rows, so writing a
// body equal to the stored one is not mistaken for a missing article.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	res, err := s.db.pick().ExecContext(ctx, sqlwiki.UpdateSQL, []byte(body), id)
	return sqlwiki.Updated("mariadb", res, err)
}

// Counts implements wiki.Store.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	return sqlwiki.Counts("mariadb", s.db.first().QueryRowContext(ctx, sqlwiki.CountsSQL))
}

// Reset implements wiki.Store: TRUNCATE (drops and recreates the table's
// file; replicated to every Galera node as DDL).
func (s *wikiStore) Reset(ctx context.Context) error {
	if _, err := s.db.first().ExecContext(ctx, "truncate table articles"); err != nil {
		return fmt.Errorf("mariadb: reset articles: %w", err)
	}
	return nil
}

// Populate implements wiki.Store, streaming from src on the first node.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	return sqlwiki.Populate(ctx, s.db.first(), "mariadb", src, wikiTxRows, wikiTxBytes, func(tx *sql.Tx) sqlwiki.Writer {
		w := &wikiInserts{tx: tx, args: make([]any, 0, 3*wikiStmtRows)}
		return sqlwiki.Writer{Insert: w.insert, Flush: w.flush}
	})
}

// wikiInserts gathers a transaction's articles into multi-row INSERTs.
type wikiInserts struct {
	tx    *sql.Tx
	args  []any
	bytes int // of the titles and bodies in args
}

func (w *wikiInserts) insert(ctx context.Context, a wiki.Article) error {
	w.args = append(w.args, a.ID, a.Title, []byte(a.Body))
	w.bytes += len(a.Body) + len(a.Title)
	if len(w.args) >= 3*wikiStmtRows || w.bytes >= wikiStmtBytes {
		return w.flush(ctx)
	}
	return nil
}

func (w *wikiInserts) flush(ctx context.Context) error {
	if len(w.args) == 0 {
		return nil
	}
	if _, err := w.tx.ExecContext(ctx, "insert into articles (id, title, body) values "+values(3, len(w.args)/3), w.args...); err != nil {
		return fmt.Errorf("mariadb: insert %d articles: %w", len(w.args)/3, err)
	}
	w.args, w.bytes = w.args[:0], 0
	return nil
}
