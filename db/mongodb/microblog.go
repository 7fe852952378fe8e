package mongodb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog collections, documents shaped for the reads:
//
//   - mb_meta: {_id: "model"|"users"|"follows", v: string}, what Populate
//     loaded (PopulatePart adds the documents of a load in parts, below);
//   - mb_followers: {_id: "user" (decimal string), followers: [ids]}, one
//     document per user followed, so a post reads its fan-out list with
//     one findOne by _id (a string _id: FerretDB uses its _id index only
//     for a string or ObjectId);
//   - mb_tweets_K: {_id: tweet id, author, us, body}, partition K = id
//     modulo parts; the unique _id makes a duplicate post an error;
//   - mb_userline_K, mb_timeline_K: {_id: "user:tweet", user, us, tweet[,
//     author, body]}, partition K = user modulo parts, under the index
//     (user 1, us -1, tweet -1), so a line is one index range read newest
//     first (times are Unix microseconds: a BSON date keeps only
//     milliseconds). Denormalized and async rows carry author and body;
//     normalized rows only the tweet id, and the bodies come from the
//     tweets' partitions with one $in query each. The _id makes a
//     repeated fan-out (a materializer pass retried) a no-op;
//   - mb_pending: {_id: tweet id, author, us, body}, the async model's
//     queue, read oldest id first.
const (
	mbMeta      = "mb_meta"
	mbFollowers = "mb_followers"
	mbTweets    = "mb_tweets"
	mbUserline  = "mb_userline"
	mbTimeline  = "mb_timeline"
	mbPending   = "mb_pending"
	// materializeBatch is the most pending tweets one pass fans out.
	materializeBatch = 512
)

// lineIndex is the userline's and timeline's read path.
func lineIndex() mongo.IndexModel {
	return idx("user_us_tweet", false, "user", 1, "us", -1, "tweet", -1)
}

// ensureLine creates a line partition's index before its first write (a
// read of a partition never written finds nothing, index or not).
func (db *DB) ensureLine(ctx context.Context, coll string) error {
	return db.ensureIndexes(ctx, coll, lineIndex())
}

// insertLines inserts line documents grouped by partition; with
// skipDuplicates, documents already there (a retried fan-out) are fine.
func (db *DB) insertLines(ctx context.Context, groups map[string][]any, skipDuplicates bool) error {
	return db.insertGrouped(ctx, groups, skipDuplicates, db.ensureLine)
}

type mbStore struct {
	db    *DB
	model microblog.Model
	reads microblog.BodyReads // normalized lines: one $in per partition, or a find per tweet
	mu    sync.Mutex          // one MaterializeOnce at a time (async)
}

// SetBodyReads implements microblog.BodyReader.
func (s *mbStore) SetBodyReads(r microblog.BodyReads) { s.reads = r }

type mbAsync struct{ *mbStore }

var (
	_ microblog.Store        = (*mbStore)(nil)
	_ microblog.Materializer = (*mbAsync)(nil)
	_ microblog.BodyReader   = (*mbStore)(nil)
)

// MicroblogModel implements microblog.Backend: the model Populate or a
// first PopulatePart recorded, "" when none was loaded.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	var m struct {
		V string `bson:"v"`
	}
	err := db.c(mbMeta).FindOne(ctx, bson.D{{Key: "_id", Value: "model"}}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("mongodb: read microblog model: %w", err)
	}
	return microblog.Model(m.V), nil
}

// Microblog implements microblog.Backend: it creates the indexes when
// absent; a database loaded with another model is refused.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("mongodb: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := microblog.CheckLoaded(ctx, db, "mongodb", model, "database"); err != nil {
		return nil, err
	}
	s := &mbStore{db: db, model: model}
	if model == microblog.Async {
		return &mbAsync{s}, nil
	}
	return s, nil
}

// Close implements microblog.Store; the DB stays open.
func (s *mbStore) Close() error { return nil }

func (s *mbStore) errf(format string, args ...any) error {
	return fmt.Errorf("mongodb %s: "+format, append([]any{s.model}, args...)...)
}

// followers reads user's followers (one document; none when nobody
// follows user).
func (s *mbStore) followers(ctx context.Context, user int64) ([]int64, error) {
	var d struct {
		Followers []int64 `bson:"followers"`
	}
	err := s.db.c(mbFollowers).FindOne(ctx, bson.D{{Key: "_id", Value: strconv.FormatInt(user, 10)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	return d.Followers, err
}

// lineDoc is a userline or timeline document of user for t.
func (s *mbStore) lineDoc(user int64, t microblog.Tweet) bson.D {
	d := bson.D{
		{Key: "_id", Value: strconv.FormatInt(user, 10) + ":" + strconv.FormatInt(t.ID, 10)},
		{Key: "user", Value: user}, {Key: "us", Value: t.Time.UnixMicro()}, {Key: "tweet", Value: t.ID},
	}
	if s.model != microblog.Normalized {
		d = append(d, bson.E{Key: "author", Value: t.Author}, bson.E{Key: "body", Value: t.Body})
	}
	return d
}

func tweetDoc(t microblog.Tweet) bson.D {
	return bson.D{{Key: "_id", Value: t.ID}, {Key: "author", Value: t.Author}, {Key: "us", Value: t.Time.UnixMicro()}, {Key: "body", Value: t.Body}}
}

// fanOut inserts the timeline documents of t for followers fr, one
// insertMany per partition, in parallel; documents already there (a
// retried pass) are skipped.
func (s *mbStore) fanOut(ctx context.Context, t microblog.Tweet, fr []int64) error {
	if len(fr) == 0 {
		return nil
	}
	groups := map[string][]any{}
	for _, f := range fr {
		p := s.db.partOf(mbTimeline, f)
		groups[p] = append(groups[p], s.lineDoc(f, t))
	}
	return s.db.insertLines(ctx, groups, true)
}

// onlyDuplicates reports whether every write error of an unordered insert
// is a duplicate key (the documents are there already).
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}

// Post implements microblog.Store. The tweet is inserted first, while the
// author's followers are read (not for async): its unique _id refuses a
// duplicate before anything else is written. Then the userline document
// and the timeline documents (denormalized, normalized) or the pending
// document (async) in unordered insertMany commands. Without a
// multi-document transaction (FerretDB has none; MongoDB has them only on
// replica sets) a reader can see the tweet before its fan-out completes,
// as with the Cassandra adapter's batches.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	var (
		fr    []int64
		frErr error
		wg    sync.WaitGroup
	)
	if s.model != microblog.Async {
		wg.Go(func() { fr, frErr = s.followers(ctx, t.Author) })
	}
	_, insErr := s.db.c(s.db.partOf(mbTweets, t.ID)).InsertOne(ctx, tweetDoc(t))
	wg.Wait()
	if mongo.IsDuplicateKeyError(insErr) {
		return s.errf("post: tweet %d already exists", t.ID)
	}
	if err := errors.Join(insErr, frErr); err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	ul := s.db.partOf(mbUserline, t.Author)
	if err := s.db.ensureLine(ctx, ul); err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	if _, err := s.db.c(ul).InsertOne(ctx, s.lineDoc(t.Author, t)); err != nil {
		return s.errf("post tweet %d: userline: %w", t.ID, err)
	}
	if s.model == microblog.Async {
		if _, err := s.db.c(mbPending).InsertOne(ctx, tweetDoc(t)); err != nil {
			return s.errf("post tweet %d: pending: %w", t.ID, err)
		}
		return nil
	}
	if err := s.fanOut(ctx, t, fr); err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	return nil
}

// Userline implements microblog.Store.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, mbUserline, user, limit)
}

// Timeline implements microblog.Store.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, mbTimeline, user, limit)
}

type lineRow struct {
	US     int64  `bson:"us"`
	Tweet  int64  `bson:"tweet"`
	Author int64  `bson:"author"`
	Body   string `bson:"body"`
}

type tweetRow struct {
	ID     int64  `bson:"_id"`
	Author int64  `bson:"author"`
	US     int64  `bson:"us"`
	Body   string `bson:"body"`
}

func (r tweetRow) tweet() microblog.Tweet {
	return microblog.Tweet{ID: r.ID, Author: r.Author, Time: time.UnixMicro(r.US).UTC(), Body: r.Body}
}

// read is one index range, newest first; normalized rows are ids whose
// authors and bodies one $in query on mb_tweets fetches.
func (s *mbStore) read(ctx context.Context, coll string, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 { // a limit of 0 means "no limit" to the server
		return nil, nil
	}
	o := options.Find().SetSort(bson.D{{Key: "us", Value: -1}, {Key: "tweet", Value: -1}}).SetLimit(int64(limit)).
		SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "us", Value: 1}, {Key: "tweet", Value: 1}, {Key: "author", Value: 1}, {Key: "body", Value: 1}})
	cur, err := s.db.c(s.db.partOf(coll, user)).Find(ctx, bson.D{{Key: "user", Value: user}}, o)
	if err != nil {
		return nil, s.errf("%s: %w", coll, err)
	}
	var rows []lineRow
	if err := cur.All(ctx, &rows); err != nil {
		return nil, s.errf("%s: %w", coll, err)
	}
	out := make([]microblog.Tweet, len(rows))
	for i, r := range rows {
		out[i] = microblog.Tweet{ID: r.Tweet, Author: r.Author, Time: time.UnixMicro(r.US).UTC(), Body: r.Body}
	}
	if s.model != microblog.Normalized || len(out) == 0 {
		return out, nil
	}
	got, err := s.db.tweets(ctx, out, s.reads == microblog.BodyReadsSeparate)
	if err != nil {
		return nil, s.errf("%s bodies: %w", coll, err)
	}
	for i := range out {
		tw, ok := got[out[i].ID]
		if !ok {
			return nil, s.errf("%s: tweet %d is missing", coll, out[i].ID)
		}
		out[i].Author, out[i].Body = tw.Author, tw.Body
	}
	return out, nil
}

// tweets fetches the tweets of ts by id: one $in query per tweets
// partition, in parallel, or with separate one find per tweet (at most
// maxParallel in flight).
func (db *DB) tweets(ctx context.Context, ts []microblog.Tweet, separate bool) (map[int64]tweetRow, error) {
	if separate {
		rows := make([]tweetRow, len(ts))
		found := make([]bool, len(ts))
		err := parallel(ctx, len(ts), func(ctx context.Context, i int) error {
			err := db.c(db.partOf(mbTweets, ts[i].ID)).FindOne(ctx, bson.D{{Key: "_id", Value: ts[i].ID}}).Decode(&rows[i])
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil // the caller names the missing tweet
			}
			found[i] = err == nil
			return err
		})
		got := make(map[int64]tweetRow, len(ts))
		for i := range rows {
			if found[i] {
				got[rows[i].ID] = rows[i]
			}
		}
		return got, err
	}
	byPart := map[string][]int64{}
	for _, t := range ts {
		p := db.partOf(mbTweets, t.ID)
		byPart[p] = append(byPart[p], t.ID)
	}
	parts := make([]string, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	var mu sync.Mutex
	got := make(map[int64]tweetRow, len(ts))
	err := parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		cur, err := db.c(parts[i]).Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: byPart[parts[i]]}}}})
		if err != nil {
			return err
		}
		var rows []tweetRow
		if err := cur.All(ctx, &rows); err != nil {
			return err
		}
		mu.Lock()
		for _, r := range rows {
			got[r.ID] = r
		}
		mu.Unlock()
		return nil
	})
	return got, err
}

// MaxTweetID implements microblog.Store: the largest _id of each tweets
// partition (its _id index), the largest of those.
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	parts, err := s.db.partitions(ctx, mbTweets)
	if err != nil {
		return 0, s.errf("max tweet id: %w", err)
	}
	var mu sync.Mutex
	var best int64
	err = parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		var r tweetRow
		err := s.db.c(parts[i]).FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}}).
			SetProjection(bson.D{{Key: "_id", Value: 1}})).Decode(&r)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil
		}
		mu.Lock()
		best = max(best, r.ID)
		mu.Unlock()
		return err
	})
	if err != nil {
		return 0, s.errf("max tweet id: %w", err)
	}
	return best, nil
}

// Counts implements microblog.Store: users and follows as Populate (or the
// last PopulatePart) recorded them, tweets counted.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	cur, err := s.db.c(mbMeta).Find(ctx, bson.D{})
	if err != nil {
		return c, s.errf("counts: %w", err)
	}
	var meta []struct {
		ID string `bson:"_id"`
		V  string `bson:"v"`
	}
	if err := cur.All(ctx, &meta); err != nil {
		return c, s.errf("counts: %w", err)
	}
	for _, m := range meta {
		n, _ := strconv.ParseInt(m.V, 10, 64)
		switch m.ID {
		case "users":
			c.Users = n
		case "follows":
			c.Follows = n
		}
	}
	if c.Tweets, err = s.db.countAll(ctx, mbTweets); err != nil {
		return c, s.errf("counts: %w", err)
	}
	return c, nil
}

// Populate implements microblog.Store: the model and sizes, one followers
// document per user followed, the tweets, userlines and fully
// materialized timelines (async: nothing pending), in unordered
// insertMany commands of the DSN's batch= documents.
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return s.errf("populate: nil dataset")
	}
	have, err := s.db.MicroblogModel(ctx)
	if err != nil {
		return s.errf("populate: %w", err)
	}
	if have != "" {
		return s.errf("populate: the database already holds microblog data; use a fresh database")
	}
	if n, err := s.db.countAll(ctx, mbTweets); err != nil || n > 0 {
		return s.errf("populate: the database already holds tweets (%d) or cannot be read: %v", n, err)
	}
	all := microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}
	if err := s.db.loadMicroblog(ctx, s.model, ds, all, false); err != nil {
		return s.errf("populate: %w", err)
	}
	// The model goes in last: a load that failed half way leaves no model,
	// and a second Populate is refused by the tweets already there.
	meta := []any{
		bson.D{{Key: "_id", Value: "users"}, {Key: "v", Value: strconv.Itoa(ds.Users)}},
		bson.D{{Key: "_id", Value: "follows"}, {Key: "v", Value: strconv.Itoa(len(ds.Follows))}},
		bson.D{{Key: "_id", Value: "model"}, {Key: "v", Value: string(s.model)}},
	}
	if err := s.db.insertChunks(ctx, mbMeta, meta, false); err != nil {
		return s.errf("populate: %w", err)
	}
	return nil
}

// loadMicroblog inserts part's followers documents (of its followees),
// tweets and userline documents (of its authors) and the timeline
// documents its tweets make. With skipDuplicates, documents already there
// are kept: every _id is a function of the dataset, so a document there is
// the one this load would write (parts loading at the same time overlap
// in nothing but their partitions).
func (db *DB) loadMicroblog(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part, skipDuplicates bool) error {
	s := &mbStore{db: db, model: model}
	var fol []any
	for u := part.First; u <= part.Last; u++ {
		if fs := ds.Followers(u); len(fs) > 0 {
			fol = append(fol, bson.D{{Key: "_id", Value: strconv.FormatInt(u, 10)}, {Key: "followers", Value: fs}})
		}
	}
	tweets, lines := map[string][]any{}, map[string][]any{}
	add := func(m map[string][]any, coll string, d bson.D) { m[coll] = append(m[coll], d) }
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		add(tweets, db.partOf(mbTweets, t.ID), tweetDoc(t))
		add(lines, db.partOf(mbUserline, t.Author), s.lineDoc(t.Author, t))
	}
	if err := db.insertChunks(ctx, mbFollowers, fol, skipDuplicates); err != nil {
		return err
	}
	if err := db.insertGrouped(ctx, tweets, skipDuplicates, nil); err != nil {
		return err
	}
	if err := db.insertLines(ctx, lines, skipDuplicates); err != nil {
		return err
	}
	// Timelines in rounds of microblog.TimelineRound documents, so the
	// load holds a bounded part of the fan-out, not all of it.
	return ds.TimelineRounds(part, microblog.TimelineRound, func(rows []microblog.TimelineRow) error {
		clear(lines)
		for _, r := range rows {
			add(lines, db.partOf(mbTimeline, r.Follower), s.lineDoc(r.Follower, ds.Tweets[r.Tweet]))
		}
		return db.insertLines(ctx, lines, skipDuplicates)
	})
}

// MaterializeOnce implements microblog.Materializer: it reads up to 512
// pending tweets (oldest ids first), fans each out to its author's
// followers' timelines and deletes the pending documents. A pass that
// fails half way is safe to repeat: the timeline _ids skip what is there.
func (s *mbAsync) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.db.c(mbPending).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(materializeBatch))
	if err != nil {
		return nil, s.errf("read pending: %w", err)
	}
	var pending []tweetRow
	if err := cur.All(ctx, &pending); err != nil {
		return nil, s.errf("read pending: %w", err)
	}
	if len(pending) == 0 {
		return nil, nil
	}
	done := make([]microblog.Materialized, 0, len(pending))
	ids := make([]int64, 0, len(pending))
	for _, p := range pending {
		t := p.tweet()
		fr, err := s.followers(ctx, t.Author)
		if err != nil {
			return nil, s.errf("materialize: %w", err)
		}
		if err := s.fanOut(ctx, t, fr); err != nil {
			return nil, s.errf("materialize tweet %d: %w", t.ID, err)
		}
		done = append(done, microblog.Materialized{TweetID: t.ID, PostedAt: t.Time})
		ids = append(ids, t.ID)
	}
	if _, err := s.db.c(mbPending).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}); err != nil {
		return nil, s.errf("materialize: delete pending: %w", err)
	}
	return done, nil
}

var _ microblog.PartLoader = (*DB)(nil)

// Loading in parts, mb_meta's other documents: {_id: "parts", v: "N",
// partitions: P}, the number of parts of the load and the DSN's parts=
// its documents were spread over, and {_id: "part I/N"} for each part
// loaded. Every one is inserted, never updated: FerretDB 1.24 applies an
// update as a read then a replace without a lock, so two parts adding
// themselves to one document ($addToSet) at once could lose one, while an
// insert of a given _id succeeds once.
const (
	mbPartsID = "parts"
	mbPartID  = "part "
)

// mbMetaDoc is an mb_meta document as PopulatePart reads them all.
type mbMetaDoc struct {
	ID         string `bson:"_id"`
	V          string `bson:"v"`
	Partitions int    `bson:"partitions"`
}

// PopulatePart implements microblog.PartLoader. It inserts the model and
// the number of parts unless they are there (the first part to insert
// them decides; a part of another model or number of parts is refused
// before it writes any data), then part's documents, skipping those there
// already, then its own "part I/N" document. The part that then finds
// every part's document inserts the users and follows counts that make
// the dataset whole (of two finishing at once, the later read sees both
// parts; if both see every part, both insert the same counts, and the
// second insert is a duplicate, skipped). It never drops or deletes.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("mongodb: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	if st, err := db.loadState(ctx); err != nil {
		return err
	} else if err := st.refuse(model, part, db.cfg.Parts); err != nil {
		return err
	}
	meta := []any{
		bson.D{{Key: "_id", Value: "model"}, {Key: "v", Value: string(model)}},
		bson.D{{Key: "_id", Value: mbPartsID}, {Key: "v", Value: strconv.Itoa(part.N)}, {Key: "partitions", Value: db.cfg.Parts}},
	}
	if err := db.insertChunks(ctx, mbMeta, meta, true); err != nil {
		return fmt.Errorf("mongodb %s: part %s: record the model and parts: %w", model, part, err)
	}
	// Another part may have inserted them first, with another model or
	// number of parts.
	if st, err := db.loadState(ctx); err != nil {
		return err
	} else if err := st.refuse(model, part, db.cfg.Parts); err != nil {
		return err
	}
	if err := db.loadMicroblog(ctx, model, ds, part, true); err != nil {
		return fmt.Errorf("mongodb %s: load part %s: %w", model, part, err)
	}
	done := []any{bson.D{{Key: "_id", Value: mbPartID + part.String()}}}
	if err := db.insertChunks(ctx, mbMeta, done, true); err != nil {
		return fmt.Errorf("mongodb %s: record part %s: %w", model, part, err)
	}
	st, err := db.loadState(ctx)
	if err != nil {
		return err
	}
	for i := range part.N {
		if !slices.Contains(st.loaded, microblog.Part{I: i, N: part.N}.String()) {
			return nil
		}
	}
	counts := []any{
		bson.D{{Key: "_id", Value: "users"}, {Key: "v", Value: strconv.Itoa(ds.Users)}},
		bson.D{{Key: "_id", Value: "follows"}, {Key: "v", Value: strconv.FormatInt(ds.Whole().Follows, 10)}},
	}
	if err := db.insertChunks(ctx, mbMeta, counts, true); err != nil {
		return fmt.Errorf("mongodb %s: record the whole dataset's counts: %w", model, err)
	}
	return nil
}

// mbLoadState is what mb_meta says about a load in parts.
type mbLoadState struct {
	model  string     // "" when none is recorded
	whole  bool       // the users count is recorded
	parts  *mbMetaDoc // nil when no load in parts began
	loaded []string   // the parts loaded, "I/N"
}

// loadState reads mb_meta (a handful of documents).
func (db *DB) loadState(ctx context.Context) (mbLoadState, error) {
	var st mbLoadState
	cur, err := db.c(mbMeta).Find(ctx, bson.D{})
	if err != nil {
		return st, fmt.Errorf("mongodb: read microblog metadata: %w", err)
	}
	var docs []mbMetaDoc
	if err := cur.All(ctx, &docs); err != nil {
		return st, fmt.Errorf("mongodb: read microblog metadata: %w", err)
	}
	for i, d := range docs {
		switch {
		case d.ID == "model":
			st.model = d.V
		case d.ID == "users":
			st.whole = true
		case d.ID == mbPartsID:
			st.parts = &docs[i]
		case strings.HasPrefix(d.ID, mbPartID):
			st.loaded = append(st.loaded, strings.TrimPrefix(d.ID, mbPartID))
		}
	}
	return st, nil
}

// refuse says why part cannot be loaded in model with partitions
// collections per kind: another model, another number of parts or of
// partitions, the dataset loaded whole, or part itself loaded
// (ErrPartLoaded); nil when it can.
func (st mbLoadState) refuse(model microblog.Model, part microblog.Part, partitions int) error {
	switch {
	case st.model != "" && st.model != string(model):
		return fmt.Errorf("mongodb: %w: the database holds (or is being loaded with) the %s model; load the %s model into a fresh database",
			microblog.ErrModelMismatch, st.model, model)
	case st.parts == nil && st.whole:
		return fmt.Errorf("mongodb: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
	case st.parts == nil:
		return nil
	case st.parts.V != strconv.Itoa(part.N):
		return fmt.Errorf("mongodb: part %s: the database holds parts of a load in %s parts, another number of parts: use a fresh database", part, st.parts.V)
	case st.parts.Partitions != partitions:
		return fmt.Errorf("mongodb: part %s: the other parts were loaded with parts=%d collections per kind, this DSN says parts=%d: load every part with the same DSN options",
			part, st.parts.Partitions, partitions)
	case slices.Contains(st.loaded, part.String()):
		return fmt.Errorf("mongodb: part %s (users %d..%d): %w", part, part.First, part.Last, microblog.ErrPartLoaded)
	}
	return nil
}
