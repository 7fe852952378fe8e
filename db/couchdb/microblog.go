package couchdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog: four databases, every read a range of the primary index
// (_all_docs), so nothing waits for a view to be built:
//
//	<prefix>_mb_meta     "model": {model, users, follows} as Populate wrote them
//	                     (a load in parts adds {parts, loaded}, below)
//	<prefix>_mb_follows  "FOLLOWEE:FOLLOWER" (19 digits each), no fields: a
//	                     user's followers are one key range, keys only
//	<prefix>_mb_tweets   "ID": {author, us, body}; a second post of an id is
//	                     refused by CouchDB itself (409 conflict)
//	<prefix>_mb_lines    "u:USER:T:I" (userline) and "t:USER:T:I" (timeline),
//	                     T and I being MaxInt64 minus the time in Unix µs and
//	                     minus the tweet id, so ascending keys are newest
//	                     first, ties by id descending
//
// Denormalized line documents carry {id, author, us, body}: a userline or
// timeline is one _all_docs range with include_docs and limit. Normalized
// line documents are empty (the key says time and id): the range is read
// keys only, then the bodies in one POST _all_docs {keys} of mb_tweets.
//
// A post writes the tweet (PUT, so an existing id is refused), then the
// userline and timeline documents in one _bulk_docs. CouchDB has no
// multi-document transaction: a post that fails between the two requests
// leaves the tweet without its line documents, which the durability audit
// reports as lost or stale.
//
// The async model writes line documents as denormalized does, but a post
// writes only the tweet, its userline document and a queue document in
// <prefix>_mb_pending ("ID": {author, us, body}); MaterializeOnce reads up
// to 512 queued tweets (oldest ids first), writes their timeline documents
// (ones that exist already, from a pass cut short, are kept) and deletes
// the queue documents.
const (
	mbMeta    = "mb_meta"
	mbFollows = "mb_follows"
	mbTweets  = "mb_tweets"
	mbLines   = "mb_lines"
	mbPending = "mb_pending"
	// mbMaterialize is the most queued tweets one pass fans out.
	mbMaterialize = 512
	// mbFlush is how many documents Populate gathers before writing them.
	mbFlush = 20_000
)

var mbKinds = []string{mbMeta, mbFollows, mbTweets, mbLines, mbPending}

type mbMetaDoc struct {
	ID      string `json:"_id"`
	Rev     string `json:"_rev,omitempty"`
	Model   string `json:"model"`
	Users   int64  `json:"users"`
	Follows int64  `json:"follows"`
	// Parts is N of a load in parts (0: loaded whole by Populate), Loaded
	// the parts in, "I/N"; users and follows are set with the last one.
	Parts  int      `json:"parts,omitempty"`
	Loaded []string `json:"loaded,omitempty"`
}

type mbTweetDoc struct {
	ID     string `json:"_id"`
	Author int64  `json:"author"`
	US     int64  `json:"us"`
	Body   string `json:"body"`
}

// mbLineDoc is a userline or timeline document. Its tweet id is a JSON
// string: a run's ids take 63 bits (microblog.TweetIDs), and a server that
// reads JSON numbers as doubles (pouchdb-server, being JavaScript; CouchDB's
// own views too) would keep only 53 of them and hand back another id.
type mbLineDoc struct {
	ID     string `json:"_id"`
	Tweet  int64  `json:"id,omitempty,string"`
	Author int64  `json:"author,omitempty"`
	US     int64  `json:"us,omitempty"`
	Body   string `json:"body,omitempty"`
}

type mbStore struct {
	db    *DB
	model microblog.Model
	mu    sync.Mutex          // one MaterializeOnce at a time (async)
	reads microblog.BodyReads // how normalized lines fetch bodies ("" = in)
}

var _ microblog.BodyReader = (*mbStore)(nil)

// SetBodyReads implements microblog.BodyReader: in, one POST _all_docs
// {keys} for a line's bodies; separate, one GET of each tweet's document,
// all in flight at once (the microblog study's up to 50 extra reads).
func (s *mbStore) SetBodyReads(r microblog.BodyReads) { s.reads = r }

type mbAsync struct{ *mbStore }

var (
	_ microblog.Store        = (*mbStore)(nil)
	_ microblog.Materializer = (*mbAsync)(nil)
)

// MicroblogModel implements microblog.Backend: the model Populate or a
// first PopulatePart recorded, "" when none was loaded.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	var m mbMetaDoc
	err := db.do(ctx, http.MethodGet, couchapi.Path(db.name(mbMeta), "model"), nil, nil, &m)
	if couchapi.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("couchdb: read microblog model: %w", err)
	}
	return microblog.Model(m.Model), nil
}

// Microblog implements microblog.Backend: the databases are created when
// absent; databases loaded with another model are refused.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("couchdb: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := db.ensure(ctx, mbKinds...); err != nil {
		return nil, err
	}
	if err := microblog.CheckLoaded(ctx, db, "couchdb", model, "prefix"); err != nil {
		return nil, err
	}
	st := &mbStore{db: db, model: model}
	if model == microblog.Async {
		return &mbAsync{st}, nil
	}
	return st, nil
}

// Close implements microblog.Store.
func (s *mbStore) Close() error { return nil }

func (s *mbStore) errf(format string, args ...any) error {
	return fmt.Errorf("couchdb %s: "+format, append([]any{s.model}, args...)...)
}

func lineKey(kind string, user int64, t microblog.Tweet) string {
	return kind + ":" + key(user) + ":" + key(math.MaxInt64-t.Time.UnixMicro()) + ":" + key(math.MaxInt64-t.ID)
}

func (s *mbStore) lineDoc(kind string, user int64, t microblog.Tweet) mbLineDoc {
	d := mbLineDoc{ID: lineKey(kind, user, t)}
	if s.model != microblog.Normalized {
		d.Tweet, d.Author, d.US, d.Body = t.ID, t.Author, t.Time.UnixMicro(), t.Body
	}
	return d
}

func tweetDoc(t microblog.Tweet) mbTweetDoc {
	return mbTweetDoc{ID: key(t.ID), Author: t.Author, US: t.Time.UnixMicro(), Body: t.Body}
}

// Populate implements microblog.Store: the model and sizes, follows,
// tweets, userlines and timelines as _bulk_docs of the DSN's batch=
// documents, four in flight.
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return s.errf("populate: nil dataset")
	}
	if have, err := s.db.MicroblogModel(ctx); err != nil || have != "" {
		if err == nil {
			err = errors.New("the databases already hold microblog data; use a fresh prefix")
		}
		return s.errf("populate: %w", err)
	}
	all := microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}
	if err := s.db.loadMicroblog(ctx, s.model, ds, all, false); err != nil {
		return s.errf("populate: %w", err)
	}
	meta := mbMetaDoc{ID: "model", Model: string(s.model), Users: int64(ds.Users), Follows: int64(len(ds.Follows))}
	if err := s.db.do(ctx, http.MethodPut, couchapi.Path(s.db.name(mbMeta), "model"), nil, meta, nil); err != nil {
		return s.errf("populate: record the model: %w", err)
	}
	return nil
}

// loadMicroblog writes part's follows (of its followees), tweets and
// userline documents (of its authors) and the timeline documents its
// tweets make, mbFlush documents gathered at a time. With skipConflicts a
// document that exists is kept: every _id is a function of the dataset,
// so it is the one this load would write.
func (db *DB) loadMicroblog(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part, skipConflicts bool) error {
	s := &mbStore{db: db, model: model}
	var buf []any
	flush := func(kind string, force bool) error {
		if len(buf) == 0 || (!force && len(buf) < mbFlush) {
			return nil
		}
		err := db.bulkAll(ctx, kind, buf, skipConflicts)
		buf = buf[:0]
		return err
	}
	for u := part.First; u <= part.Last; u++ {
		for _, f := range ds.Followers(u) {
			buf = append(buf, map[string]string{"_id": key(u) + ":" + key(f)})
		}
		if err := flush(mbFollows, false); err != nil {
			return fmt.Errorf("follows: %w", err)
		}
	}
	if err := flush(mbFollows, true); err != nil {
		return fmt.Errorf("follows: %w", err)
	}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		buf = append(buf, tweetDoc(t))
		if err := flush(mbTweets, false); err != nil {
			return fmt.Errorf("tweets: %w", err)
		}
	}
	if err := flush(mbTweets, true); err != nil {
		return fmt.Errorf("tweets: %w", err)
	}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		buf = append(buf, s.lineDoc("u", t.Author, t))
		for _, f := range ds.Followers(t.Author) {
			buf = append(buf, s.lineDoc("t", f, t))
		}
		if err := flush(mbLines, false); err != nil {
			return fmt.Errorf("lines: %w", err)
		}
	}
	if err := flush(mbLines, true); err != nil {
		return fmt.Errorf("lines: %w", err)
	}
	return nil
}

// Counts implements microblog.Store: users and follows as Populate (or the
// last PopulatePart) recorded them, tweets by doc_count.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	var m mbMetaDoc
	err := s.db.do(ctx, http.MethodGet, couchapi.Path(s.db.name(mbMeta), "model"), nil, nil, &m)
	if err != nil && !couchapi.IsNotFound(err) {
		return c, s.errf("counts: %w", err)
	}
	c.Users, c.Follows = m.Users, m.Follows
	if c.Tweets, err = s.db.count(ctx, mbTweets); err != nil {
		return c, s.errf("counts: %w", err)
	}
	return c, nil
}

// followers is user's follower list: one key range of mb_follows.
func (s *mbStore) followers(ctx context.Context, user int64) ([]int64, error) {
	p := key(user) + ":"
	rows, err := s.db.allDocs(ctx, mbFollows, url.Values{"startkey": {jsonKey(p)}, "endkey": {jsonKey(p + "\ufff0")}}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(rows))
	for _, r := range rows {
		f, err := strconv.ParseInt(strings.TrimPrefix(r.ID, p), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("follow document %q: %w", r.ID, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Post implements microblog.Store: the author's followers and the tweet's
// PUT in parallel, then one _bulk_docs of the userline document and one
// timeline document per follower.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	if s.model == microblog.Async {
		return s.postAsync(ctx, t)
	}
	var fr []int64
	frErr := make(chan error, 1)
	go func() {
		var err error
		fr, err = s.followers(ctx, t.Author)
		frErr <- err
	}()
	err := s.db.do(ctx, http.MethodPut, couchapi.Path(s.db.name(mbTweets), key(t.ID)), nil, tweetDoc(t), nil)
	if ferr := <-frErr; ferr != nil {
		return s.errf("post tweet %d: followers: %w", t.ID, ferr)
	}
	if couchapi.IsConflict(err) {
		return s.errf("post: tweet %d already exists", t.ID)
	}
	if err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	docs := make([]any, 0, len(fr)+1)
	docs = append(docs, s.lineDoc("u", t.Author, t))
	for _, f := range fr {
		docs = append(docs, s.lineDoc("t", f, t))
	}
	if err := s.db.bulkAll(ctx, mbLines, docs, false); err != nil {
		return s.errf("post tweet %d: lines: %w", t.ID, err)
	}
	return nil
}

// Userline implements microblog.Store.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	out, err := s.line(ctx, "u", user, limit)
	if err != nil {
		return nil, s.errf("userline of %d: %w", user, err)
	}
	return out, nil
}

// Timeline implements microblog.Store.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	out, err := s.line(ctx, "t", user, limit)
	if err != nil {
		return nil, s.errf("timeline of %d: %w", user, err)
	}
	return out, nil
}

// line reads the first limit documents of a user's userline or timeline
// range (and, normalized, the tweets they name).
func (s *mbStore) line(ctx context.Context, kind string, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	p := kind + ":" + key(user) + ":"
	q := url.Values{"startkey": {jsonKey(p)}, "endkey": {jsonKey(p + "\ufff0")}, "limit": {strconv.Itoa(limit)}}
	if s.model != microblog.Normalized {
		q.Set("include_docs", "true")
		rows, err := allDocsInto[mbLineDoc](ctx, s.db, mbLines, q, nil)
		if err != nil {
			return nil, err
		}
		out := make([]microblog.Tweet, 0, len(rows))
		for _, r := range rows {
			if r.Doc == nil {
				return nil, fmt.Errorf("line document %s has no body", r.ID)
			}
			out = append(out, microblog.Tweet{ID: r.Doc.Tweet, Author: r.Doc.Author, Time: time.UnixMicro(r.Doc.US).UTC(), Body: r.Doc.Body})
		}
		return out, nil
	}
	rows, err := s.db.allDocs(ctx, mbLines, q, nil)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		_, inv, ok := strings.Cut(r.ID[len(p):], ":")
		n, err := strconv.ParseInt(inv, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("line document id %q: want %sT:I", r.ID, p)
		}
		ids[i] = key(math.MaxInt64 - n)
	}
	docs, err := s.tweetDocs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]microblog.Tweet, 0, len(docs))
	for _, d := range docs {
		id, err := strconv.ParseInt(d.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tweet id %q: %w", d.ID, err)
		}
		out = append(out, microblog.Tweet{ID: id, Author: d.Author, Time: time.UnixMicro(d.US).UTC(), Body: d.Body})
	}
	return out, nil
}

// tweetDocs reads the tweet documents ids (in their order) from mb_tweets:
// with one POST _all_docs {keys}, or, under BodyReadsSeparate, with one
// GET each, all at once. A tweet a line names but mb_tweets lacks is an
// error.
func (s *mbStore) tweetDocs(ctx context.Context, ids []string) ([]mbTweetDoc, error) {
	docs := make([]mbTweetDoc, len(ids))
	if s.reads == microblog.BodyReadsSeparate {
		err := parallel(ctx, len(ids), len(ids), func(ctx context.Context, i int) error {
			err := s.db.do(ctx, http.MethodGet, couchapi.Path(s.db.name(mbTweets), ids[i]), nil, nil, &docs[i])
			if couchapi.IsNotFound(err) {
				return fmt.Errorf("tweet %s named by a line document: not found", ids[i])
			}
			return err
		})
		return docs, err
	}
	tw, err := allDocsInto[mbTweetDoc](ctx, s.db, mbTweets, url.Values{"include_docs": {"true"}}, ids)
	if err != nil {
		return nil, err
	}
	for i, r := range tw {
		if r.Doc == nil {
			return nil, fmt.Errorf("tweet %s named by a line document: %s", r.Key, r.Error)
		}
		docs[i] = *r.Doc
	}
	return docs[:len(tw)], nil
}

// MaxTweetID implements microblog.Store: the last key of mb_tweets.
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	rows, err := s.db.allDocs(ctx, mbTweets, idRange(url.Values{"descending": {"true"}, "limit": {"1"}}, true), nil)
	if err != nil {
		return 0, s.errf("max tweet id: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	id, err := strconv.ParseInt(rows[0].ID, 10, 64)
	if err != nil {
		return 0, s.errf("max tweet id %q: %w", rows[0].ID, err)
	}
	return id, nil
}

// postAsync writes the tweet (PUT: an existing id is refused), then its
// userline document and its queue document.
func (s *mbStore) postAsync(ctx context.Context, t microblog.Tweet) error {
	err := s.db.do(ctx, http.MethodPut, couchapi.Path(s.db.name(mbTweets), key(t.ID)), nil, tweetDoc(t), nil)
	if couchapi.IsConflict(err) {
		return s.errf("post: tweet %d already exists", t.ID)
	}
	if err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	if err := s.db.bulk(ctx, mbLines, []any{s.lineDoc("u", t.Author, t)}, false); err != nil {
		return s.errf("post tweet %d: userline: %w", t.ID, err)
	}
	if err := s.db.bulk(ctx, mbPending, []any{tweetDoc(t)}, false); err != nil {
		return s.errf("post tweet %d: queue: %w", t.ID, err)
	}
	return nil
}

// MaterializeOnce implements microblog.Materializer: up to 512 queued
// tweets, oldest ids first, fanned out to their author's followers'
// timelines, then their queue documents deleted.
func (s *mbAsync) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := idRange(url.Values{"include_docs": {"true"}, "limit": {strconv.Itoa(mbMaterialize)}}, false)
	rows, err := allDocsInto[mbTweetDoc](ctx, s.db, mbPending, q, nil)
	if err != nil {
		return nil, s.errf("read the queue: %w", err)
	}
	var lines, done []any
	out := make([]microblog.Materialized, 0, len(rows))
	followers := map[int64][]int64{}
	for _, r := range rows {
		if r.Doc == nil {
			continue
		}
		id, err := strconv.ParseInt(r.ID, 10, 64)
		if err != nil {
			return nil, s.errf("queue document %q: %w", r.ID, err)
		}
		t := microblog.Tweet{ID: id, Author: r.Doc.Author, Time: time.UnixMicro(r.Doc.US).UTC(), Body: r.Doc.Body}
		fr, ok := followers[t.Author]
		if !ok {
			if fr, err = s.followers(ctx, t.Author); err != nil {
				return nil, s.errf("materialize tweet %d: followers: %w", id, err)
			}
			followers[t.Author] = fr
		}
		for _, f := range fr {
			lines = append(lines, s.lineDoc("t", f, t))
		}
		done = append(done, map[string]any{"_id": r.ID, "_rev": r.Value.Rev, "_deleted": true})
		out = append(out, microblog.Materialized{TweetID: id, PostedAt: t.Time})
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := s.db.bulkAll(ctx, mbLines, lines, true); err != nil {
		return nil, s.errf("materialize: timelines: %w", err)
	}
	if err := s.db.bulkAll(ctx, mbPending, done, false); err != nil {
		return nil, s.errf("materialize: empty the queue: %w", err)
	}
	return out, nil
}

var _ microblog.PartLoader = (*DB)(nil)

// PopulatePart implements microblog.PartLoader. The "model" document of
// mb_meta holds the load's model, its number of parts and the parts
// loaded: the first part creates it (a PUT without _rev: of two at once,
// one is refused with 409 and reads the other's), every part checks it
// before writing any data (another model, another number of parts, the
// dataset loaded whole, or the part itself loaded: ErrPartLoaded), then
// writes its documents, keeping those there already (409 on _bulk_docs),
// and at last adds itself to the document's parts. The update that
// completes the parts also sets the users and follows counts that make the
// dataset whole, in the same revision. Two parts updating at once: one
// gets 409 and retries on the fresh revision. It never deletes.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("couchdb: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	if err := db.ensure(ctx, mbKinds...); err != nil {
		return err
	}
	path := couchapi.Path(db.name(mbMeta), "model")
	var m mbMetaDoc
	err := db.do(ctx, http.MethodGet, path, nil, nil, &m)
	if couchapi.IsNotFound(err) {
		m = mbMetaDoc{ID: "model", Model: string(model), Parts: part.N}
		err = db.do(ctx, http.MethodPut, path, nil, m, nil)
		if couchapi.IsConflict(err) { // another part created it first
			m = mbMetaDoc{}
			err = db.do(ctx, http.MethodGet, path, nil, nil, &m)
		}
	}
	if err != nil {
		return fmt.Errorf("couchdb: part %s: record the model and parts: %w", part, err)
	}
	if err := m.refuse(model, part); err != nil {
		return err
	}
	if err := db.loadMicroblog(ctx, model, ds, part, true); err != nil {
		return fmt.Errorf("couchdb %s: load part %s: %w", model, part, err)
	}
	// Each conflict means another part's update went in, and there are at
	// most N of those: N+8 tries cannot run out but by a server that keeps
	// refusing.
	for range part.N + 8 {
		var m mbMetaDoc // fresh: decoding keeps the fields a document lacks
		if err := db.do(ctx, http.MethodGet, path, nil, nil, &m); err != nil {
			return fmt.Errorf("couchdb: part %s: read the loaded parts: %w", part, err)
		}
		if slices.Contains(m.Loaded, part.String()) {
			return nil // loaded twice at once: the same documents, recorded once
		}
		m.Loaded = append(m.Loaded, part.String())
		if len(m.Loaded) == part.N {
			m.Users, m.Follows = int64(ds.Users), ds.Whole().Follows
		}
		err := db.do(ctx, http.MethodPut, path, nil, m, nil)
		if !couchapi.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("couchdb: record part %s: %w", part, err)
			}
			return nil
		}
	}
	return fmt.Errorf("couchdb: record part %s: %d conflicting updates of %s/model in a row", part, part.N+8, db.name(mbMeta))
}

// refuse says why part cannot be loaded in model beside the load m
// describes, nil when it can.
func (m mbMetaDoc) refuse(model microblog.Model, part microblog.Part) error {
	switch {
	case m.Model != string(model):
		return fmt.Errorf("couchdb: %w: they hold (or are being loaded with) the %s model; load the %s model under a fresh prefix",
			microblog.ErrModelMismatch, m.Model, model)
	case m.Parts == 0:
		return fmt.Errorf("couchdb: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
	case m.Parts != part.N:
		return fmt.Errorf("couchdb: part %s: the databases hold parts of a load in %d parts, another number of parts: use a fresh prefix", part, m.Parts)
	case slices.Contains(m.Loaded, part.String()):
		return fmt.Errorf("couchdb: part %s (users %d..%d): %w", part, part.First, part.Last, microblog.ErrPartLoaded)
	}
	return nil
}
