package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldbench/fieldbench/internal/sqlwiki"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The wiki family's table (sqlwiki.CreateTable): bodies are bytea (large:
// TOASTed, compressed out of line).
var createArticles = sqlwiki.CreateTable("bigint primary key", "text", "bytea", "")

// populateTxRows bounds one COPY (and transaction) of Populate, so a failed
// load loses little and memory stays bounded.
const populateTxRows = 20_000

// wikiStore is the wiki.Store: reads on the reader pools (replicas with
// read_from=replicas), writes on the primary.
type wikiStore struct{ db *DB }

var (
	_ wiki.Backend    = (*DB)(nil)
	_ wiki.Store      = (*wikiStore)(nil)
	_ wiki.ReaderInto = (*wikiStore)(nil)
)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if _, err := db.w.Exec(ctx, createArticles); err != nil {
		return nil, fmt.Errorf("postgres: create articles table: %w", err)
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

// The read's statement, prepared once per connection under its own name
// (pgx keeps the description per connection, so later reads only look it
// up). Parameters and results travel in binary: the id as an int8, the
// title and body as their raw bytes.
const (
	wikiReadStmt = "fieldbench_wiki_read"
	wikiReadSQL  = `select title, body from articles where id = $1`
)

// The update's statement, prepared on the event loop's connections (the
// goroutine path's Update sends the same SQL through pgx, whose statement
// cache prepares it).
const (
	wikiUpdateStmt = "fieldbench_wiki_update"
	wikiUpdateSQL  = `update articles set body = $1 where id = $2`
)

var (
	wikiUpdateParamFormats = []int16{pgx.BinaryFormatCode, pgx.BinaryFormatCode}
	wikiReadParamFormats   = []int16{pgx.BinaryFormatCode}
	wikiReadResultFormats  = []int16{pgx.BinaryFormatCode, pgx.BinaryFormatCode}
)

// Read implements wiki.Store: one execution of the prepared SELECT on a
// pooled connection (no pipelining, no caching), sent and read by
// readDirect on the connection's socket; through pgconn when the
// connection is not a plain socket (TLS). The read is the wiki workload's
// hot path, and pgx's generic QueryRow/Scan costs client CPU the
// comparison with pgbench showed: it builds a Rows, plans the scan, and
// scans the body into a []byte that had to be copied again into the
// Article's string. Here each column is copied once, from the reply into
// the returned strings (see docs/postgres.md, "Client efficiency").
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	return s.read(ctx, id, nil)
}

// ReadInto implements wiki.ReaderInto: Read, copying the article into *buf
// (when it is read directly; through pgconn it gets strings of its own).
func (s *wikiStore) ReadInto(ctx context.Context, id int64, buf *[]byte) (wiki.Article, error) {
	return s.read(ctx, id, buf)
}

func (s *wikiStore) read(ctx context.Context, id int64, buf *[]byte) (wiki.Article, error) {
	c, err := s.acquire(ctx, s.db.reader())
	if err != nil {
		return wiki.Article{}, fmt.Errorf("postgres: read article: %w", err)
	}
	defer s.release(c)
	sd, err := c.Conn().Prepare(ctx, wikiReadStmt, wikiReadSQL)
	if err != nil {
		return wiki.Article{}, fmt.Errorf("postgres: read article: prepare: %w", err)
	}
	if a, ok, err := readDirect(ctx, c, id, buf); ok {
		return a, err
	}
	return readPgconn(ctx, c, sd.Name, id)
}

// acquire returns a connection for a read or an update: one the last
// reads held (held.go; the primary's, and nil when reads go to replicas),
// else one from pool.
func (s *wikiStore) acquire(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Conn, error) {
	if s.db.held != nil {
		if c := s.db.held.get(ctx); c != nil {
			return c, nil
		}
	}
	return pool.Acquire(ctx)
}

// release gives a read's or an update's connection to the held ones, or
// to its pool.
func (s *wikiStore) release(c *pgxpool.Conn) {
	if s.db.held != nil {
		s.db.held.put(c)
		return
	}
	c.Release()
}

// readPgconn is the read through pgconn's ExecPrepared, for a connection
// readDirect cannot use.
func readPgconn(ctx context.Context, c *pgxpool.Conn, stmt string, id int64) (wiki.Article, error) {
	param := binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(id))
	rr := c.Conn().PgConn().ExecPrepared(ctx, stmt, [][]byte{param}, wikiReadParamFormats, wikiReadResultFormats)
	a, found, bad := wiki.Article{ID: id}, false, false
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != 2 || v[0] == nil || v[1] == nil {
			bad = true
			continue
		}
		a.Title, a.Body, found = string(v[0]), string(v[1]), true
	}
	if _, err := rr.Close(); err != nil {
		return wiki.Article{}, fmt.Errorf("postgres: read article: %w", err)
	}
	switch {
	case bad:
		return wiki.Article{}, fmt.Errorf("postgres: read article %d: unexpected row shape (want non-null title and body)", id)
	case !found:
		return wiki.Article{}, fmt.Errorf("postgres: read: %w", wiki.ErrNotFound)
	}
	return a, nil
}

// Update implements wiki.Store: one autocommitted UPDATE on the primary.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	c, err := s.acquire(ctx, s.db.w)
	if err != nil {
		return fmt.Errorf("postgres: update article: %w", err)
	}
	defer s.release(c)
	tag, err := c.Exec(ctx, wikiUpdateSQL, []byte(body), id)
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
	return sqlwiki.Counts("postgres", s.db.w.QueryRow(ctx,
		`select count(*), coalesce(sum(length(body)), 0)::bigint, coalesce(max(id), 0) from articles`))
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
				sqlwiki.Count(&c, a)
				return []any{a.ID, a.Title, []byte(a.Body)}, nil
			}))
		if srcErr != nil {
			return total, srcErr
		}
		if err != nil {
			return total, fmt.Errorf("postgres: copy articles: %w", err)
		}
		sqlwiki.Add(&total, c)
		if done {
			if _, err := s.db.w.Exec(ctx, "analyze articles"); err != nil {
				return total, fmt.Errorf("postgres: analyze articles: %w", err)
			}
			return total, nil
		}
	}
}
