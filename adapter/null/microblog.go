package null

import (
	"context"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog implements microblog.Backend for every model.
func (db *DB) Microblog(_ context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, err
	}
	s := &mbStore{db: db, model: model}
	if model == microblog.Async {
		return mbAsync{s}, nil
	}
	return s, nil
}

// MicroblogModel implements microblog.Backend: the model last populated.
func (db *DB) MicroblogModel(context.Context) (microblog.Model, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mbModel, nil
}

// mbStore drops posts and returns empty userlines and timelines.
type mbStore struct {
	db    *DB
	model microblog.Model
}

func (s *mbStore) Populate(_ context.Context, ds *microblog.Dataset) error {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.mbModel = s.model
	s.db.mbCounts = microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	var top int64
	for _, t := range ds.Tweets {
		top = max(top, t.ID)
	}
	s.db.maxTweet.Store(top)
	return nil
}

func (s *mbStore) Counts(context.Context) (microblog.Counts, error) {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	return s.db.mbCounts, nil
}

func (s *mbStore) Post(context.Context, microblog.Tweet) error { return nil }

func (s *mbStore) Userline(context.Context, int64, int) ([]microblog.Tweet, error) { return nil, nil }

func (s *mbStore) Timeline(context.Context, int64, int) ([]microblog.Tweet, error) { return nil, nil }

func (s *mbStore) MaxTweetID(context.Context) (int64, error) { return s.db.maxTweet.Load(), nil }

func (s *mbStore) Close() error { return nil }

// mbAsync is the async model's store: its materializer has nothing to do.
type mbAsync struct{ *mbStore }

func (mbAsync) MaterializeOnce(context.Context) ([]microblog.Materialized, error) { return nil, nil }
