package couchbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/couchbase/gocb/v2"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog, as the study modelled it on Couchbase 2.0 (its section V):
//
//	PREFIX:mb:meta        {model, users, follows} as Populate wrote them
//	PREFIX:mb:stats       {n, max}: tweets posted and the largest tweet id
//	PREFIX:u:USER         {f: [followers]}: a post reads its author's
//	                      followers in one get (users nobody follows have none)
//	PREFIX:t:ID           {id, a, us, b}: the tweet; a post inserts it, so an
//	                      existing id is refused by the server
//	PREFIX:ul:USER        {e: [{id, us, b}]}: the user's userline, one document
//	                      holding all the user's tweets, appended to by a post
//	                      (a sub-document array append, atomic on the server,
//	                      where the study's owner-only updates needed no lock)
//
// Timelines are kept one of two ways (DSN option timeline=):
//
//	view (default, the study's): PREFIX:l:OWNER:ID {o, id, a, us, b}, one
//	document per timeline entry (the study's choice after a lock on one
//	timeline document per user proved too slow), read through the view
//	"timeline", which indexes them by [owner, time in µs, tweet id] with
//	[author, body] as value, in descending order from [owner, {}] with the
//	limit: newest first, ties by id descending, one operation.
//
//	doc: PREFIX:tl:OWNER {e: [{id, a, us, b}]}, one document per user,
//	appended to by a sub-document array append on the server — the study's
//	first design, whose lock the append makes needless (Couchbase 2.0 had
//	no sub-document operations) — read with one get and sorted on the
//	client. CouchbaseMock evaluates a view's JavaScript over every document
//	of the bucket at each query (measured here: 1.5 to 15 s per timeline
//	over some 13,000 documents), so the conformance suite runs this way
//	there and the view way on a small dataset (see couchbase_test.go).
//
// A userline is one get, its entries sorted newest first on the client.
// The normalized model keeps bodies only in the tweet documents (line
// entries without b) and reads up to limit bodies by key in one bulk get.
// A post is three steps, as in the study: insert the tweet, append to the
// userline, write the followers' timelines (view: one bulk request of
// upserts; doc: one append per follower, 32 at a time); then it updates
// the stats document (compare-and-swap). Nothing makes the steps atomic.
//
// Counts come from the meta and stats documents (a view's _count costs a
// scan of the bucket on CouchbaseMock): Tweets counts acknowledged posts
// and the loaded tweets. The async model, which the study proposed but
// did not build on Couchbase, is not offered.

type mbMeta struct {
	FB      string `json:"fb"`
	K       string `json:"k"`
	Model   string `json:"model"`
	Users   int64  `json:"users"`
	Follows int64  `json:"follows"`
}

type mbUser struct {
	FB        string  `json:"fb"`
	K         string  `json:"k"`
	Followers []int64 `json:"f"`
}

type mbTweet struct {
	FB     string `json:"fb"`
	K      string `json:"k"`
	ID     int64  `json:"id"`
	Author int64  `json:"a"`
	US     int64  `json:"us"`
	Body   string `json:"b"`
}

type mbEntry struct {
	ID   int64   `json:"id"`
	US   int64   `json:"us"`
	Body *string `json:"b,omitempty"`
}

type mbUserline struct {
	FB      string    `json:"fb"`
	K       string    `json:"k"`
	Entries []mbEntry `json:"e"`
}

type mbStats struct {
	FB  string `json:"fb"`
	K   string `json:"k"`
	N   int64  `json:"n"`
	Max int64  `json:"max"`
}

type mbTLEntry struct {
	ID     int64   `json:"id"`
	Author int64   `json:"a"`
	US     int64   `json:"us"`
	Body   *string `json:"b,omitempty"`
}

type mbTLDoc struct {
	FB      string      `json:"fb"`
	K       string      `json:"k"`
	Entries []mbTLEntry `json:"e"`
}

type mbTimeline struct {
	FB     string  `json:"fb"`
	K      string  `json:"k"`
	Owner  int64   `json:"o"`
	ID     int64   `json:"id"`
	Author int64   `json:"a"`
	US     int64   `json:"us"`
	Body   *string `json:"b,omitempty"`
}

// mbFlush is how many documents Populate sends in one bulk request.
const mbFlush = 2000

type mbStore struct {
	db    *DB
	model microblog.Model
}

var _ microblog.Store = (*mbStore)(nil)

func (db *DB) metaKey() string  { return db.key("mb", "meta") }
func (db *DB) statsKey() string { return db.key("mb", "stats") }

func (s *mbStore) viewTimelines() bool { return s.db.cfg.Timeline != "doc" }

func (s *mbStore) tlDocKey(owner int64) string {
	return s.db.key(kindTLDoc, strconv.FormatInt(owner, 10))
}

func (db *DB) meta(ctx context.Context) (*mbMeta, error) {
	res, err := db.col.Get(db.metaKey(), &gocb.GetOptions{Context: ctx})
	if errors.Is(err, gocb.ErrDocumentNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couchbase: read microblog meta: %w", err)
	}
	var m mbMeta
	if err := res.Content(&m); err != nil {
		return nil, fmt.Errorf("couchbase: microblog meta: %w", err)
	}
	return &m, nil
}

// MicroblogModel implements microblog.Backend: the model Populate
// recorded, "" when none was loaded.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	m, err := db.meta(ctx)
	if err != nil || m == nil {
		return "", err
	}
	return microblog.Model(m.Model), nil
}

// Microblog implements microblog.Backend: denormalized and normalized;
// data of another model under the prefix is refused.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, err
	}
	if model == microblog.Async {
		return nil, fmt.Errorf("couchbase: the async model (the study proposed it but built it on no database; this adapter follows the study's Couchbase models): %w", adapter.ErrUnsupported)
	}
	if err := microblog.CheckLoaded(ctx, db, "couchbase prefix "+db.cfg.Prefix, model, "prefix"); err != nil {
		return nil, err
	}
	if err := db.ensureDesign(ctx); err != nil {
		return nil, err
	}
	return &mbStore{db: db, model: model}, nil
}

// Close implements microblog.Store.
func (s *mbStore) Close() error { return nil }

func (s *mbStore) denormalized() bool { return s.model == microblog.Denormalized }

// body is the body to store in line documents: nil for normalized.
func (s *mbStore) body(t microblog.Tweet) *string {
	if !s.denormalized() {
		return nil
	}
	b := t.Body
	return &b
}

func (s *mbStore) tweetKey(id int64) string { return s.db.key(kindTweet, strconv.FormatInt(id, 10)) }

func (s *mbStore) timelineDoc(owner int64, t microblog.Tweet) (string, any) {
	return s.db.key(kindTimeline, strconv.FormatInt(owner, 10), strconv.FormatInt(t.ID, 10)),
		mbTimeline{FB: s.db.cfg.Prefix, K: kindTimeline, Owner: owner, ID: t.ID, Author: t.Author, US: t.Time.UnixMicro(), Body: s.body(t)}
}

// Populate implements microblog.Store: users, tweets, userlines and
// timelines in bulk requests, the meta document last (a load cut short
// leaves no model recorded).
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if m, err := s.db.meta(ctx); err != nil {
		return err
	} else if m != nil {
		return fmt.Errorf("couchbase: prefix %s is loaded already (%s model)", s.db.cfg.Prefix, m.Model)
	}
	if err := s.load(ctx, ds, microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}, false); err != nil {
		return err
	}
	p := s.db.cfg.Prefix
	var maxID int64
	for _, t := range ds.Tweets {
		maxID = max(maxID, t.ID)
	}
	stats := mbStats{FB: p, K: kindStats, N: int64(len(ds.Tweets)), Max: maxID}
	if _, err := s.db.col.Upsert(s.db.statsKey(), stats, &gocb.UpsertOptions{Context: ctx}); err != nil {
		return fmt.Errorf("couchbase: populate: stats: %w", err)
	}
	meta := mbMeta{FB: p, K: kindMeta, Model: string(s.model), Users: int64(ds.Users), Follows: int64(len(ds.Follows))}
	if _, err := s.db.col.Insert(s.db.metaKey(), meta, &gocb.InsertOptions{Context: ctx}); err != nil {
		return fmt.Errorf("couchbase: record the microblog model: %w", err)
	}
	return nil
}

// load writes part's user documents (of its followees), tweets and
// userlines (of its authors) and the timeline entries its tweets make, in
// bulk requests of upserts: every document but a timeline=doc timeline is
// whole within one part, so writing it again stores the same thing. A
// timeline document gathers the tweets of authors of every part: Populate
// (appendTimelines false) writes it whole; a part appends its entries
// (appendTimelines true, see appendTimelines).
func (s *mbStore) load(ctx context.Context, ds *microblog.Dataset, part microblog.Part, appendTimelines bool) error {
	p := s.db.cfg.Prefix
	var keys []string
	var docs []any
	add := func(k string, d any) error {
		keys, docs = append(keys, k), append(docs, d)
		if len(keys) < mbFlush {
			return nil
		}
		return s.flush(ctx, &keys, &docs)
	}
	for u := part.First; u <= part.Last; u++ {
		if f := ds.Followers(u); len(f) > 0 {
			if err := add(s.db.key(kindUser, strconv.FormatInt(u, 10)), mbUser{FB: p, K: kindUser, Followers: f}); err != nil {
				return err
			}
		}
	}
	lines := map[int64][]mbEntry{}
	tls := map[int64][]mbTLEntry{}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		if err := add(s.tweetKey(t.ID), mbTweet{FB: p, K: kindTweet, ID: t.ID, Author: t.Author, US: t.Time.UnixMicro(), Body: t.Body}); err != nil {
			return err
		}
		lines[t.Author] = append(lines[t.Author], mbEntry{ID: t.ID, US: t.Time.UnixMicro(), Body: s.body(t)})
		for _, f := range ds.Followers(t.Author) {
			if !s.viewTimelines() {
				tls[f] = append(tls[f], mbTLEntry{ID: t.ID, Author: t.Author, US: t.Time.UnixMicro(), Body: s.body(t)})
				continue
			}
			if err := add(s.timelineDoc(f, t)); err != nil {
				return err
			}
		}
	}
	for u, e := range lines {
		if err := add(s.db.key(kindUserline, strconv.FormatInt(u, 10)), mbUserline{FB: p, K: kindUserline, Entries: e}); err != nil {
			return err
		}
	}
	if !appendTimelines {
		for u, e := range tls {
			if err := add(s.tlDocKey(u), mbTLDoc{FB: p, K: kindTLDoc, Entries: e}); err != nil {
				return err
			}
		}
	}
	if err := s.flush(ctx, &keys, &docs); err != nil {
		return err
	}
	if appendTimelines {
		return s.appendTimelines(ctx, part, tls)
	}
	return nil
}

func (s *mbStore) flush(ctx context.Context, keys *[]string, docs *[]any) error {
	if len(*keys) == 0 {
		return nil
	}
	if err := s.db.writeAll(ctx, *keys, *docs); err != nil {
		return fmt.Errorf("couchbase: populate: %w", err)
	}
	*keys, *docs = (*keys)[:0], (*docs)[:0]
	return nil
}

// Counts implements microblog.Store.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	m, err := s.db.meta(ctx)
	if err != nil {
		return microblog.Counts{}, err
	}
	var c microblog.Counts
	if m != nil {
		c.Users, c.Follows = m.Users, m.Follows
	}
	st, _, err := s.stats(ctx)
	if err != nil {
		return microblog.Counts{}, err
	}
	c.Tweets = st.N
	return c, nil
}

// stats reads the stats document (zero and cas 0 when absent).
func (s *mbStore) stats(ctx context.Context) (mbStats, gocb.Cas, error) {
	res, err := s.db.col.Get(s.db.statsKey(), &gocb.GetOptions{Context: ctx})
	if errors.Is(err, gocb.ErrDocumentNotFound) {
		return mbStats{}, 0, nil
	}
	if err != nil {
		return mbStats{}, 0, fmt.Errorf("couchbase: read microblog stats: %w", err)
	}
	var st mbStats
	if err := res.Content(&st); err != nil {
		return mbStats{}, 0, fmt.Errorf("couchbase: microblog stats: %w", err)
	}
	return st, res.Cas(), nil
}

// countPost adds a posted tweet to the stats document: compare-and-swap,
// again when another post changed it in between.
func (s *mbStore) countPost(ctx context.Context, id int64) error {
	for ctx.Err() == nil {
		st, cas, err := s.stats(ctx)
		if err != nil {
			return err
		}
		st.FB, st.K, st.N, st.Max = s.db.cfg.Prefix, kindStats, st.N+1, max(st.Max, id)
		if cas == 0 {
			_, err = s.db.col.Insert(s.db.statsKey(), st, &gocb.InsertOptions{Context: ctx})
		} else {
			_, err = s.db.col.Replace(s.db.statsKey(), st, &gocb.ReplaceOptions{Context: ctx, Cas: cas})
		}
		if errors.Is(err, gocb.ErrCasMismatch) || errors.Is(err, gocb.ErrDocumentExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("couchbase: update microblog stats: %w", err)
		}
		return nil
	}
	return ctx.Err()
}

// MaxTweetID implements microblog.Store.
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	st, _, err := s.stats(ctx)
	return st.Max, err
}

// Post implements microblog.Store: the tweet (insert: an existing id is
// an error), the userline append, the followers' timeline documents.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	p := s.db.cfg.Prefix
	us := t.Time.UnixMicro()
	opts := &gocb.InsertOptions{Context: ctx, PersistTo: s.db.cfg.PersistTo, ReplicateTo: s.db.cfg.ReplicateTo}
	if s.db.cfg.Durability != "" {
		opts.DurabilityLevel = durabilities[s.db.cfg.Durability]
	}
	if _, err := s.db.col.Insert(s.tweetKey(t.ID), mbTweet{FB: p, K: kindTweet, ID: t.ID, Author: t.Author, US: us, Body: t.Body}, opts); err != nil {
		return fmt.Errorf("couchbase: post tweet %d: %w", t.ID, err)
	}
	var followers []int64
	res, err := s.db.col.Get(s.db.key(kindUser, strconv.FormatInt(t.Author, 10)), &gocb.GetOptions{Context: ctx})
	switch {
	case errors.Is(err, gocb.ErrDocumentNotFound):
	case err != nil:
		return fmt.Errorf("couchbase: post %d: read followers: %w", t.ID, err)
	default:
		var u mbUser
		if err := res.Content(&u); err != nil {
			return fmt.Errorf("couchbase: post %d: user %d: %w", t.ID, t.Author, err)
		}
		followers = u.Followers
	}
	// A userline created by this append gets fb and k too (upserted
	// paths), so the document is the prefix's like every other.
	mopts := &gocb.MutateInOptions{Context: ctx, StoreSemantic: gocb.StoreSemanticsUpsert,
		PersistTo: s.db.cfg.PersistTo, ReplicateTo: s.db.cfg.ReplicateTo}
	if s.db.cfg.Durability != "" {
		mopts.DurabilityLevel = durabilities[s.db.cfg.Durability]
	}
	_, err = s.db.col.MutateIn(s.db.key(kindUserline, strconv.FormatInt(t.Author, 10)), []gocb.MutateInSpec{
		gocb.UpsertSpec("fb", p, nil),
		gocb.UpsertSpec("k", kindUserline, nil),
		gocb.ArrayAppendSpec("e", mbEntry{ID: t.ID, US: us, Body: s.body(t)}, &gocb.ArrayAppendSpecOptions{CreatePath: true}),
	}, mopts)
	if err != nil {
		return fmt.Errorf("couchbase: post %d: append to the userline: %w", t.ID, err)
	}
	if err := s.fanOut(ctx, t, followers, mopts); err != nil {
		return fmt.Errorf("couchbase: post %d: timelines: %w", t.ID, err)
	}
	return s.countPost(ctx, t.ID)
}

// fanOut writes t into the followers' timelines.
func (s *mbStore) fanOut(ctx context.Context, t microblog.Tweet, followers []int64, mopts *gocb.MutateInOptions) error {
	if len(followers) == 0 {
		return nil
	}
	if s.viewTimelines() {
		keys := make([]string, len(followers))
		docs := make([]any, len(followers))
		for i, f := range followers {
			keys[i], docs[i] = s.timelineDoc(f, t)
		}
		return s.db.writeAll(ctx, keys, docs)
	}
	e := mbTLEntry{ID: t.ID, Author: t.Author, US: t.Time.UnixMicro(), Body: s.body(t)}
	return parallel(ctx, len(followers), func(i int) error {
		_, err := s.db.col.MutateIn(s.tlDocKey(followers[i]), []gocb.MutateInSpec{
			gocb.UpsertSpec("fb", s.db.cfg.Prefix, nil),
			gocb.UpsertSpec("k", kindTLDoc, nil),
			gocb.ArrayAppendSpec("e", e, &gocb.ArrayAppendSpecOptions{CreatePath: true}),
		}, mopts)
		return err
	})
}

// Userline implements microblog.Store: one get, sorted on the client.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := s.db.col.Get(s.db.key(kindUserline, strconv.FormatInt(user, 10)), &gocb.GetOptions{Context: ctx})
	if errors.Is(err, gocb.ErrDocumentNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couchbase: userline %d: %w", user, err)
	}
	var ul mbUserline
	if err := res.Content(&ul); err != nil {
		return nil, fmt.Errorf("couchbase: userline %d: %w", user, err)
	}
	out := make([]microblog.Tweet, len(ul.Entries))
	for i, e := range ul.Entries {
		out[i] = microblog.Tweet{ID: e.ID, Author: user, Time: time.UnixMicro(e.US).UTC()}
		if e.Body != nil {
			out[i].Body = *e.Body
		}
	}
	return s.newest(ctx, out, limit)
}

// newest sorts ts newest first, keeps limit and fills the bodies in when
// the model keeps them in the tweets only.
func (s *mbStore) newest(ctx context.Context, ts []microblog.Tweet, limit int) ([]microblog.Tweet, error) {
	slices.SortFunc(ts, func(a, b microblog.Tweet) int {
		if microblog.Newer(a, b) {
			return -1
		}
		if microblog.Newer(b, a) {
			return 1
		}
		return 0
	})
	ts = ts[:min(limit, len(ts))]
	if !s.denormalized() {
		return ts, s.fillBodies(ctx, ts)
	}
	return ts, nil
}

// timelineDocRead is Timeline with timeline=doc: one get.
func (s *mbStore) timelineDocRead(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	res, err := s.db.col.Get(s.tlDocKey(user), &gocb.GetOptions{Context: ctx})
	if errors.Is(err, gocb.ErrDocumentNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couchbase: timeline %d: %w", user, err)
	}
	var d mbTLDoc
	if err := res.Content(&d); err != nil {
		return nil, fmt.Errorf("couchbase: timeline %d: %w", user, err)
	}
	out := make([]microblog.Tweet, len(d.Entries))
	for i, e := range d.Entries {
		out[i] = microblog.Tweet{ID: e.ID, Author: e.Author, Time: time.UnixMicro(e.US).UTC()}
		if e.Body != nil {
			out[i].Body = *e.Body
		}
	}
	return s.newest(ctx, out, limit)
}

// Timeline implements microblog.Store: one query of the timeline view, or
// one get with timeline=doc.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	if !s.viewTimelines() {
		return s.timelineDocRead(ctx, user, limit)
	}
	rows, err := s.db.query(ctx, viewTimeline, gocb.ViewOptions{Order: gocb.ViewOrderingDescending,
		StartKey: []any{user, map[string]any{}}, EndKey: []any{user}, InclusiveEnd: true, Limit: uint32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, fmt.Errorf("couchbase: timeline %d: %w", user, err)
	}
	out := make([]microblog.Tweet, len(rows))
	for i, r := range rows {
		var key, val []json.RawMessage
		if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 3 {
			return nil, fmt.Errorf("couchbase: timeline %d: key %s: %v", user, r.Key, err)
		}
		if err := json.Unmarshal(r.Value, &val); err != nil || len(val) == 0 {
			return nil, fmt.Errorf("couchbase: timeline %d: value %s: %v", user, r.Value, err)
		}
		us, err1 := integer(key[1])
		id, err2 := integer(key[2])
		author, err3 := integer(val[0])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("couchbase: timeline %d: row %s %s: %w", user, r.Key, r.Value, err)
		}
		t := microblog.Tweet{ID: id, Author: author, Time: time.UnixMicro(us).UTC()}
		if len(val) > 1 {
			if err := json.Unmarshal(val[1], &t.Body); err != nil {
				return nil, fmt.Errorf("couchbase: timeline %d: body: %w", user, err)
			}
		}
		out[i] = t
	}
	if !s.denormalized() {
		return out, s.fillBodies(ctx, out)
	}
	return out, nil
}

// fillBodies reads the tweets' bodies by key in one bulk get (normalized).
func (s *mbStore) fillBodies(ctx context.Context, ts []microblog.Tweet) error {
	if len(ts) == 0 {
		return nil
	}
	ops := make([]gocb.BulkOp, len(ts))
	for i, t := range ts {
		ops[i] = &gocb.GetOp{ID: s.tweetKey(t.ID)}
	}
	if err := s.db.doBulk(ctx, ops); err != nil {
		return fmt.Errorf("couchbase: read bodies: %w", err)
	}
	for i, o := range ops {
		g := o.(*gocb.GetOp)
		if g.Err != nil {
			return fmt.Errorf("couchbase: read tweet %d: %w", ts[i].ID, g.Err)
		}
		var tw mbTweet
		if err := g.Result.Content(&tw); err != nil {
			return fmt.Errorf("couchbase: tweet %d: %w", ts[i].ID, err)
		}
		ts[i].Body = tw.Body
	}
	return nil
}

// integer reads a JSON number that holds an integer, written either way a
// view server may write it (12345 or 1.2345E4): every integer the adapter
// stores is below 2^53, so the float form is exact.
func integer(raw json.RawMessage) (int64, error) {
	s := string(raw)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%s is not an integer", s)
	}
	return int64(f), nil
}
