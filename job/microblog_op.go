package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func (j *microblogJob) runOp(ctx context.Context, env *Env, op string) error {
	if j.db == "" {
		return Usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/mb.db")
	}
	if j.user < 1 {
		return Usagef("op %s needs --user (a user id from 1)", op)
	}
	if len([]rune(j.body)) > 140 {
		return Usagef("--body has %d characters; a tweet has at most 140", len([]rune(j.body)))
	}
	_, db, err := openExistingDB(ctx, j.db, microblog.Name, "microblog data")
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := microblogBackend(db, j.db)
	if err != nil {
		return err
	}
	model, err := b.MicroblogModel(ctx)
	if err != nil {
		return err
	}
	if model == "" {
		return Usagef("%s holds no microblog data: load it first with 'fieldbench load microblog --db %s'", redact.DSN(j.db), redact.DSN(j.db))
	}
	store, err := b.Microblog(ctx, model)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := j.setReads(store, model); err != nil {
		return err
	}
	counts, err := store.Counts(ctx)
	if err != nil {
		return err
	}
	if j.user > counts.Users {
		return Usagef("--user %d does not exist (the database has users 1..%d)", j.user, counts.Users)
	}
	var tweets []microblog.Tweet
	switch op {
	case "timeline":
		tweets, err = store.Timeline(ctx, j.user, microblog.Limit)
	case "userline":
		tweets, err = store.Userline(ctx, j.user, microblog.Limit)
	case "post":
		var t microblog.Tweet
		t, err = postOne(ctx, store, j.user, j.body)
		tweets = []microblog.Tweet{t}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	enc := json.NewEncoder(env.Stdout)
	for _, t := range tweets {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return nil
}

func postOne(ctx context.Context, store microblog.Store, user int64, body string) (microblog.Tweet, error) {
	if body == "" {
		body = microblog.RandomBody(newRand(time.Now().UnixNano()))
	}
	id := microblog.NewTweetIDs(microblog.RandomIDSource()).Next()
	t := microblog.Tweet{ID: id, Author: user, Time: time.Now().UTC().Truncate(time.Microsecond), Body: body}
	if err := store.Post(ctx, t); err != nil {
		return t, err
	}
	if m, ok := store.(microblog.Materializer); ok {
		if err := microblog.CatchUp(ctx, m, nil); err != nil {
			return t, err
		}
	}
	return t, nil
}
