package cassandra

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Microblog tables. Userlines and timelines are one partition per user,
// clustered newest first by (time in Unix µs, tweet id), so a read is one
// partition slice with LIMIT. Denormalized and async rows carry author and
// body; normalized rows only the id, and the bodies are fetched from
// mb_tweets by id (one IN query).
var mbTables = []string{
	"mb_meta (k text PRIMARY KEY, v text)",
	"mb_followers (user bigint, follower bigint, PRIMARY KEY (user, follower))",
	"mb_tweets (id bigint PRIMARY KEY, author bigint, us bigint, body text)",
	"mb_userline (user bigint, us bigint, id bigint, author bigint, body text, PRIMARY KEY (user, us, id)) WITH CLUSTERING ORDER BY (us DESC, id DESC)",
	"mb_timeline (user bigint, us bigint, id bigint, author bigint, body text, PRIMARY KEY (user, us, id)) WITH CLUSTERING ORDER BY (us DESC, id DESC)",
	// The async model's queue: one partition, by tweet id.
	"mb_pending (bucket int, id bigint, author bigint, us bigint, body text, PRIMARY KEY (bucket, id))",
	// The parts PopulatePart loaded ("I/N"): one partition, read whole.
	"mb_parts (bucket int, part text, PRIMARY KEY (bucket, part))",
}

const (
	// batchRows is the most statements one batch carries: a post to many
	// followers is split into batches of this size (Cassandra refuses
	// batches over batch_size_fail_threshold, 50 KiB by default).
	batchRows = 200
	// loadRows is the rows of one single-partition batch while loading.
	loadRows = 100
	// materializeBatch is the most pending tweets one pass fans out.
	materializeBatch = 512
)

type mbStore struct {
	db    *DB
	model microblog.Model
	reads microblog.BodyReads // normalized lines: one WHERE id IN, or a SELECT per tweet
	mu    sync.Mutex          // one MaterializeOnce at a time (async)
	// readCL, when set, is the consistency of userline and timeline reads
	// instead of the session's (Strong's view reads at ALL).
	readCL *gocql.Consistency
}

// Strong implements microblog.StrongReader: a view reading at ALL, whose
// coordinator merges every replica's rows, so a post held by any one
// running replica is found (the read fails when a replica is down).
func (s *mbStore) Strong() (microblog.Store, string) {
	all := gocql.All
	return &strongView{&mbStore{db: s.db, model: s.model, reads: s.reads, readCL: &all}}, all.String()
}

// strongView is a read view: Close leaves the shared session open.
type strongView struct{ *mbStore }

// Close implements microblog.Store: nothing of its own to close.
func (strongView) Close() error { return nil }

// query applies the store's read consistency, when it has one, to q.
func (s *mbStore) query(q *gocql.Query) *gocql.Query {
	if s.readCL != nil {
		return q.Consistency(*s.readCL)
	}
	return q
}

// SetBodyReads implements microblog.BodyReader.
func (s *mbStore) SetBodyReads(r microblog.BodyReads) { s.reads = r }

type mbAsync struct{ *mbStore }

var (
	_ microblog.Store        = (*mbStore)(nil)
	_ microblog.Materializer = (*mbAsync)(nil)
	_ microblog.BodyReader   = (*mbStore)(nil)
	_ microblog.StrongReader = (*mbStore)(nil)
)

// tableExists asks the schema (so that Info on a fresh keyspace does not
// create tables).
func (db *DB) tableExists(ctx context.Context, table string) (bool, error) {
	var name string
	err := db.s.Query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?", db.ks, table).ScanContext(ctx, &name)
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// MicroblogModel implements microblog.Backend: the model Populate
// recorded, "" when none was loaded.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	if ok, err := db.tableExists(ctx, "mb_meta"); err != nil || !ok {
		return "", err
	}
	var m string
	err := db.s.Query("SELECT v FROM "+db.t("mb_meta")+" WHERE k = 'model'").ScanContext(ctx, &m)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cassandra: read microblog model: %w", err)
	}
	return microblog.Model(m), nil
}

// Microblog implements microblog.Backend: it creates the tables when
// absent; a keyspace loaded with another model is refused.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("cassandra: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := db.createTables(ctx, mbTables...); err != nil {
		return nil, err
	}
	if err := microblog.CheckLoaded(ctx, db, "cassandra", model, "keyspace"); err != nil {
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
	return fmt.Errorf("cassandra %s: "+format, append([]any{s.model}, args...)...)
}

// followers reads user's followers (one partition).
func (s *mbStore) followers(ctx context.Context, user int64) ([]int64, error) {
	it := s.db.s.Query("SELECT follower FROM "+s.db.t("mb_followers")+" WHERE user = ?", user).PageSize(10000).IterContext(ctx)
	var out []int64
	var f int64
	for it.Scan(&f) {
		out = append(out, f)
	}
	return out, it.Close()
}

// lineRow is the INSERT of a userline or timeline row.
func (s *mbStore) lineInsert(table string) string {
	if s.model == microblog.Normalized {
		return "INSERT INTO " + s.db.t(table) + " (user, us, id) VALUES (?, ?, ?)"
	}
	return "INSERT INTO " + s.db.t(table) + " (user, us, id, author, body) VALUES (?, ?, ?, ?, ?)"
}

func (s *mbStore) lineArgs(user int64, t microblog.Tweet) []any {
	if s.model == microblog.Normalized {
		return []any{user, t.Time.UnixMicro(), t.ID}
	}
	return []any{user, t.Time.UnixMicro(), t.ID, t.Author, t.Body}
}

// stmt is one statement of a batch.
type stmt struct {
	q    string
	args []any
}

// execBatches runs stmts as batches of at most batchRows, one after the
// other (the first carries the tweet itself).
func (s *mbStore) execBatches(ctx context.Context, typ gocql.BatchType, stmts []stmt) error {
	for i := 0; i < len(stmts); i += batchRows {
		b := s.db.s.Batch(typ)
		for _, st := range stmts[i:min(i+batchRows, len(stmts))] {
			b.Query(st.q, st.args...)
		}
		if err := b.ExecContext(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Post implements microblog.Store. One round trip, two requests in
// parallel: the author's followers (not for async) and whether the id
// exists (a duplicate is an error; the check is a read before the write,
// not a lightweight transaction, as the study's Cassandra used none). Then
// one batch — logged unless the DSN says batch=unlogged — with the tweet,
// the userline row and one timeline row per follower (denormalized) or the
// pending row (async). Normalized writes the tweet first and then the
// batch of line rows, since those hold only the id. A post to more than
// 200 followers is split into several batches.
func (s *mbStore) Post(ctx context.Context, t microblog.Tweet) error {
	var (
		fr     []int64
		frErr  error
		exists bool
		exErr  error
		wg     sync.WaitGroup
	)
	if s.model != microblog.Async {
		wg.Add(1)
		go func() { defer wg.Done(); fr, frErr = s.followers(ctx, t.Author) }()
	}
	var id int64
	exErr = s.db.s.Query("SELECT id FROM "+s.db.t("mb_tweets")+" WHERE id = ?", t.ID).ScanContext(ctx, &id)
	if exErr == nil {
		exists = true
	} else if errors.Is(exErr, gocql.ErrNotFound) {
		exErr = nil
	}
	wg.Wait()
	if err := errors.Join(frErr, exErr); err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	if exists {
		return s.errf("post: tweet %d already exists", t.ID)
	}
	us := t.Time.UnixMicro()
	stmts := []stmt{
		{"INSERT INTO " + s.db.t("mb_tweets") + " (id, author, us, body) VALUES (?, ?, ?, ?)", []any{t.ID, t.Author, us, t.Body}},
		{s.lineInsert("mb_userline"), s.lineArgs(t.Author, t)},
	}
	if s.model == microblog.Async {
		stmts = append(stmts, stmt{"INSERT INTO " + s.db.t("mb_pending") + " (bucket, id, author, us, body) VALUES (0, ?, ?, ?, ?)", []any{t.ID, t.Author, us, t.Body}})
	}
	for _, f := range fr {
		stmts = append(stmts, stmt{s.lineInsert("mb_timeline"), s.lineArgs(f, t)})
	}
	typ := gocql.UnloggedBatch
	if s.db.cfg.Logged {
		typ = gocql.LoggedBatch
	}
	if s.model == microblog.Normalized {
		// A batch is atomic but not isolated: a reader can see its rows of
		// one partition before those of another. A normalized line row
		// holds only an id, so the tweet goes first, on its own; a line
		// row seen is then a tweet that can be fetched, as in Twissandra.
		if err := s.db.s.Query(stmts[0].q, stmts[0].args...).ExecContext(ctx); err != nil {
			return s.errf("post tweet %d: %w", t.ID, err)
		}
		stmts = stmts[1:]
	}
	if err := s.execBatches(ctx, typ, stmts); err != nil {
		return s.errf("post tweet %d: %w", t.ID, err)
	}
	return nil
}

// Userline implements microblog.Store.
func (s *mbStore) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, "mb_userline", user, limit)
}

// Timeline implements microblog.Store.
func (s *mbStore) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return s.read(ctx, "mb_timeline", user, limit)
}

// read is one partition slice; normalized rows are ids whose authors and
// bodies one IN query on mb_tweets fetches.
func (s *mbStore) read(ctx context.Context, table string, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	it := s.query(s.db.s.Query("SELECT us, id, author, body FROM "+s.db.t(table)+" WHERE user = ? LIMIT ?", user, limit)).IterContext(ctx)
	var out []microblog.Tweet
	var us, id int64
	var author *int64
	var body *string
	for it.Scan(&us, &id, &author, &body) {
		t := microblog.Tweet{ID: id, Time: time.UnixMicro(us).UTC()}
		if author != nil {
			t.Author = *author
		}
		if body != nil {
			t.Body = *body
		}
		out = append(out, t)
		author, body = nil, nil
	}
	if err := it.Close(); err != nil {
		return nil, s.errf("%s: %w", table, err)
	}
	if s.model != microblog.Normalized || len(out) == 0 {
		return out, nil
	}
	ids := make([]int64, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	type ab struct {
		author int64
		body   string
	}
	got := make(map[int64]ab, len(ids))
	if s.reads == microblog.BodyReadsSeparate {
		// The study's way: one single-partition read per tweet, each
		// routed to its own replica, all in flight at once.
		var mu sync.Mutex
		err := s.db.parallel(ctx, len(ids), func(ctx context.Context, i int) error {
			var v ab
			err := s.query(s.db.s.Query("SELECT author, body FROM "+s.db.t("mb_tweets")+" WHERE id = ?", ids[i])).ScanContext(ctx, &v.author, &v.body)
			if errors.Is(err, gocql.ErrNotFound) {
				return nil // named below as missing
			}
			if err != nil {
				return err
			}
			mu.Lock()
			got[ids[i]] = v
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, s.errf("%s bodies: %w", table, err)
		}
	} else {
		it = s.query(s.db.s.Query("SELECT id, author, body FROM "+s.db.t("mb_tweets")+" WHERE id IN ?", ids)).IterContext(ctx)
		var a int64
		var b string
		for it.Scan(&id, &a, &b) {
			got[id] = ab{a, b}
		}
		if err := it.Close(); err != nil {
			return nil, s.errf("%s bodies: %w", table, err)
		}
	}
	for i := range out {
		v, ok := got[out[i].ID]
		if !ok {
			return nil, s.errf("%s: tweet %d is missing", table, out[i].ID)
		}
		out[i].Author, out[i].Body = v.author, v.body
	}
	return out, nil
}

// MaxTweetID implements microblog.Store by scanning the tweet ids (a run
// calls it once; no counter to contend on).
func (s *mbStore) MaxTweetID(ctx context.Context) (int64, error) {
	var mu sync.Mutex
	var best int64
	err := s.db.scan(ctx, "mb_tweets", "id", "id", func(it *gocql.Iter) {
		var id, m int64
		for it.Scan(&id) {
			m = max(m, id)
		}
		mu.Lock()
		best = max(best, m)
		mu.Unlock()
	})
	if err != nil {
		return 0, s.errf("max tweet id: %w", err)
	}
	return best, nil
}

// Counts implements microblog.Store: users and follows as Populate
// recorded them, tweets counted.
func (s *mbStore) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	it := s.db.s.Query("SELECT k, v FROM " + s.db.t("mb_meta")).IterContext(ctx)
	var k, v string
	for it.Scan(&k, &v) {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "users":
			c.Users = n
		case "follows":
			c.Follows = n
		}
	}
	if err := it.Close(); err != nil {
		return c, s.errf("counts: %w", err)
	}
	n, err := s.db.count(ctx, "mb_tweets", "id")
	if err != nil {
		return c, s.errf("counts: %w", err)
	}
	c.Tweets = n
	return c, nil
}

// populateRetry retries a populate write that timed out or found too few
// replicas. The populate writes are plain inserts of fixed keys, so a retry
// is safe; without it one write timeout on a loaded cluster (seen here: four
// nodes on two busy cores, RF 3 at QUORUM) threw the whole dataset away.
// Measured operations keep the driver's default (no retry): their errors are
// results.
var populateRetry = &gocql.ExponentialBackoffRetryPolicy{NumRetries: 8, Min: 250 * time.Millisecond, Max: 8 * time.Second}

// Populate implements microblog.Store: follower partitions, tweets,
// userlines and fully materialized timelines (async: nothing pending),
// as single-partition unlogged batches of up to 100 rows sent
// concurrently (the DSN's concurrency= in flight).
func (s *mbStore) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return s.errf("populate: nil dataset")
	}
	var one int64
	err := s.db.s.Query("SELECT id FROM "+s.db.t("mb_tweets")+" LIMIT 1").ScanContext(ctx, &one)
	if err == nil {
		return s.errf("populate: the keyspace already holds microblog data; use a fresh keyspace")
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return s.errf("populate: %w", err)
	}
	// Parts whose users wrote no tweet leave mb_tweets empty.
	var part string
	err = s.db.s.Query("SELECT part FROM "+s.db.t("mb_parts")+" WHERE bucket = 0 LIMIT 1").ScanContext(ctx, &part)
	if err == nil {
		return s.errf("populate: the keyspace holds part %s of a load in parts; use a fresh keyspace", part)
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return s.errf("populate: %w", err)
	}
	meta := "INSERT INTO " + s.db.t("mb_meta") + " (k, v) VALUES (?, ?)"
	for _, kv := range [][2]string{{"model", string(s.model)}, {"users", strconv.Itoa(ds.Users)}, {"follows", strconv.Itoa(len(ds.Follows))}} {
		if err := s.db.s.Query(meta, kv[0], kv[1]).ExecContext(ctx); err != nil {
			return s.errf("populate: %w", err)
		}
	}
	if err := s.load(ctx, ds, microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}); err != nil {
		return s.errf("populate: %w", err)
	}
	return nil
}

// load writes part's follower partitions (of its followees), tweets and
// userlines (of its authors) and the timeline rows its tweets make, as
// single-partition unlogged batches of up to 100 rows sent concurrently
// (the DSN's concurrency= in flight). Every write is an insert of a fixed
// key, so parts loaded at the same time never undo each other and a
// retried write is harmless. It holds at most about
// microblog.TimelineRound rows' statements at once (loadJobs), whatever
// the part's size: a part's timeline fan-out alone can be billions of
// rows.
func (s *mbStore) load(ctx context.Context, ds *microblog.Dataset, part microblog.Part) error {
	l := &loadJobs{s: s}
	q := "INSERT INTO " + s.db.t("mb_followers") + " (user, follower) VALUES (?, ?)"
	for u := part.First; u <= part.Last; u++ {
		fs := ds.Followers(u)
		for i := 0; i < len(fs); i += loadRows {
			st := make([]stmt, 0, min(loadRows, len(fs)-i))
			for _, f := range fs[i:min(i+loadRows, len(fs))] {
				st = append(st, stmt{q, []any{u, f}})
			}
			if err := l.add(ctx, st); err != nil {
				return err
			}
		}
	}
	// Tweets one by one; userlines by author, batched within a round.
	tq := "INSERT INTO " + s.db.t("mb_tweets") + " (id, author, us, body) VALUES (?, ?, ?, ?)"
	ul, uln := map[int64][]stmt{}, 0
	flushUL := func() error {
		for _, st := range ul {
			for i := 0; i < len(st); i += loadRows {
				if err := l.add(ctx, st[i:min(i+loadRows, len(st))]); err != nil {
					return err
				}
			}
		}
		clear(ul)
		uln = 0
		return nil
	}
	for _, t := range ds.Tweets {
		if !part.Holds(t.Author) {
			continue
		}
		if err := l.add(ctx, []stmt{{tq, []any{t.ID, t.Author, t.Time.UnixMicro(), t.Body}}}); err != nil {
			return err
		}
		ul[t.Author] = append(ul[t.Author], stmt{s.lineInsert("mb_userline"), s.lineArgs(t.Author, t)})
		if uln++; uln >= microblog.TimelineRound/2 {
			if err := flushUL(); err != nil {
				return err
			}
		}
	}
	if err := flushUL(); err != nil {
		return err
	}
	// Timelines: follower by follower, a batch per follower and round.
	tlq := s.lineInsert("mb_timeline")
	err := ds.TimelineRounds(part, microblog.TimelineRound, func(rows []microblog.TimelineRow) error {
		for i := 0; i < len(rows); {
			j := i + 1
			for j < len(rows) && j-i < loadRows && rows[j].Follower == rows[i].Follower {
				j++
			}
			st := make([]stmt, 0, j-i)
			for _, r := range rows[i:j] {
				st = append(st, stmt{tlq, s.lineArgs(r.Follower, ds.Tweets[r.Tweet])})
			}
			if err := l.add(ctx, st); err != nil {
				return err
			}
			i = j
		}
		return nil
	})
	if err != nil {
		return err
	}
	return l.flush(ctx)
}

// loadJobs gathers a load's single-partition batches and sends them
// (db.parallel) once they hold microblog.TimelineRound rows, so a load
// holds a bounded number of statements (~0.5 kB each with their args)
// however large its part.
type loadJobs struct {
	s    *mbStore
	jobs [][]stmt // each: one partition's rows, at most loadRows
	rows int
}

// add queues one batch (or one statement); the caller must not change
// stmts afterwards.
func (l *loadJobs) add(ctx context.Context, stmts []stmt) error {
	l.jobs = append(l.jobs, stmts)
	l.rows += len(stmts)
	if l.rows >= microblog.TimelineRound {
		return l.flush(ctx)
	}
	return nil
}

// flush sends the queued batches and forgets them.
func (l *loadJobs) flush(ctx context.Context) error {
	jobs := l.jobs
	err := l.s.db.parallel(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		if len(j) == 1 {
			return l.s.db.s.Query(j[0].q, j[0].args...).Idempotent(true).RetryPolicy(populateRetry).ExecContext(ctx)
		}
		b := l.s.db.s.Batch(gocql.UnloggedBatch)
		for _, st := range j {
			b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: st.q, Args: st.args, Idempotent: true})
		}
		return b.RetryPolicy(populateRetry).ExecContext(ctx)
	})
	clear(l.jobs)
	l.jobs, l.rows = l.jobs[:0], 0
	return err
}

// MaterializeOnce implements microblog.Materializer: it reads up to 512
// pending tweets (oldest ids first), fans each out to its author's
// followers' timelines (batches of up to 200 rows) and deletes the pending
// rows. The queue is one partition whose deletions leave tombstones until
// compaction: fine for a benchmark's run, not for a production queue.
func (s *mbAsync) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.db.s.Query("SELECT id, author, us, body FROM "+s.db.t("mb_pending")+" WHERE bucket = 0 LIMIT ?", materializeBatch).IterContext(ctx)
	var pending []microblog.Tweet
	var id, author, us int64
	var body string
	for it.Scan(&id, &author, &us, &body) {
		pending = append(pending, microblog.Tweet{ID: id, Author: author, Time: time.UnixMicro(us).UTC(), Body: body})
	}
	if err := it.Close(); err != nil {
		return nil, s.errf("read pending: %w", err)
	}
	if len(pending) == 0 {
		return nil, nil
	}
	done := make([]microblog.Materialized, len(pending))
	err := s.db.parallel(ctx, len(pending), func(ctx context.Context, i int) error {
		t := pending[i]
		fr, err := s.followers(ctx, t.Author)
		if err != nil {
			return err
		}
		stmts := make([]stmt, 0, len(fr))
		for _, f := range fr {
			stmts = append(stmts, stmt{s.lineInsert("mb_timeline"), s.lineArgs(f, t)})
		}
		if err := s.execBatches(ctx, gocql.UnloggedBatch, stmts); err != nil {
			return err
		}
		if err := s.db.s.Query("DELETE FROM "+s.db.t("mb_pending")+" WHERE bucket = 0 AND id = ?", t.ID).ExecContext(ctx); err != nil {
			return err
		}
		done[i] = microblog.Materialized{TweetID: t.ID, PostedAt: t.Time}
		return nil
	})
	if err != nil {
		return nil, s.errf("materialize: %w", err)
	}
	return done, nil
}
