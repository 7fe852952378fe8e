package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog keys. A user's follower set, userline and timeline share the
// hash tag {u:ID}, so they live on one node; tweets are spread by id; the
// few bookkeeping keys share {mb}.
//
//	mb:{u:ID}:fr   set of follower ids
//	mb:{u:ID}:ul   userline, sorted set
//	mb:{u:ID}:tl   timeline, sorted set
//	mb:t:ID        tweet hash: a (author), t (time, Unix µs), b (body)
//	mb:{mb}:model  the data model the database was loaded with
//	mb:{mb}:counts hash: users, follows (set by Populate)
//	mb:{mb}:pending list of tweet ids not yet materialized (async)
//
// Userline and timeline entries are scored by the tweet's time in Unix
// microseconds (below 2^53, so exact in a double). Their members start with
// the tweet id zero-padded to 19 digits: entries of equal time are ordered
// by member bytes, so a reverse range returns them by id descending, which
// is the workload's order (time, then id, newest first). Denormalized and
// async members carry the author and body after the id ("id|author|body");
// normalized members are the id alone and bodies are fetched from the
// tweet hashes.
const (
	mbModelKey   = "mb:{mb}:model"
	mbCountsKey  = "mb:{mb}:counts"
	mbPendingKey = "mb:{mb}:pending"
)

func mbFollowers(u int64) string { return "mb:{u:" + strconv.FormatInt(u, 10) + "}:fr" }
func mbUserline(u int64) string  { return "mb:{u:" + strconv.FormatInt(u, 10) + "}:ul" }
func mbTimeline(u int64) string  { return "mb:{u:" + strconv.FormatInt(u, 10) + "}:tl" }
func mbTweet(id int64) string    { return "mb:t:" + strconv.FormatInt(id, 10) }

// materializeBatch is the most pending tweets one MaterializeOnce fans out.
const materializeBatch = 512

// pipeChunk is how many commands a loading pipeline sends before it waits
// for the answers.
const pipeChunk = 2000

// createTweet stores the tweet hash unless the id exists (a duplicate id is
// an error, not an overwrite): one key, so it is atomic in a cluster too.
var createTweet = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'a', ARGV[1], 't', ARGV[2], 'b', ARGV[3])
return 1`)

func member(t microblog.Tweet, withBody bool) string {
	id := fmt.Sprintf("%019d", t.ID)
	if !withBody {
		return id
	}
	return id + "|" + strconv.FormatInt(t.Author, 10) + "|" + t.Body
}

// parseMember decodes an entry of a userline or timeline.
func parseMember(m string, score float64) (microblog.Tweet, error) {
	var t microblog.Tweet
	idS, rest, withBody := strings.Cut(m, "|")
	id, err := strconv.ParseInt(idS, 10, 64)
	if err != nil {
		return t, fmt.Errorf("bad entry %.40q: %w", m, err)
	}
	t.ID, t.Time = id, time.UnixMicro(int64(score)).UTC()
	if withBody {
		a, body, _ := strings.Cut(rest, "|")
		if t.Author, err = strconv.ParseInt(a, 10, 64); err != nil {
			return t, fmt.Errorf("bad entry %.40q: %w", m, err)
		}
		t.Body = body
	}
	return t, nil
}

type mbStore struct {
	db    *DB
	model microblog.Model
	mu    sync.Mutex // one MaterializeOnce at a time (async)
}

type mbAsync struct{ *mbStore }

var (
	_ microblog.Store        = (*mbStore)(nil)
	_ microblog.Materializer = (*mbAsync)(nil)
)

// MicroblogModel implements microblog.Backend.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	m, err := db.rdb.Get(ctx, mbModelKey).Result()
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("redis: read microblog model: %w", err)
	}
	has, err := db.hasMicroblogData(ctx)
	if err != nil || !has {
		return "", err
	}
	return microblog.Model(m), nil
}

func (db *DB) hasMicroblogData(ctx context.Context) (bool, error) {
	n, err := db.rdb.Exists(ctx, mbCountsKey).Result()
	if err != nil {
		return false, fmt.Errorf("redis: check microblog data: %w", err)
	}
	if n > 0 {
		return true, nil
	}
	found := false
	err = db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		keys, _, err := c.Scan(ctx, 0, "mb:t:*", 1000).Result()
		if len(keys) > 0 {
			found = true
		}
		return err
	})
	// A first SCAN page can be empty while keys exist further on: check
	// fully only when needed.
	if err == nil && !found {
		var total int64
		total, err = db.countKeys(ctx, "mb:t:*")
		found = total > 0
	}
	return found, err
}

// countKeys counts keys matching pattern over every master.
func (db *DB) countKeys(ctx context.Context, pattern string) (int64, error) {
	var mu sync.Mutex
	var total int64
	err := db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		return scanKeys(ctx, c, pattern, func(keys []string) error {
			mu.Lock()
			total += int64(len(keys))
			mu.Unlock()
			return nil
		})
	})
	return total, err
}

// Microblog implements microblog.Backend. A database loaded with another
// model is refused (microblog.ErrModelMismatch); an empty one is switched.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("redis: %w: %w", adapter.ErrUnsupported, err)
	}
	have, err := db.MicroblogModel(ctx)
	if err != nil {
		return nil, err
	}
	if err := microblog.CheckModel("redis", have, model, "database"); err != nil {
		return nil, err
	}
	if have == "" {
		if err := db.scanDelete(ctx, "mb:*"); err != nil {
			return nil, fmt.Errorf("redis: clear empty microblog keys: %w", err)
		}
		if err := db.rdb.Set(ctx, mbModelKey, string(model), 0).Err(); err != nil {
			return nil, fmt.Errorf("redis: record microblog model: %w", err)
		}
	}
	s := &mbStore{db: db, model: model}
	if model == microblog.Async {
		return &mbAsync{s}, nil
	}
	return s, nil
}

// Close implements microblog.Store; the DB stays open.
func (s *mbStore) Close() error { return nil }

// Post implements microblog.Store. One round trip reads the author's
// followers and creates the tweet hash (refusing a duplicate id); a second
// pipelines the userline entry and one timeline entry per follower
// (denormalized and normalized), or the userline entry and the pending id
// (async). The second step touches many slots and is a pipeline, not a
// transaction: if it fails half way, some timelines have the tweet and
// others not, and the error is returned.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	us := t.Time.UnixMicro()
	p := s.db.rdb.Pipeline()
	var fr *goredis.StringSliceCmd
	if s.model != microblog.Async {
		fr = p.SMembers(ctx, mbFollowers(t.Author))
	}
	created := createTweet.Eval(ctx, p, []string{mbTweet(t.ID)}, t.Author, us, t.Body)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redis %s: post tweet %d: %w", s.model, t.ID, err)
	}
	if ok, _ := created.Int(); ok != 1 {
		return fmt.Errorf("redis %s: post: tweet %d already exists", s.model, t.ID)
	}
	denorm := s.model != microblog.Normalized
	z := goredis.Z{Score: float64(us), Member: member(t, denorm)}
	p = s.db.rdb.Pipeline()
	p.ZAdd(ctx, mbUserline(t.Author), z)
	if s.model == microblog.Async {
		p.RPush(ctx, mbPendingKey, t.ID)
	} else {
		for _, f := range fr.Val() {
			p.ZAdd(ctx, "mb:{u:"+f+"}:tl", z)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redis %s: fan out tweet %d: %w", s.model, t.ID, err)
	}
	return nil
}

// Userline implements microblog.Store.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, "userline", mbUserline(user), limit)
}

// Timeline implements microblog.Store.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, "timeline", mbTimeline(user), limit)
}

// read is one ZREVRANGE; normalized entries are ids whose bodies a
// pipeline of HMGETs fetches (one round trip per node, in parallel).
func (s *mbStore) read(ctx context.Context, what, key string, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	zs, err := s.db.rdb.ZRevRangeWithScores(ctx, key, 0, int64(limit-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis %s: %s: %w", s.model, what, err)
	}
	if len(zs) == 0 {
		return nil, nil
	}
	out := make([]microblog.Tweet, len(zs))
	for i, z := range zs {
		if out[i], err = parseMember(z.Member.(string), z.Score); err != nil {
			return nil, fmt.Errorf("redis %s: %s: %w", s.model, what, err)
		}
	}
	if s.model != microblog.Normalized {
		return out, nil
	}
	p := s.db.rdb.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(out))
	for i := range out {
		cmds[i] = p.HMGet(ctx, mbTweet(out[i].ID), "a", "b")
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis %s: %s bodies: %w", s.model, what, err)
	}
	for i, c := range cmds {
		v := c.Val()
		a, _ := v[0].(string)
		b, ok := v[1].(string)
		if !ok {
			return nil, fmt.Errorf("redis %s: %s: tweet %d is missing", s.model, what, out[i].ID)
		}
		out[i].Author, _ = strconv.ParseInt(a, 10, 64)
		out[i].Body = b
	}
	return out, nil
}

// MaxTweetID implements microblog.Store by scanning the tweet keys of every
// master (no counter on a hot key; a run calls it once).
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	var mu sync.Mutex
	var best int64
	err := s.db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		return scanKeys(ctx, c, "mb:t:*", func(keys []string) error {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if id, err := strconv.ParseInt(strings.TrimPrefix(k, "mb:t:"), 10, 64); err == nil {
					best = max(best, id)
				}
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("redis %s: max tweet id: %w", s.model, err)
	}
	return best, nil
}

// Counts implements microblog.Store: users and follows as Populate recorded
// them, tweets by counting the tweet keys.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	vals, err := s.db.rdb.HMGet(ctx, mbCountsKey, "users", "follows").Result()
	if err != nil {
		return c, fmt.Errorf("redis %s: counts: %w", s.model, err)
	}
	if v, ok := vals[0].(string); ok {
		c.Users, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := vals[1].(string); ok {
		c.Follows, _ = strconv.ParseInt(v, 10, 64)
	}
	if c.Tweets, err = s.db.countKeys(ctx, "mb:t:*"); err != nil {
		return c, fmt.Errorf("redis %s: count tweets: %w", s.model, err)
	}
	return c, nil
}

// loader sends commands in pipelines of pipeChunk.
type loader struct {
	ctx context.Context
	db  *DB
	p   goredis.Pipeliner
	n   int
}

func (l *loader) add(f func(p goredis.Pipeliner)) error {
	if l.p == nil {
		l.p = l.db.rdb.Pipeline()
	}
	f(l.p)
	l.n++
	if l.n >= pipeChunk {
		return l.flush()
	}
	return nil
}

func (l *loader) flush() error {
	if l.p == nil || l.n == 0 {
		return nil
	}
	_, err := l.p.Exec(l.ctx)
	l.p, l.n = nil, 0
	return err
}

// Populate implements microblog.Store: follower sets, tweet hashes,
// userlines and fully materialized timelines, in pipelines (async: nothing
// pending).
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return fmt.Errorf("redis %s: populate: nil dataset", s.model)
	}
	if has, err := s.db.hasMicroblogData(ctx); err != nil {
		return err
	} else if has {
		return fmt.Errorf("redis %s: populate: the database already holds microblog data; use a fresh database", s.model)
	}
	l := &loader{ctx: ctx, db: s.db}
	if err := loadMicroblog(ctx, l, s.model, ds, microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}); err != nil {
		return err
	}
	if err := l.add(func(p goredis.Pipeliner) {
		p.HSet(ctx, mbCountsKey, "users", ds.Users, "follows", len(ds.Follows))
		p.Set(ctx, mbModelKey, string(s.model), 0)
	}); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return fmt.Errorf("redis %s: populate: %w", s.model, err)
	}
	return nil
}

// loadMicroblog queues part's follower sets (of its followees), tweet
// hashes and userlines (of its authors) and the timeline entries its
// tweets make; every command adds to a set or sorted set, so parts loaded
// at the same time never undo each other.
func loadMicroblog(ctx context.Context, l *loader, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	for u := part.First; u <= part.Last; u++ {
		fs := ds.Followers(u)
		for i := 0; i < len(fs); i += 500 {
			chunk := make([]any, 0, min(500, len(fs)-i))
			for _, f := range fs[i:min(i+500, len(fs))] {
				chunk = append(chunk, f)
			}
			if err := l.add(func(p goredis.Pipeliner) { p.SAdd(ctx, mbFollowers(u), chunk...) }); err != nil {
				return fmt.Errorf("redis %s: load follows: %w", model, err)
			}
		}
	}
	denorm := model != microblog.Normalized
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		us := t.Time.UnixMicro()
		z := goredis.Z{Score: float64(us), Member: member(t, denorm)}
		if err := l.add(func(p goredis.Pipeliner) {
			p.HSet(ctx, mbTweet(t.ID), "a", t.Author, "t", us, "b", t.Body)
			p.ZAdd(ctx, mbUserline(t.Author), z)
		}); err != nil {
			return fmt.Errorf("redis %s: load tweets: %w", model, err)
		}
	}
	// Timelines in rounds of microblog.TimelineRound rows, follower by
	// follower: one ZADD per follower and round (up to 500 members), so
	// the memory stays bounded whatever the part's fan-out.
	err := ds.TimelineRounds(part, microblog.TimelineRound, func(rows []microblog.TimelineRow) error {
		for i := 0; i < len(rows); {
			j := i + 1
			for j < len(rows) && j-i < 500 && rows[j].Follower == rows[i].Follower {
				j++
			}
			u, zs := rows[i].Follower, make([]goredis.Z, 0, j-i)
			for _, r := range rows[i:j] {
				t := ds.Tweets[r.Tweet]
				zs = append(zs, goredis.Z{Score: float64(t.Time.UnixMicro()), Member: member(t, denorm)})
			}
			if err := l.add(func(p goredis.Pipeliner) { p.ZAdd(ctx, mbTimeline(u), zs...) }); err != nil {
				return err
			}
			i = j
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis %s: load timelines: %w", model, err)
	}
	return nil
}

// mbPartsKey is the set of the parts loaded ("I/N") by PopulatePart.
const mbPartsKey = "mb:{mb}:parts"

var _ microblog.PartLoader = (*DB)(nil)

// PopulatePart implements microblog.PartLoader. It never clears keys (as
// opening a store of an empty database does: another part may be loading
// now); it records the model unless one is recorded, records the part in
// a set once its commands are answered, and the part that finds every
// part recorded writes the counts that mark the dataset whole (two
// finishing at once both write the same).
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("redis: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	parts, err := db.rdb.SMembers(ctx, mbPartsKey).Result()
	if err != nil {
		return fmt.Errorf("redis: read loaded parts: %w", err)
	}
	if err := part.CheckRecorded(parts); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if len(parts) == 0 {
		if n, err := db.rdb.Exists(ctx, mbCountsKey).Result(); err != nil {
			return fmt.Errorf("redis: check microblog data: %w", err)
		} else if n > 0 {
			return fmt.Errorf("redis: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
		}
	}
	if _, err := db.rdb.SetNX(ctx, mbModelKey, string(model), 0).Result(); err != nil {
		return fmt.Errorf("redis: record microblog model: %w", err)
	}
	if have, err := db.rdb.Get(ctx, mbModelKey).Result(); err != nil {
		return fmt.Errorf("redis: read microblog model: %w", err)
	} else if have != string(model) {
		return fmt.Errorf("redis: %w: the database holds (or is being loaded with) the %s model; load the %s model into a fresh database", microblog.ErrModelMismatch, have, model)
	}
	l := &loader{ctx: ctx, db: db}
	if err := loadMicroblog(ctx, l, model, ds, part); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return fmt.Errorf("redis %s: load part %s: %w", model, part, err)
	}
	if err := db.rdb.SAdd(ctx, mbPartsKey, part.String()).Err(); err != nil {
		return fmt.Errorf("redis: record part %s: %w", part, err)
	}
	n, err := db.rdb.SCard(ctx, mbPartsKey).Result()
	if err != nil {
		return fmt.Errorf("redis: count loaded parts: %w", err)
	}
	if n == int64(part.N) {
		if err := db.rdb.HSet(ctx, mbCountsKey, "users", ds.Users, "follows", ds.Whole().Follows).Err(); err != nil {
			return fmt.Errorf("redis: record the whole dataset's counts: %w", err)
		}
	}
	return nil
}

// MaterializeOnce implements microblog.Materializer: it reads up to
// materializeBatch ids from the head of the pending list, copies each tweet
// into the timeline of every current follower of its author, and only then
// trims them from the list. A crash in between leaves them pending, and
// redoing them is harmless (ZADD of the same entry). One pass at a time per
// store (the workload runs one materializer).
func (s *mbAsync) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.db.rdb.LRange(ctx, mbPendingKey, 0, materializeBatch-1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis async: read pending: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	p := s.db.rdb.Pipeline()
	tw := make([]*goredis.SliceCmd, len(ids))
	for i, id := range ids {
		tw[i] = p.HMGet(ctx, "mb:t:"+id, "a", "t", "b")
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis async: read pending tweets: %w", err)
	}
	tweets := make([]microblog.Tweet, 0, len(ids))
	authors := map[int64]*goredis.StringSliceCmd{}
	p = s.db.rdb.Pipeline()
	for i, c := range tw {
		v := c.Val()
		a, _ := v[0].(string)
		ts, _ := v[1].(string)
		b, ok := v[2].(string)
		if !ok {
			return nil, fmt.Errorf("redis async: pending tweet %s is missing", ids[i])
		}
		var t microblog.Tweet
		t.ID, _ = strconv.ParseInt(ids[i], 10, 64)
		t.Author, _ = strconv.ParseInt(a, 10, 64)
		us, _ := strconv.ParseInt(ts, 10, 64)
		t.Time, t.Body = time.UnixMicro(us).UTC(), b
		tweets = append(tweets, t)
		if authors[t.Author] == nil {
			authors[t.Author] = p.SMembers(ctx, mbFollowers(t.Author))
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis async: read followers: %w", err)
	}
	l := &loader{ctx: ctx, db: s.db}
	out := make([]microblog.Materialized, len(tweets))
	for i, t := range tweets {
		z := goredis.Z{Score: float64(t.Time.UnixMicro()), Member: member(t, true)}
		for _, f := range authors[t.Author].Val() {
			if err := l.add(func(p goredis.Pipeliner) { p.ZAdd(ctx, "mb:{u:"+f+"}:tl", z) }); err != nil {
				return nil, fmt.Errorf("redis async: fan out: %w", err)
			}
		}
		out[i] = microblog.Materialized{TweetID: t.ID, PostedAt: t.Time}
	}
	if err := l.flush(); err != nil {
		return nil, fmt.Errorf("redis async: fan out: %w", err)
	}
	// Only once every timeline has them: the list's head is ours (posts
	// push at its tail).
	if err := s.db.rdb.LTrim(ctx, mbPendingKey, int64(len(ids)), -1).Err(); err != nil {
		return nil, fmt.Errorf("redis async: trim pending: %w", err)
	}
	return out, nil
}
