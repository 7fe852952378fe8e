package hbase

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog, denormalized model only (the study's HBase-like fan-out on
// write). Every id is 16 hex digits (fixed width, so keys sort by value);
// "rev" is math.MaxInt64 minus a value, in 16 hex digits, so the newest
// sorts first.
//
//	mb_meta     row "meta": m:model, m:users, m:follows
//	mb_tweets   row rev(id): t:a author, t:t time (µs), t:b body — the
//	            first row is the largest id (MaxTweetID is a 1-row scan)
//	mb_follows  row followee: one column f:<follower> per follower
//	mb_lines    row "U" user rev(µs) rev(id) author: l:b body (userline)
//	            row "T" user rev(µs) rev(id) author: l:b body (timeline)
//
// A userline or timeline read is one prefix scan of at most limit rows,
// newest first by (time, id) as the workload orders them. Post reads the
// author's followers row, creates the tweet row with a check-and-put that
// refuses an existing id, then writes the userline row and one timeline row
// per follower in one multi-row put (rows atomic, the batch not).
//
// The normalized and async models wrap adapter.ErrUnsupported.
const (
	mbMeta    = "mb_meta"
	mbTweets  = "mb_tweets"
	mbFollows = "mb_follows"
	mbLines   = "mb_lines"
)

var mbTables = []struct{ name, family string }{
	{mbMeta, "m"}, {mbTweets, "t"}, {mbFollows, "f"}, {mbLines, "l"},
}

func hex16(v int64) string { return fmt.Sprintf("%016x", v) }
func rev16(v int64) string { return hex16(math.MaxInt64 - v) }

func lineKey(kind byte, user int64, t microblog.Tweet) string {
	return string(kind) + hex16(user) + rev16(t.Time.UnixMicro()) + rev16(t.ID) + hex16(t.Author)
}

type mbStore struct{ db *DB }

// Microblog implements microblog.Backend.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if model != microblog.Denormalized {
		return nil, fmt.Errorf("hbase: microblog model %s: %w (only denormalized)", model, adapter.ErrUnsupported)
	}
	for _, t := range mbTables {
		if err := db.ensureTable(ctx, t.name, t.family); err != nil {
			return nil, err
		}
	}
	have, err := db.MicroblogModel(ctx)
	if err != nil {
		return nil, err
	}
	if have != "" && have != model {
		return nil, fmt.Errorf("hbase: the database holds the %s microblog model; use a fresh database for %s", have, model)
	}
	return &mbStore{db: db}, nil
}

// MicroblogModel implements microblog.Backend: the model Populate recorded.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	if ok, err := db.tableExists(ctx, mbMeta); err != nil || !ok {
		return "", err
	}
	r, ok, err := db.getRow(ctx, mbMeta, "meta", "m:model")
	if err != nil || !ok {
		return "", err
	}
	v, _ := r.get("m:model")
	return microblog.Model(v), nil
}

// Close implements microblog.Store.
func (s *mbStore) Close() error { return nil }

// Populate implements microblog.Store.
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return errors.New("hbase: populate: nil dataset")
	}
	if m, err := s.db.MicroblogModel(ctx); err != nil {
		return err
	} else if m != "" {
		return fmt.Errorf("hbase: populate: the database already holds microblog data; use a fresh database")
	}
	followers := map[int64][]cell{}
	for _, f := range ds.Follows {
		followers[f.Followee] = append(followers[f.Followee], cell{Column: []byte("f:" + hex16(f.Follower)), Value: []byte{}})
	}
	var rows []row
	flush := func(table string, force bool) error {
		if len(rows) >= 1000 || (force && len(rows) > 0) {
			err := s.db.putRows(ctx, table, rows)
			rows = rows[:0]
			return err
		}
		return nil
	}
	for u, cs := range followers {
		rows = append(rows, row{Key: []byte(hex16(u)), Cells: cs})
		if err := flush(mbFollows, false); err != nil {
			return err
		}
	}
	if err := flush(mbFollows, true); err != nil {
		return err
	}
	for _, t := range ds.Tweets {
		rows = append(rows, tweetRow(t))
		if err := flush(mbTweets, false); err != nil {
			return err
		}
	}
	if err := flush(mbTweets, true); err != nil {
		return err
	}
	for _, t := range ds.Tweets {
		rows = append(rows, row{Key: []byte(lineKey('U', t.Author, t)), Cells: []cell{{Column: []byte("l:b"), Value: []byte(t.Body)}}})
		for _, f := range followers[t.Author] {
			u, _ := strconv.ParseInt(string(f.Column[2:]), 16, 64)
			rows = append(rows, row{Key: []byte(lineKey('T', u, t)), Cells: []cell{{Column: []byte("l:b"), Value: []byte(t.Body)}}})
		}
		if err := flush(mbLines, false); err != nil {
			return err
		}
	}
	if err := flush(mbLines, true); err != nil {
		return err
	}
	// The model last: a failed load leaves no model, Counts stays honest.
	return s.db.putRows(ctx, mbMeta, []row{{Key: []byte("meta"), Cells: []cell{
		{Column: []byte("m:model"), Value: []byte(microblog.Denormalized)},
		{Column: []byte("m:users"), Value: []byte(strconv.Itoa(ds.Users))},
		{Column: []byte("m:follows"), Value: []byte(strconv.Itoa(len(ds.Follows)))},
	}}})
}

func tweetRow(t microblog.Tweet) row {
	return row{Key: []byte(rev16(t.ID)), Cells: []cell{
		{Column: []byte("t:a"), Value: []byte(hex16(t.Author))},
		{Column: []byte("t:t"), Value: strconv.AppendInt(nil, t.Time.UnixMicro(), 10)},
		{Column: []byte("t:b"), Value: []byte(t.Body)},
	}}
}

// Counts implements microblog.Store.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	r, ok, err := s.db.getRow(ctx, mbMeta, "meta", "m:users", "m:follows")
	if err != nil {
		return c, err
	}
	if ok {
		v, _ := r.get("m:users")
		c.Users, _ = strconv.ParseInt(string(v), 10, 64)
		v, _ = r.get("m:follows")
		c.Follows, _ = strconv.ParseInt(string(v), 10, 64)
	}
	err = s.db.scan(ctx, mbTweets, scanSpec{Filter: `{"type":"FirstKeyOnlyFilter"}`, Batch: 10000}, func(row) error {
		c.Tweets++
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("hbase: count tweets: %w", err)
	}
	return c, nil
}

// MaxTweetID implements microblog.Store: the first row of mb_tweets.
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.scan(ctx, mbTweets, scanSpec{Filter: `{"type":"FirstKeyOnlyFilter"}`, Batch: 1, Limit: 1}, func(r row) error {
		v, err := strconv.ParseInt(string(r.Key), 16, 64)
		id = math.MaxInt64 - v
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("hbase: max tweet id: %w", err)
	}
	return id, nil
}

// Post implements microblog.Store.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	fr, _, err := s.db.getRow(ctx, mbFollows, hex16(t.Author))
	if err != nil {
		return err
	}
	tr := tweetRow(t)
	ok, err := s.db.checkPut(ctx, mbTweets, string(tr.Key), tr.Cells, cell{Column: []byte("t:a"), Value: []byte{}})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("hbase: post tweet %d: the id exists already", t.ID)
	}
	rows := []row{{Key: []byte(lineKey('U', t.Author, t)), Cells: []cell{{Column: []byte("l:b"), Value: []byte(t.Body)}}}}
	for _, f := range fr.Cells {
		u, err := strconv.ParseInt(string(f.Column[2:]), 16, 64)
		if err != nil {
			return fmt.Errorf("hbase: follower column %q: %w", f.Column, err)
		}
		rows = append(rows, row{Key: []byte(lineKey('T', u, t)), Cells: []cell{{Column: []byte("l:b"), Value: []byte(t.Body)}}})
	}
	return s.db.putRows(ctx, mbLines, rows)
}

// Userline implements microblog.Store.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.line(ctx, 'U', user, limit)
}

// Timeline implements microblog.Store.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.line(ctx, 'T', user, limit)
}

func (s *mbStore) line(ctx context.Context, kind byte, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	prefix := string(kind) + hex16(user)
	out := make([]microblog.Tweet, 0, limit)
	err := s.db.scan(ctx, mbLines, scanSpec{Start: prefix, End: prefix + "~", Batch: limit, Limit: limit}, func(r row) error {
		k := string(r.Key)
		if len(k) != 1+4*16 {
			return fmt.Errorf("hbase: line row key %q", k)
		}
		rt, err1 := strconv.ParseInt(k[17:33], 16, 64)
		rid, err2 := strconv.ParseInt(k[33:49], 16, 64)
		au, err3 := strconv.ParseInt(k[49:65], 16, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("hbase: line row key %q: %w", k, err)
		}
		b, _ := r.get("l:b")
		out = append(out, microblog.Tweet{ID: math.MaxInt64 - rid, Author: au, Time: time.UnixMicro(math.MaxInt64 - rt).UTC(), Body: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hbase: read line of user %d: %w", user, err)
	}
	return out, nil
}
