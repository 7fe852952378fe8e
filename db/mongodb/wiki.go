package mongodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The wiki family's collection: one document per article, {_id: id as a
// decimal string, title, body, bytes}. The _id is a string because
// FerretDB looks up its _id index only for a string or ObjectId _id (an
// integer _id is a scan of every article there); MongoDB indexes either. The body is BSON binary, so that any bytes a dump
// holds round-trip and bytes counts them as wiki.Counts wants; a read is a
// findOne by _id (the collection's own index), an update an updateOne by
// _id that sets body and bytes. A document may hold at most 16 MiB: the
// largest Wikipedia article is far below.
const wikiArticles = "wiki_articles"

// wikiPopulateBytes bounds one insertMany of Populate (the server's
// message limit is 48 MB).
const wikiPopulateBytes = 8 << 20

type wikiStore struct{ db *DB }

var _ wiki.Store = (*wikiStore)(nil)

// Wiki implements wiki.Backend.
func (db *DB) Wiki(ctx context.Context) (wiki.Store, error) {
	if err := db.ensureIndexes(ctx, wikiArticles); err != nil {
		return nil, err
	}
	return &wikiStore{db: db}, nil
}

// Close implements wiki.Store.
func (s *wikiStore) Close() error { return nil }

type articleDoc struct {
	ID    string `bson:"_id"`
	Title string `bson:"title"`
	Body  []byte `bson:"body"`
	Bytes int64  `bson:"bytes"`
}

func wikiID(id int64) string { return strconv.FormatInt(id, 10) }

// Populate implements wiki.Store: unordered insertMany commands of at most
// the DSN's batch= articles or 8 MiB of text. A load that fails (an id
// already stored) deletes what it had inserted, so it keeps nothing: there
// is no transaction to roll back (FerretDB has none; MongoDB has them only
// on replica sets), and a reader can see those articles until then.
func (s *wikiStore) Populate(ctx context.Context, src wiki.Source) (wiki.Counts, error) {
	var inserted []string
	c, err := wiki.PopulateBatches(src, s.db.cfg.Batch, wikiPopulateBytes, func(as []wiki.Article) error {
		docs := make([]any, len(as))
		for i, a := range as {
			docs[i] = articleDoc{ID: wikiID(a.ID), Title: a.Title, Body: []byte(a.Body), Bytes: int64(len(a.Body))}
		}
		_, err := s.db.c(wikiArticles).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
		failed := map[int]bool{}
		var bwe mongo.BulkWriteException
		if errors.As(err, &bwe) {
			for _, we := range bwe.WriteErrors {
				failed[we.Index] = true
			}
		}
		if err == nil || len(failed) > 0 {
			for i, a := range as {
				if !failed[i] {
					inserted = append(inserted, wikiID(a.ID))
				}
			}
		}
		return err
	})
	if err != nil {
		for i := 0; i < len(inserted); i += s.db.cfg.Batch {
			ids := inserted[i:min(i+s.db.cfg.Batch, len(inserted))]
			if _, derr := s.db.c(wikiArticles).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}); derr != nil {
				return wiki.Counts{}, fmt.Errorf("mongodb wiki: populate: %w (and deleting the %d articles it inserted: %w)", err, len(inserted), derr)
			}
		}
		return wiki.Counts{}, fmt.Errorf("mongodb wiki: populate (nothing kept): %w", err)
	}
	return c, nil
}

// Read implements wiki.Store.
func (s *wikiStore) Read(ctx context.Context, id int64) (wiki.Article, error) {
	var d articleDoc
	err := s.db.c(wikiArticles).FindOne(ctx, bson.D{{Key: "_id", Value: wikiID(id)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return wiki.Article{}, fmt.Errorf("mongodb wiki: read %d: %w", id, wiki.ErrNotFound)
	}
	if err != nil {
		return wiki.Article{}, fmt.Errorf("mongodb wiki: read %d: %w", id, err)
	}
	return wiki.Article{ID: id, Title: d.Title, Body: string(d.Body)}, nil
}

// Update implements wiki.Store: updateOne by _id ($set never creates a
// missing article).
func (s *wikiStore) Update(ctx context.Context, id int64, body string) error {
	r, err := s.db.c(wikiArticles).UpdateOne(ctx, bson.D{{Key: "_id", Value: wikiID(id)}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "body", Value: []byte(body)}, {Key: "bytes", Value: int64(len(body))}}}})
	if err != nil {
		return fmt.Errorf("mongodb wiki: update %d: %w", id, err)
	}
	if r.MatchedCount == 0 {
		return fmt.Errorf("mongodb wiki: update %d: %w", id, wiki.ErrNotFound)
	}
	return nil
}

// Counts implements wiki.Store by reading every article's _id and bytes
// (not its body) and adding them up on the client: FerretDB implements no
// $max accumulator and its $sum of a field gave 0 here, and Counts runs
// only before and after a load.
func (s *wikiStore) Counts(ctx context.Context) (wiki.Counts, error) {
	cur, err := s.db.c(wikiArticles).Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "bytes", Value: 1}}))
	if err != nil {
		return wiki.Counts{}, fmt.Errorf("mongodb wiki: counts: %w", err)
	}
	defer cur.Close(ctx)
	var c wiki.Counts
	for cur.Next(ctx) {
		var d struct {
			ID    string `bson:"_id"`
			Bytes int64  `bson:"bytes"`
		}
		if err := cur.Decode(&d); err != nil {
			return wiki.Counts{}, fmt.Errorf("mongodb wiki: counts: %w", err)
		}
		id, err := strconv.ParseInt(d.ID, 10, 64)
		if err != nil {
			return wiki.Counts{}, fmt.Errorf("mongodb wiki: counts: article _id %q is not a number", d.ID)
		}
		c.Articles++
		c.Bytes += d.Bytes
		c.MaxID = max(c.MaxID, id)
	}
	if err := cur.Err(); err != nil {
		return wiki.Counts{}, fmt.Errorf("mongodb wiki: counts: %w", err)
	}
	return c, nil
}

// Reset implements wiki.Store: the collection is dropped (and created
// again by the next use).
func (s *wikiStore) Reset(ctx context.Context) error {
	if err := s.db.c(wikiArticles).Drop(ctx); err != nil {
		return fmt.Errorf("mongodb wiki: reset: %w", err)
	}
	s.db.forget(wikiArticles)
	return s.db.ensureIndexes(ctx, wikiArticles)
}
