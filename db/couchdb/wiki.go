package couchdb

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Wiki: one database, <prefix>_wiki, one document per article whose _id is
// the id in 19 digits (so _all_docs is in id order and its last key is the
// largest id):
//
//	{"_id": "0000000000000000042", "title": ..., "body": ..., "bytes": len(body)}
//
// bytes is the body's length in bytes (JavaScript's length counts UTF-16
// units); a view sums it for Counts. A read is one GET. An update is GET
// then PUT with the revision read, the study's read-modify-write, retried
// when another client's update came in between (409).
const (
	wikiKind       = "wiki"
	wikiBatchRows  = 500
	wikiBatchBytes = 8 << 20
	wikiDesign     = "_design/fieldbench"
	// wikiRetries bounds update conflicts retried on one article.
	wikiRetries = 20
)

var wikiDesignDoc = map[string]any{
	"_id":      wikiDesign,
	"language": "javascript",
	"views": map[string]any{
		"bytes": map[string]string{"map": "function (doc) { if (typeof doc.bytes === 'number') { emit(null, doc.bytes); } }", "reduce": "_sum"},
	},
}

type wikiDoc struct {
	ID    string `json:"_id"`
	Rev   string `json:"_rev,omitempty"`
	Title string `json:"title"`
	Body  string `json:"body"`
	Bytes int    `json:"bytes"`
}

type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend: the database and its design document are
// created when absent.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if err := db.ensure(ctx, wikiKind); err != nil {
		return nil, err
	}
	if err := db.putDesign(ctx, wikiKind, wikiDesignDoc); err != nil {
		return nil, err
	}
	return &wikiStore{db: db}, nil
}

// putDesign writes a design document unless one with its _id exists.
func (db *DB) putDesign(ctx context.Context, kind string, doc map[string]any) error {
	id := doc["_id"].(string)
	err := db.do(ctx, http.MethodPut, couchapi.Path(db.name(kind))+"/"+id, nil, doc, nil)
	if err != nil && !couchapi.IsConflict(err) {
		return fmt.Errorf("couchdb: design document %s in %s: %w", id, db.name(kind), err)
	}
	return nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

func (s *wikiStore) path(id int64) string { return couchapi.Path(s.db.name(wikiKind), key(id)) }

// Populate implements wiki.Store: _bulk_docs of up to 500 articles or 8
// MiB. Each batch's ids are looked up first (POST _all_docs {keys}) and a
// batch naming an existing article is refused whole; batches written
// before it stay (CouchDB has no multi-document transaction), and two
// loads racing on the same ids are told apart only by _bulk_docs'
// per-document conflicts.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	c, err := wiki.PopulateBatches(src, wikiBatchRows, wikiBatchBytes, func(batch []wiki.Article) error {
		docs := make([]any, len(batch))
		ids := make([]string, len(batch))
		for i, a := range batch {
			ids[i] = key(a.ID)
			docs[i] = wikiDoc{ID: ids[i], Title: a.Title, Body: a.Body, Bytes: len(a.Body)}
		}
		have, err := s.db.allDocs(ctx, wikiKind, nil, ids)
		if err != nil {
			return err
		}
		for _, r := range have {
			if r.Error == "" && !r.Value.Deleted {
				return fmt.Errorf("article %s exists already: nothing of this batch was written", r.ID)
			}
		}
		return s.db.bulk(ctx, wikiKind, docs, false)
	})
	if err != nil {
		return c, fmt.Errorf("couchdb wiki: populate: %w", err)
	}
	return c, nil
}

func (s *wikiStore) get(ctx context.Context, id int64) (wikiDoc, error) {
	var d wikiDoc
	err := s.db.do(ctx, http.MethodGet, s.path(id), nil, nil, &d)
	if couchapi.IsNotFound(err) {
		return d, fmt.Errorf("couchdb wiki: article %d: %w", id, wiki.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("couchdb wiki: read %d: %w", id, err)
	}
	return d, nil
}

// Read implements wiki.Store: one GET.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	d, err := s.get(ctx, id)
	if err != nil {
		return wiki.Article{}, err
	}
	return wiki.Article{ID: id, Title: d.Title, Body: d.Body}, nil
}

// Update implements wiki.Store: GET for the revision and title, PUT with
// the new body, again on a conflict.
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	for range wikiRetries {
		d, err := s.get(ctx, id)
		if err != nil {
			return err
		}
		d.Body, d.Bytes = body, len(body)
		err = s.db.do(ctx, http.MethodPut, s.path(id), nil, d, nil)
		if err == nil {
			return nil
		}
		if !couchapi.IsConflict(err) {
			return fmt.Errorf("couchdb wiki: update %d: %w", id, err)
		}
	}
	return fmt.Errorf("couchdb wiki: update %d: still conflicting after %d tries", id, wikiRetries)
}

// Counts implements wiki.Store: doc_count, the bytes view's sum, and the
// last _all_docs key.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	var c wiki.Counts
	var err error
	if c.Articles, err = s.db.count(ctx, wikiKind); err != nil {
		return c, fmt.Errorf("couchdb wiki: counts: %w", err)
	}
	if c.Articles == 0 {
		return c, nil
	}
	var v struct {
		Rows []row[int64, struct{}] `json:"rows"`
	}
	if err := s.db.do(ctx, http.MethodGet, couchapi.Path(s.db.name(wikiKind))+"/"+wikiDesign+"/_view/bytes", nil, nil, &v); err != nil {
		return c, fmt.Errorf("couchdb wiki: counts: %w", err)
	}
	if len(v.Rows) > 0 {
		c.Bytes = v.Rows[0].Value
	}
	rows, err := s.db.allDocs(ctx, wikiKind, idRange(url.Values{"descending": {"true"}, "limit": {"1"}}, true), nil)
	if err != nil {
		return c, fmt.Errorf("couchdb wiki: counts: %w", err)
	}
	if len(rows) > 0 {
		c.MaxID, err = strconv.ParseInt(rows[0].ID, 10, 64)
		if err != nil {
			return c, fmt.Errorf("couchdb wiki: counts: last id %q: %w", rows[0].ID, err)
		}
	}
	return c, nil
}

// Reset implements wiki.Store: the database is deleted on every server and
// created again with its design document.
func (s *wikiStore) Reset(ctx context.Context) error {
	if err := s.db.drop(ctx, wikiKind); err != nil {
		return err
	}
	return s.db.putDesign(ctx, wikiKind, wikiDesignDoc)
}
