package couchdb

import (
	"context"
	"fmt"
	"net/url"

	"github.com/fieldbench/fieldbench/internal/jsondoc"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest: one database, <prefix>_ingest, one document per record, its _id
// the source, seq (10 digits each) and the record's id, so a source's
// records are neighbours in the primary index and two records of one
// (source, seq) from different seeds are two documents. Its fields are
// jsondoc.Ingest's, as couchbase's are: times in Unix microseconds.
//
// InsertBatch is one _bulk_docs request: CouchDB's bulk path. It returns
// when the server answered for every document and fails if any was
// refused; a batch is not atomic (CouchDB has no multi-document
// transaction: all_or_nothing is gone since 2.0), so a failed batch may
// leave part of it stored. Count is doc_count; Reset deletes the database
// on every server and creates it again.
const ingestKind = "ingest"

// ingestDoc is a record's document: its _id, then the fields every JSON
// document store writes alike (jsondoc.Ingest).
type ingestDoc struct {
	ID string `json:"_id"`
	jsondoc.Ingest
}

// ingestDocOf is r's document.
func ingestDocOf(r *ingest.Record) ingestDoc {
	return ingestDoc{ID: fmt.Sprintf("%010d:%010d:%s", r.Source, r.Seq, r.ID), Ingest: jsondoc.IngestOf(r)}
}

type ingestStore struct{ db *DB }

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend: the database is created when absent.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.ensure(ctx, ingestKind); err != nil {
		return nil, err
	}
	return &ingestStore{db: db}, nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store: one _bulk_docs request.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	docs := make([]any, len(recs))
	for i := range recs {
		docs[i] = ingestDocOf(&recs[i])
	}
	if err := s.db.bulk(ctx, ingestKind, docs, false); err != nil {
		return fmt.Errorf("couchdb ingest: insert %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store: doc_count.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	n, err := s.db.count(ctx, ingestKind)
	if err != nil {
		return 0, fmt.Errorf("couchdb ingest: count: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store.
func (s *ingestStore) Reset(ctx context.Context) error { return s.db.drop(ctx, ingestKind) }

// records reads every stored record back (tests).
func (s *ingestStore) records(ctx context.Context) ([]ingest.Record, error) {
	rows, err := allDocsInto[ingestDoc](ctx, s.db, ingestKind, url.Values{"include_docs": {"true"}}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]ingest.Record, 0, len(rows))
	for _, r := range rows {
		if r.Doc != nil {
			out = append(out, r.Doc.Record())
		}
	}
	return out, nil
}
