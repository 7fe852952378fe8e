package couchbase

import (
	"context"
	"fmt"

	"github.com/couchbase/gocb/v2"

	"github.com/fieldbench/fieldbench/internal/jsondoc"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest: one JSON document per record, its key PREFIX:i:SOURCE:SEQ:ID
// (source and seq in 10 digits), so two records of one (source, seq) from
// different seeds are two documents and a batch sent twice stores each
// record once. Its fields are jsondoc.Ingest's, as couchdb's are: times
// in Unix microseconds.
//
// InsertBatch is one bulk request of upserts (the SDK sends them pipelined
// to the node owning each key's vBucket) and returns once every one was
// acknowledged; with persist_to/replicate_to or a durability level, one
// upsert per record that waits for it, 32 in flight. A batch is not
// atomic: Couchbase has no multi-document transaction outside its
// transactions library, so a failed batch may leave part of it stored.
// Count is the _count of the view "ingest" (stale=false waits for the
// index to hold every acknowledged write); Reset removes the documents the
// view lists.

// ingestDoc is a record's document: the prefix and kind the views test,
// then the fields every JSON document store writes alike (jsondoc.Ingest).
type ingestDoc struct {
	FB string `json:"fb"`
	K  string `json:"k"`
	jsondoc.Ingest
}

// ingestDocOf is r's document under prefix.
func ingestDocOf(prefix string, r *ingest.Record) ingestDoc {
	return ingestDoc{FB: prefix, K: kindIngest, Ingest: jsondoc.IngestOf(r)}
}

type ingestStore struct{ db *DB }

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend: the design document is written when
// absent.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.ensureDesign(ctx); err != nil {
		return nil, err
	}
	return &ingestStore{db: db}, nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	keys := make([]string, len(recs))
	docs := make([]any, len(recs))
	for i := range recs {
		r := &recs[i]
		keys[i] = s.db.key(kindIngest, fmt.Sprintf("%010d:%010d:%s", r.Source, r.Seq, r.ID))
		docs[i] = ingestDocOf(s.db.cfg.Prefix, r)
	}
	if err := s.db.writeAll(ctx, keys, docs); err != nil {
		return fmt.Errorf("couchbase ingest: insert %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	n, err := s.db.count(ctx, viewIngest)
	if err != nil {
		return 0, fmt.Errorf("couchbase ingest: count: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store.
func (s *ingestStore) Reset(ctx context.Context) error {
	if err := s.db.removeView(ctx, viewIngest); err != nil {
		return fmt.Errorf("couchbase ingest: reset: %w", err)
	}
	return nil
}

// StoredRecords reads every stored record back (tests): the view lists
// the keys, a bulk get fetches the documents.
func (db *DB) StoredRecords(ctx context.Context) ([]ingest.Record, error) {
	rows, err := db.query(ctx, viewIngest, gocb.ViewOptions{})
	if err != nil {
		return nil, err
	}
	ops := make([]gocb.BulkOp, len(rows))
	for i, r := range rows {
		ops[i] = &gocb.GetOp{ID: r.ID}
	}
	if err := db.doBulk(ctx, ops); err != nil {
		return nil, fmt.Errorf("couchbase: get: %w", err)
	}
	out := make([]ingest.Record, 0, len(ops))
	for _, o := range ops {
		g := o.(*gocb.GetOp)
		if g.Err != nil {
			return nil, fmt.Errorf("couchbase: get %s: %w", g.ID, g.Err)
		}
		var d ingestDoc
		if err := g.Result.Content(&d); err != nil {
			return nil, fmt.Errorf("couchbase: %s: %w", g.ID, err)
		}
		out = append(out, d.Record())
	}
	return out, nil
}
