package hbase

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog in the study's three models. Every id is 16 hex digits (fixed
// width, so keys sort by value); "rev" is math.MaxInt64 minus a value, in
// 16 hex digits, so the newest sorts first.
//
//	mb_meta     row "meta": m:model, m:users, m:follows
//	mb_tweets   row rev(id): t:a author, t:t time (µs), t:b body — the
//	            first row is the largest id (MaxTweetID is a 1-row scan)
//	mb_follows  row followee: one column f:<follower> per follower
//	mb_lines    row "U" user rev(µs) rev(id) author (userline)
//	            row "T" user rev(µs) rev(id) author (timeline)
//	            l:b body (denormalized, async) or l:i empty (normalized)
//	mb_pending  row id (async only): p:a author, p:t time (µs), p:b body
//
// A userline or timeline read is one prefix scan of at most limit rows,
// newest first by (time, id) as the workload orders them; the key holds the
// tweet's time, id and author. Post reads the author's followers row,
// creates the tweet row with a check-and-put that refuses an existing id,
// then writes rows in one multi-row put (rows atomic, the batch not):
//
//   - denormalized: the userline row and one timeline row per follower,
//     each with the body;
//   - normalized: the same rows without bodies; a read fetches the bodies
//     of the rows it found from mb_tweets in one multi-get (the gateway's
//     /multiget);
//   - async: the userline row (with body) and one mb_pending row; the
//     followers are not read. MaterializeOnce scans up to materializeBatch
//     pending rows, reads their authors' follower rows in one multi-get,
//     puts one timeline row per follower, and only then deletes the
//     pending rows (one DELETE each, the gateway has no multi-row delete):
//     a pass that fails leaves them pending, and redoing one is harmless
//     (the same timeline row is put again).
const (
	mbMeta    = "mb_meta"
	mbTweets  = "mb_tweets"
	mbFollows = "mb_follows"
	mbLines   = "mb_lines"
	mbPending = "mb_pending"
	// materializeBatch is the most pending tweets one MaterializeOnce fans
	// out.
	materializeBatch = 512
	// mbDeleters bounds the concurrent DELETEs of a materializer pass.
	mbDeleters = 16
)

var mbTables = []struct{ name, family string }{
	{mbMeta, "m"}, {mbTweets, "t"}, {mbFollows, "f"}, {mbLines, "l"}, {mbPending, "p"},
}

func hex16(v int64) string { return fmt.Sprintf("%016x", v) }
func rev16(v int64) string { return hex16(math.MaxInt64 - v) }

func lineKey(kind byte, user int64, t microblog.Tweet) string {
	return string(kind) + hex16(user) + rev16(t.Time.UnixMicro()) + rev16(t.ID) + hex16(t.Author)
}

type mbStore struct {
	db    *DB
	model microblog.Model
	reads microblog.BodyReads // how normalized lines fetch bodies ("" = in)
}

var _ microblog.BodyReader = (*mbStore)(nil)

// SetBodyReads implements microblog.BodyReader: in, one multi-get of the
// gateway for a line's bodies; separate, one GET per tweet, all in flight
// at once (the microblog study's up to 50 extra reads).
func (s *mbStore) SetBodyReads(r microblog.BodyReads) { s.reads = r }

// mbAsync is the async model's store: the only one that materializes.
type mbAsync struct {
	*mbStore
	mu sync.Mutex // one MaterializeOnce at a time
}

var (
	_ microblog.Store        = (*mbStore)(nil)
	_ microblog.Materializer = (*mbAsync)(nil)
)

// Microblog implements microblog.Backend.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("hbase: %w: %w", err, adapter.ErrUnsupported)
	}
	for _, t := range mbTables {
		if err := db.ensureTable(ctx, t.name, t.family); err != nil {
			return nil, err
		}
	}
	if err := microblog.CheckLoaded(ctx, db, "hbase", model, "database"); err != nil {
		return nil, err
	}
	st := &mbStore{db: db, model: model}
	if model == microblog.Async {
		return &mbAsync{mbStore: st}, nil
	}
	return st, nil
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
	if err := s.load(ctx, ds, microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}, s.db.putRows); err != nil {
		return err
	}
	// The model last: a failed load leaves no model, Counts stays honest.
	return s.db.putRows(ctx, mbMeta, []row{{Key: []byte("meta"), Cells: []cell{
		{Column: []byte("m:model"), Value: []byte(s.model)},
		{Column: []byte("m:users"), Value: []byte(strconv.Itoa(ds.Users))},
		{Column: []byte("m:follows"), Value: []byte(strconv.Itoa(len(ds.Follows)))},
	}}})
}

// load writes part's follower rows (of its followees), tweet rows and
// userline rows (of its authors) and the timeline rows its tweets make, in
// multi-row puts of up to 1000 rows through put. Every row is a put of a
// fixed key, so parts loaded at the same time never undo each other and a
// put done twice is harmless.
func (s *mbStore) load(ctx context.Context, ds *microblog.Dataset, part microblog.Part, put func(ctx context.Context, table string, rows []row) error) error {
	followers := map[int64][]cell{}
	for _, f := range ds.Follows {
		followers[f.Followee] = append(followers[f.Followee], cell{Column: []byte("f:" + hex16(f.Follower)), Value: []byte{}})
	}
	var rows []row
	flush := func(table string, force bool) error {
		if len(rows) >= 1000 || (force && len(rows) > 0) {
			err := put(ctx, table, rows)
			rows = rows[:0]
			return err
		}
		return nil
	}
	for u, cs := range followers {
		if !part.Holds(u) {
			continue
		}
		rows = append(rows, row{Key: []byte(hex16(u)), Cells: cs})
		if err := flush(mbFollows, false); err != nil {
			return err
		}
	}
	if err := flush(mbFollows, true); err != nil {
		return err
	}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		rows = append(rows, tweetRow(t))
		if err := flush(mbTweets, false); err != nil {
			return err
		}
	}
	if err := flush(mbTweets, true); err != nil {
		return err
	}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		rows = append(rows, s.lineRow('U', t.Author, t))
		for _, f := range followers[t.Author] {
			u, _ := strconv.ParseInt(string(f.Column[2:]), 16, 64)
			rows = append(rows, s.lineRow('T', u, t))
		}
		if err := flush(mbLines, false); err != nil {
			return err
		}
	}
	if err := flush(mbLines, true); err != nil {
		return err
	}
	return nil
}

// lineRow is t's row in the userline (kind U) or timeline (kind T) of
// user: with the body, except in the normalized model.
func (s *mbStore) lineRow(kind byte, user int64, t microblog.Tweet) row {
	c := cell{Column: []byte("l:b"), Value: []byte(t.Body)}
	if s.model == microblog.Normalized {
		c = cell{Column: []byte("l:i"), Value: []byte{}}
	}
	return row{Key: []byte(lineKey(kind, user, t)), Cells: []cell{c}}
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
	var fr row
	if s.model != microblog.Async {
		var err error
		if fr, _, err = s.db.getRow(ctx, mbFollows, hex16(t.Author)); err != nil {
			return err
		}
	}
	tr := tweetRow(t)
	ok, err := s.db.checkPut(ctx, mbTweets, string(tr.Key), tr.Cells, cell{Column: []byte("t:a"), Value: []byte{}})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("hbase: post tweet %d: the id exists already", t.ID)
	}
	if s.model == microblog.Async {
		if err := s.db.putRows(ctx, mbPending, []row{{Key: []byte(hex16(t.ID)), Cells: []cell{
			{Column: []byte("p:a"), Value: []byte(hex16(t.Author))},
			{Column: []byte("p:t"), Value: strconv.AppendInt(nil, t.Time.UnixMicro(), 10)},
			{Column: []byte("p:b"), Value: []byte(t.Body)},
		}}}); err != nil {
			return err
		}
		return s.db.putRows(ctx, mbLines, []row{s.lineRow('U', t.Author, t)})
	}
	rows := []row{s.lineRow('U', t.Author, t)}
	for _, f := range fr.Cells {
		u, err := strconv.ParseInt(string(f.Column[2:]), 16, 64)
		if err != nil {
			return fmt.Errorf("hbase: follower column %q: %w", f.Column, err)
		}
		rows = append(rows, s.lineRow('T', u, t))
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
	if s.model == microblog.Normalized && len(out) > 0 {
		if err := s.bodies(ctx, out); err != nil {
			return nil, fmt.Errorf("hbase: read line of user %d: %w", user, err)
		}
	}
	return out, nil
}

// bodies fills in the bodies of ts from mb_tweets: with one multi-get, or
// with one GET per tweet, all at once, under BodyReadsSeparate.
func (s *mbStore) bodies(ctx context.Context, ts []microblog.Tweet) error {
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = rev16(t.ID)
	}
	var rows map[string]row
	if s.reads == microblog.BodyReadsSeparate {
		found := make([]row, len(keys))
		ok := make([]bool, len(keys))
		g, gctx := errgroup.WithContext(ctx)
		for i, k := range keys {
			g.Go(func() error {
				var err error
				found[i], ok[i], err = s.db.getRow(gctx, mbTweets, k, "t:b")
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		rows = make(map[string]row, len(keys))
		for i, k := range keys {
			if ok[i] {
				rows[k] = found[i]
			}
		}
	} else {
		var err error
		if rows, err = s.db.getRows(ctx, mbTweets, keys); err != nil {
			return err
		}
	}
	for i := range ts {
		r, ok := rows[keys[i]]
		b, ok2 := r.get("t:b")
		if !ok || !ok2 {
			return fmt.Errorf("tweet %d is in a line but not in %s", ts[i].ID, mbTweets)
		}
		ts[i].Body = string(b)
	}
	return nil
}

// MaterializeOnce implements microblog.Materializer (async model).
func (s *mbAsync) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tweets []microblog.Tweet
	err := s.db.scan(ctx, mbPending, scanSpec{Batch: 3 * materializeBatch, Limit: materializeBatch}, func(r row) error {
		id, err := strconv.ParseInt(string(r.Key), 16, 64)
		if err != nil {
			return fmt.Errorf("pending row key %q: %w", r.Key, err)
		}
		a, _ := r.get("p:a")
		ts, _ := r.get("p:t")
		b, _ := r.get("p:b")
		author, err1 := strconv.ParseInt(string(a), 16, 64)
		us, err2 := strconv.ParseInt(string(ts), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("pending tweet %d: %w", id, err)
		}
		tweets = append(tweets, microblog.Tweet{ID: id, Author: author, Time: time.UnixMicro(us).UTC(), Body: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hbase async: read pending: %w", err)
	}
	if len(tweets) == 0 {
		return nil, nil
	}
	var authors []string
	seen := map[string]bool{}
	for _, t := range tweets {
		if k := hex16(t.Author); !seen[k] {
			seen[k] = true
			authors = append(authors, k)
		}
	}
	followers, err := s.db.getRows(ctx, mbFollows, authors)
	if err != nil {
		return nil, fmt.Errorf("hbase async: read followers: %w", err)
	}
	var rows []row
	flush := func(force bool) error {
		if len(rows) >= 1000 || (force && len(rows) > 0) {
			err := s.db.putRows(ctx, mbLines, rows)
			rows = rows[:0]
			return err
		}
		return nil
	}
	out := make([]microblog.Materialized, len(tweets))
	for i, t := range tweets {
		for _, f := range followers[hex16(t.Author)].Cells {
			u, err := strconv.ParseInt(string(f.Column[2:]), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("hbase async: follower column %q: %w", f.Column, err)
			}
			rows = append(rows, s.lineRow('T', u, t))
			if err := flush(false); err != nil {
				return nil, fmt.Errorf("hbase async: fan out: %w", err)
			}
		}
		out[i] = microblog.Materialized{TweetID: t.ID, PostedAt: t.Time}
	}
	if err := flush(true); err != nil {
		return nil, fmt.Errorf("hbase async: fan out: %w", err)
	}
	// Only once every timeline has them.
	keys := make([]string, len(tweets))
	for i, t := range tweets {
		keys[i] = hex16(t.ID)
	}
	if err := s.db.deleteRows(ctx, mbPending, keys, mbDeleters); err != nil {
		return nil, fmt.Errorf("hbase async: %w", err)
	}
	return out, nil
}
