// Package wiki is the elasticity study's workload (Dory et al. 2011):
// articles of very different sizes, identified by consecutive integer ids,
// read and appended to in request sets whose completion time is the
// measured figure.
//
// The data is either synthetic (Generator: a deterministic, heavy-tailed
// size distribution shaped like Wikipedia's, any article producible from
// (seed, id) alone) or a real MediaWiki XML dump streamed in (Dump). The
// requests (Plan, Client) are reproducible from (seed, set, repetition,
// thread), so the brute-force Oracle can replay exactly which articles a
// run updated. Store is what an adapter implements; docs/wiki.md describes
// the workload for users.
package wiki

import (
	"context"
	"errors"
	"io"
)

// Article is one stored text. IDs are 1..n, consecutive, in load order.
type Article struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// ErrNotFound is wrapped by Store.Read and Store.Update for an id that is
// not stored.
var ErrNotFound = errors.New("article not found")

// Source yields articles one at a time so that loading runs in constant
// memory whatever the dataset's size. Next returns io.EOF after the last.
type Source interface {
	Next() (Article, error)
}

// Counts is what a Store holds.
type Counts struct {
	Articles int64 `json:"articles"`
	// Bytes is the total size of all bodies.
	Bytes int64 `json:"bytes"`
	// MaxID is the largest id (0 when empty); a dataset loaded by fieldbench
	// has MaxID == Articles.
	MaxID int64 `json:"max_id"`
}

// Store is what an adapter implements for the wiki family. Implementations
// must be safe for concurrent use by many client threads.
type Store interface {
	// Populate inserts every article src yields (ids must not exist yet),
	// in large batches, and returns what it inserted.
	Populate(ctx context.Context, src Source) (Counts, error)
	// Read returns the article id; an error wrapping ErrNotFound when absent.
	Read(ctx context.Context, id int64) (Article, error)
	// Update replaces the body of article id (its title stays); an error
	// wrapping ErrNotFound when absent.
	Update(ctx context.Context, id int64, body string) error
	// Counts reports how much is stored; Articles == 0 means empty.
	Counts(ctx context.Context) (Counts, error)
	// Reset removes every article, leaving an empty store.
	Reset(ctx context.Context) error
	Close() error
}

// ReaderInto is implemented by a Store whose reads can copy the article
// into memory the caller owns and reuses, where Read allocates its strings
// anew every time. A client thread reads one article after another and
// keeps none of them, so a fresh ~5 KB allocation per read was the garbage
// collector's work and a tenth of the client's CPU per read beside
// pgbench's (which copies each row into a result it frees); the copy
// stays, the garbage goes.
type ReaderInto interface {
	// ReadInto reads article id as Read does and copies its title and body
	// into *buf (grown when too small). The Article's strings share *buf's
	// memory: they are valid until the next ReadInto with the same buf.
	ReadInto(ctx context.Context, id int64, buf *[]byte) (Article, error)
}

// Backend is implemented by an adapter.DB that supports the wiki family.
type Backend interface {
	// Wiki returns the family's Store, creating its schema when absent.
	Wiki(ctx context.Context) (Store, error)
}

// PopulateBatches reads src to its end and hands the articles to insert in
// batches of at most maxRows articles or about maxBytes of text (a batch
// stops once it reaches maxBytes), returning what was inserted. It is the
// loop of every adapter whose bulk path takes a batch at a time; a failed
// insert stops it with the counts of the batches before.
func PopulateBatches(src Source, maxRows int, maxBytes int64, insert func([]Article) error) (Counts, error) {
	var total Counts
	batch := make([]Article, 0, maxRows)
	for done := false; !done; {
		batch = batch[:0]
		var bytes int64
		for len(batch) < maxRows && bytes < maxBytes {
			a, err := src.Next()
			if errors.Is(err, io.EOF) {
				done = true
				break
			}
			if err != nil {
				return total, err
			}
			batch = append(batch, a)
			bytes += int64(len(a.Body))
		}
		if len(batch) == 0 {
			break
		}
		if err := insert(batch); err != nil {
			return total, err
		}
		for _, a := range batch {
			total.Articles++
			total.Bytes += int64(len(a.Body))
			total.MaxID = max(total.MaxID, a.ID)
		}
	}
	return total, nil
}
