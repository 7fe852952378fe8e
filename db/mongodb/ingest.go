package mongodb

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/db/internal/ingestdoc"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// The ingest family's collection: one document per record (ingestdoc.Doc,
// as rethinkdb stores it too), the study's 36
// character id as _id (the collection's only index, as the study's stores
// had only their key), the times as Unix microseconds in int64 (a BSON
// date keeps only milliseconds, and the records have microseconds).
const ingestRecords = "ingest_records"

type ingestStore struct{ db *DB }

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.ensureIndexes(ctx, ingestRecords); err != nil {
		return nil, err
	}
	return &ingestStore{db: db}, nil
}

// Close implements ingest.Store.
func (s *ingestStore) Close() error { return nil }

// InsertBatch implements ingest.Store: one unordered insertMany command
// (ingest=insertmany, the default) or one unordered bulkWrite of insertOne
// models (ingest=bulkwrite), acknowledged with the DSN's write concern (the
// server's default unless the DSN sets w= or journal=).
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	coll := s.db.c(ingestRecords)
	var err error
	if s.db.cfg.Ingest == BulkWrite {
		models := make([]mongo.WriteModel, len(recs))
		for i := range recs {
			models[i] = mongo.NewInsertOneModel().SetDocument(ingestdoc.Of(&recs[i]))
		}
		_, err = coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	} else {
		docs := make([]any, len(recs))
		for i := range recs {
			docs[i] = ingestdoc.Of(&recs[i])
		}
		_, err = coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	}
	if err != nil {
		return fmt.Errorf("mongodb ingest: insert %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store (an exact count, not the collection's
// metadata estimate).
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	n, err := s.db.c(ingestRecords).CountDocuments(ctx, bson.D{})
	if err != nil {
		return 0, fmt.Errorf("mongodb ingest: count: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store: the collection is dropped and created
// again empty.
func (s *ingestStore) Reset(ctx context.Context) error {
	if err := s.db.c(ingestRecords).Drop(ctx); err != nil {
		return fmt.Errorf("mongodb ingest: reset: %w", err)
	}
	s.db.forget(ingestRecords)
	return s.db.ensureIndexes(ctx, ingestRecords)
}

// StoredRecords reads every stored record back (for tests that check what
// was stored, not only how much).
func (db *DB) StoredRecords(ctx context.Context) ([]ingest.Record, error) {
	cur, err := db.c(ingestRecords).Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("mongodb ingest: read back: %w", err)
	}
	var docs []ingestdoc.Doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("mongodb ingest: read back: %w", err)
	}
	out := make([]ingest.Record, len(docs))
	for i, d := range docs {
		out[i] = d.Record()
	}
	return out, nil
}
