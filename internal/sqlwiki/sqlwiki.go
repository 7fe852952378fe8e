// Package sqlwiki is the wiki family's part that the SQL adapters
// (sqlite, mariadb, postgres) share: the articles table, the statements
// of the database/sql ones, the answers' checks, and the loading of a
// wiki.Source in bounded transactions. What differs (column types, how
// rows are inserted, PostgreSQL's COPY and wire-level read) stays in each
// adapter.
package sqlwiki

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// CreateTable is the articles table, the id its primary key (key: its
// type and constraint), so a request is one B-tree lookup; bodies are of a
// binary type (body) so that length(body) counts bytes, as wiki.Counts
// wants, and the server converts and checks no character set. options
// follow the closing parenthesis.
func CreateTable(key, title, body, options string) string {
	return "create table if not exists articles (\n\tid    " + key + ",\n\ttitle " + title + " not null,\n\tbody  " + body + " not null\n)" + options
}

// The statements of the database/sql adapters (parameters "?").
const (
	ReadSQL   = `select title, body from articles where id = ?`
	UpdateSQL = `update articles set body = ? where id = ?`
	CountsSQL = `select count(*), coalesce(sum(length(body)), 0), coalesce(max(id), 0) from articles`
)

// Row is one row a query answered: *sql.Row, pgx.Row.
type Row interface{ Scan(dest ...any) error }

// Read is wiki.Store's Read of id from row, ReadSQL's answer. The error of
// a missing article carries no id, so the recorder counts all of them as
// one kind. name starts the errors ("mariadb").
func Read(name string, id int64, row *sql.Row) (wiki.Article, error) {
	a := wiki.Article{ID: id}
	err := row.Scan(&a.Title, &a.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return wiki.Article{}, fmt.Errorf("%s: read: %w", name, wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("%s: read article: %w", name, err)
	}
	return a, nil
}

// Updated is wiki.Store's Update from UpdateSQL's result: no row changed
// is a missing article.
func Updated(name string, res sql.Result, err error) error {
	if err != nil {
		return fmt.Errorf("%s: update article: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: update article: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: update: %w", name, wiki.ErrNotFound)
	}
	return nil
}

// Counts is wiki.Store's Counts from row, CountsSQL's answer (or the
// dialect's like of it).
func Counts(name string, row Row) (wiki.Counts, error) {
	var c wiki.Counts
	if err := row.Scan(&c.Articles, &c.Bytes, &c.MaxID); err != nil {
		return c, fmt.Errorf("%s: count articles: %w", name, err)
	}
	return c, nil
}

// Count adds article a to c.
func Count(c *wiki.Counts, a wiki.Article) {
	c.Articles++
	c.Bytes += int64(len(a.Body))
	c.MaxID = max(c.MaxID, a.ID)
}

// Add adds the counts of a part, c, to total.
func Add(total *wiki.Counts, c wiki.Counts) {
	total.Articles += c.Articles
	total.Bytes += c.Bytes
	total.MaxID = max(total.MaxID, c.MaxID)
}

// Writer writes one transaction's articles.
type Writer struct {
	// Insert writes a, or keeps it for a later statement.
	Insert func(ctx context.Context, a wiki.Article) error
	// Flush, when not nil, writes what Insert kept, before the commit.
	Flush func(ctx context.Context) error
}

// Populate is wiki.Store's Populate on db: src streamed in transactions of
// up to txRows articles or txBytes of bodies, whichever comes first (large
// enough that commits cost little, small enough that memory, a WAL or a
// Galera write set stay bounded), each written by the Writer that open
// gives for it. Nothing of a failed transaction is kept; the counts are of
// the transactions committed.
func Populate(ctx context.Context, db *sql.DB, name string, src wiki.Source, txRows int64, txBytes int64, open func(tx *sql.Tx) Writer) (wiki.Counts, error) {
	var total wiki.Counts
	for {
		c, done, err := populateTx(ctx, db, name, src, txRows, txBytes, open)
		if err != nil {
			return total, err
		}
		Add(&total, c)
		if done {
			return total, nil
		}
	}
}

// populateTx writes one transaction's articles; done reports that src is
// exhausted.
func populateTx(ctx context.Context, db *sql.DB, name string, src wiki.Source, txRows, txBytes int64, open func(tx *sql.Tx) Writer) (c wiki.Counts, done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return c, false, fmt.Errorf("%s: begin populate: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
			c = wiki.Counts{}
		}
	}()
	w := open(tx)
	for c.Bytes < txBytes && c.Articles < txRows {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			done = true
			break
		}
		if err != nil {
			return c, false, err
		}
		if err := w.Insert(ctx, a); err != nil {
			return c, false, err
		}
		Count(&c, a)
	}
	if w.Flush != nil {
		if err := w.Flush(ctx); err != nil {
			return c, false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return c, false, fmt.Errorf("%s: commit populate: %w", name, err)
	}
	return c, done, nil
}
