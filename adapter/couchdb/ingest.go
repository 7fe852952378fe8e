package couchdb

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest: one database, <prefix>_ingest, one document per record, its _id
// the source, seq (10 digits each) and the record's id, so a source's
// records are neighbours in the primary index and two records of one
// (source, seq) from different seeds are two documents. Times are Unix
// microseconds (JSON numbers are exact up to 2^53, far beyond them).
//
// InsertBatch is one _bulk_docs request: CouchDB's bulk path. It returns
// when the server answered for every document and fails if any was
// refused; a batch is not atomic (CouchDB has no multi-document
// transaction: all_or_nothing is gone since 2.0), so a failed batch may
// leave part of it stored. Count is doc_count; Reset deletes the database
// on every server and creates it again.
const ingestKind = "ingest"

type ingestDoc struct {
	ID         string  `json:"_id"`
	Rec        string  `json:"id"`
	Source     int32   `json:"source"`
	Seq        int32   `json:"seq"`
	Channel    int32   `json:"channel"`
	MeasuredUS int64   `json:"measured_us"`
	Tag        string  `json:"tag"`
	Quality    int32   `json:"quality"`
	Value      float64 `json:"value"`
	RecordedUS int64   `json:"recorded_us"`
}

// ingestDocOf is r's document.
func ingestDocOf(r *ingest.Record) ingestDoc {
	return ingestDoc{ID: fmt.Sprintf("%010d:%010d:%s", r.Source, r.Seq, r.ID), Rec: r.ID, Source: r.Source, Seq: r.Seq,
		Channel: r.Channel, MeasuredUS: r.MeasuredAt.UnixMicro(), Tag: r.Tag, Quality: r.Quality, Value: r.Value,
		RecordedUS: r.RecordedAt.UnixMicro()}
}

func (d ingestDoc) record() ingest.Record {
	return ingest.Record{ID: d.Rec, Source: d.Source, Seq: d.Seq, Channel: d.Channel,
		MeasuredAt: time.UnixMicro(d.MeasuredUS).UTC(), Tag: d.Tag, Quality: d.Quality, Value: d.Value,
		RecordedAt: time.UnixMicro(d.RecordedUS).UTC()}
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
			out = append(out, r.Doc.record())
		}
	}
	return out, nil
}
