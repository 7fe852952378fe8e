package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/fieldbench/fieldbench/internal/sqlmodel"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// fanoutRows is how many timeline rows one multi-row INSERT of a post's
// fan-out carries (5 parameters a row, far below SQLite's 32766 limit).
const fanoutRows = 64

// loadRows is how many rows one multi-row INSERT of Populate carries.
const loadRows = 256

// materializeBatch is the most tweets one MaterializeOnce pass fans out, so
// that a pass does not hold the single writer connection for long.
const materializeBatch = 512

// store is the microblog.Store of the denormalized and normalized models and
// the base of the async one.
type store struct {
	sqlmodel.Reads
	db *DB

	// reader pool
	followers *sql.Stmt
	userline  *sql.Stmt
	timeline  *sql.Stmt
	maxID     *sql.Stmt

	// writer pool
	insTweet     *sql.Stmt
	insUserline  *sql.Stmt   // nil for async
	insTimeline  *sql.Stmt   // one row; nil for async
	insTimelineN *sql.Stmt   // fanoutRows rows; nil for async
	stmts        []*sql.Stmt // everything above, for Close
}

// asyncStore adds the materializer to the async model's store.
type asyncStore struct{ *store }

var (
	_ microblog.Store        = (*store)(nil)
	_ microblog.Store        = (*asyncStore)(nil)
	_ microblog.Materializer = (*asyncStore)(nil)
)

// param is SQLite's placeholder: "?".
func param(int) string { return "?" }

// values returns "(?,?,?),(?,?,?)" for rows rows of cols columns.
func values(cols, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
}

func newStore(ctx context.Context, db *DB, model microblog.Model) (_ *store, err error) {
	s := &store{db: db}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	prep := func(pool *sql.DB, dst **sql.Stmt, q string) error {
		st, err := pool.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare %s statement %q: %w", model, q, err)
		}
		*dst = st
		s.stmts = append(s.stmts, st)
		return nil
	}
	type ps struct {
		pool *sql.DB
		dst  **sql.Stmt
		q    string
	}
	list := []ps{
		{db.r, &s.followers, sqlmodel.FollowersSQL(param)},
		{db.r, &s.maxID, sqlmodel.MaxTweetIDSQL},
	}
	userline, timeline := sqlmodel.LineSQL(model, param)
	list = append(list, ps{db.r, &s.userline, userline}, ps{db.r, &s.timeline, timeline})
	switch model {
	case microblog.Denormalized:
		list = append(list,
			ps{db.w, &s.insTweet, `insert into tweets (id, author, time, body) values (?, ?, ?, ?)`},
			ps{db.w, &s.insUserline, `insert into userline (owner, time, tweet_id, body) values (?, ?, ?, ?)`},
			ps{db.w, &s.insTimeline, `insert into timeline (owner, time, tweet_id, author, body) values ` + values(5, 1)},
			ps{db.w, &s.insTimelineN, `insert into timeline (owner, time, tweet_id, author, body) values ` + values(5, fanoutRows)},
		)
	case microblog.Normalized:
		list = append(list,
			ps{db.w, &s.insTweet, `insert into tweets (id, author, time, body) values (?, ?, ?, ?)`},
			ps{db.w, &s.insUserline, `insert into userline (owner, time, tweet_id) values (?, ?, ?)`},
			ps{db.w, &s.insTimeline, `insert into timeline (owner, time, tweet_id) values ` + values(3, 1)},
			ps{db.w, &s.insTimelineN, `insert into timeline (owner, time, tweet_id) values ` + values(3, fanoutRows)},
		)
	case microblog.Async:
		list = append(list,
			ps{db.w, &s.insTweet, `insert into tweets (id, author, time, body, pending) values (?, ?, ?, ?, 1)`},
		)
	default:
		return nil, fmt.Errorf("sqlite: unknown microblog model %q", model)
	}
	for _, p := range list {
		if err := prep(p.pool, p.dst, p.q); err != nil {
			return nil, err
		}
	}
	s.Reads = sqlmodel.Reads{
		Name:  "sqlite " + string(model),
		Model: model,
		Lines: func(ctx context.Context, tl bool, user int64, limit int) (sqlmodel.Rows, error) {
			if tl {
				return s.timeline.QueryContext(ctx, user, limit)
			}
			return s.userline.QueryContext(ctx, user, limit)
		},
		MaxID: func(ctx context.Context) sqlmodel.Row { return s.maxID.QueryRowContext(ctx) },
	}
	return s, nil
}

// Close releases the store's prepared statements; the DB stays open.
func (s *store) Close() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	return errors.Join(errs...)
}

// writeTx runs fn in one write transaction on the writer connection.
func (s *store) writeTx(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite %s: begin %s: %w", s.Model, what, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite %s: commit %s: %w", s.Model, what, err)
	}
	return nil
}

func (s *store) followersOf(ctx context.Context, author int64) ([]int64, error) {
	rows, err := s.followers.QueryContext(ctx, author)
	return sqlmodel.Followers(s.Name, author, rows, err)
}

// Post implements microblog.Store. Denormalized and normalized: read the
// author's followers, then write the tweet, the userline row and one
// timeline row per follower in one transaction. Async: see asyncStore.Post.
func (s *store) Post(ctx context.Context, t microblog.Tweet) error {
	followers, err := s.followersOf(ctx, t.Author)
	if err != nil {
		return err
	}
	us := t.Time.UnixMicro()
	denorm := s.Model == microblog.Denormalized
	return s.writeTx(ctx, "post", func(tx *sql.Tx) error {
		if _, err := tx.StmtContext(ctx, s.insTweet).ExecContext(ctx, t.ID, t.Author, us, t.Body); err != nil {
			return fmt.Errorf("sqlite %s: insert tweet %d: %w", s.Model, t.ID, err)
		}
		var err error
		if denorm {
			_, err = tx.StmtContext(ctx, s.insUserline).ExecContext(ctx, t.Author, us, t.ID, t.Body)
		} else {
			_, err = tx.StmtContext(ctx, s.insUserline).ExecContext(ctx, t.Author, us, t.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlite %s: insert userline row of tweet %d: %w", s.Model, t.ID, err)
		}
		if len(followers) == 0 {
			return nil
		}
		cols := 3
		if denorm {
			cols = 5
		}
		args := make([]any, 0, min(len(followers), fanoutRows)*cols)
		var many *sql.Stmt
		for i, f := range followers {
			if denorm {
				args = append(args, f, us, t.ID, t.Author, t.Body)
			} else {
				args = append(args, f, us, t.ID)
			}
			if len(args) < fanoutRows*cols && i < len(followers)-1 {
				continue
			}
			if len(args) == fanoutRows*cols {
				if many == nil {
					many = tx.StmtContext(ctx, s.insTimelineN)
				}
				_, err = many.ExecContext(ctx, args...)
			} else {
				one := tx.StmtContext(ctx, s.insTimeline)
				for j := 0; j < len(args) && err == nil; j += cols {
					_, err = one.ExecContext(ctx, args[j:j+cols]...)
				}
			}
			if err != nil {
				return fmt.Errorf("sqlite %s: insert timeline rows of tweet %d: %w", s.Model, t.ID, err)
			}
			args = args[:0]
		}
		return nil
	})
}

// Post implements microblog.Store for the async model: one insert of the
// tweet, flagged pending for the materializer.
func (s *asyncStore) Post(ctx context.Context, t microblog.Tweet) error {
	if _, err := s.insTweet.ExecContext(ctx, t.ID, t.Author, t.Time.UnixMicro(), t.Body); err != nil {
		return fmt.Errorf("sqlite %s: insert tweet %d: %w", s.Model, t.ID, err)
	}
	return nil
}

// Counts implements microblog.Store.
func (s *store) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	for _, x := range []struct {
		table string
		dst   *int64
	}{{"users", &c.Users}, {"follows", &c.Follows}, {"tweets", &c.Tweets}} {
		if err := s.db.r.QueryRowContext(ctx, "select count(*) from "+x.table).Scan(x.dst); err != nil {
			return microblog.Counts{}, fmt.Errorf("sqlite %s: count %s: %w", s.Model, x.table, err)
		}
	}
	return c, nil
}

// MaterializeOnce implements microblog.Materializer: in one write
// transaction it takes up to materializeBatch pending tweets (lowest ids
// first), copies each into the timeline of every current follower of its
// author, and clears their pending flag. Because the flag is set by the
// same insert that stores the tweet, a tweet committed out of id order is
// still found by a later pass.
func (s *asyncStore) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	return sqlmodel.Pass{
		Name: "sqlite async",
		InTx: func(ctx context.Context, fn func(sqlmodel.Tx) error) error {
			return s.writeTx(ctx, "materialize", func(tx *sql.Tx) error { return fn(sqlmodel.SQLTx(tx)) })
		},
		Pending: `select id, time from tweets where pending = 1 order by id limit ?`,
		Batch:   materializeBatch,
		// The pending tweets up to the last one found: the write
		// transaction lets no other in between.
		Chosen: func(ids []int64) (string, []any) { return "pending = 1 and id <= ?", []any{ids[len(ids)-1]} },
		Done:   "pending = 0",
	}.Run(ctx)
}

// Populate implements microblog.Store: it loads ds into the empty database
// in one write transaction with multi-row prepared inserts, then derives the
// userline and timeline tables in SQL (async: the timeline is fully
// materialized, no tweet is pending).
func (s *store) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return fmt.Errorf("sqlite %s: populate: nil dataset", s.Model)
	}
	err := s.writeTx(ctx, "populate", func(tx *sql.Tx) error {
		if err := schema.Empty(ctx, tx.QueryRowContext, s.Name+": populate "+s.db.path); err != nil {
			return err
		}
		users := newLoader(tx, "users (id, name)", 2)
		for u := 1; u <= ds.Users; u++ {
			if err := users.add(ctx, int64(u), microblog.UserName(int64(u))); err != nil {
				return err
			}
		}
		if err := users.close(ctx); err != nil {
			return err
		}
		follows := newLoader(tx, "follows (follower, followee)", 2)
		for _, f := range ds.Follows {
			if err := follows.add(ctx, f.Follower, f.Followee); err != nil {
				return err
			}
		}
		if err := follows.close(ctx); err != nil {
			return err
		}
		tweets := newLoader(tx, "tweets (id, author, time, body)", 4)
		for _, t := range ds.Tweets {
			if err := tweets.add(ctx, t.ID, t.Author, t.Time.UnixMicro(), t.Body); err != nil {
				return err
			}
		}
		if err := tweets.close(ctx); err != nil {
			return err
		}
		if err := derive(ctx, tx, s.Model, 1, int64(ds.Users)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, recordModel, sqlmodel.MetaKey, string(s.Model)); err != nil {
			return fmt.Errorf("sqlite %s: record model in meta: %w", s.Model, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Move the load out of the WAL into the database file, so the size on
	// disk is the database's and the WAL starts small. Readers may keep a
	// checkpoint from completing; that is harmless.
	if _, err := s.db.w.ExecContext(ctx, "pragma wal_checkpoint(truncate)"); err != nil {
		return fmt.Errorf("sqlite %s: checkpoint after populate: %w", s.Model, err)
	}
	if _, err := s.db.w.ExecContext(ctx, "pragma optimize"); err != nil {
		return fmt.Errorf("sqlite %s: optimize after populate: %w", s.Model, err)
	}
	return nil
}

// derive fills userline and timeline from the follows and tweets of the
// authors first..last (a tweet's readers follow its author, so those are
// all the rows their tweets make), in SQL and in primary-key order. It first copies follows and tweets into two temporary
// tables clustered for the fan-out — follows by (follower, followee), tweets
// by (author, time, id) with the body — so SQLite walks each follower's
// followees in order, reads their tweets without touching the tweets table,
// and sorts only one owner's rows at a time instead of the whole fan-out
// (tens of millions of rows at scale, a sort that spills to disk). Temporary
// tables live in the connection's temp database, so they leave no free
// pages behind in the database file (whose size is a reported figure).
func derive(ctx context.Context, tx *sql.Tx, model microblog.Model, first, last int64) error {
	body := ", body"
	if model == microblog.Normalized {
		body = "" // the fan-out carries ids only
	}
	steps := []string{
		`create temp table load_tweets (
			author integer not null, time integer not null, id integer not null` + body + `,
			primary key (author, time, id)) without rowid`,
		`insert into temp.load_tweets select author, time, id` + body + ` from main.tweets
		 where author between ?1 and ?2 order by author, time, id`,
		`create temp table load_follows (
			follower integer not null, followee integer not null,
			primary key (follower, followee)) without rowid`,
		`insert into temp.load_follows select follower, followee from main.follows
		 where followee between ?1 and ?2 order by follower, followee`,
	}
	const fanout = `
		from temp.load_follows as f cross join temp.load_tweets as t on t.author = f.followee
		order by f.follower, t.time, t.id`
	switch model {
	case microblog.Denormalized:
		steps = append(steps,
			`insert into main.userline (owner, time, tweet_id, body)
			 select author, time, id, body from temp.load_tweets order by author, time, id`,
			`insert into main.timeline (owner, time, tweet_id, author, body)
			 select f.follower, t.time, t.id, t.author, t.body`+fanout)
	case microblog.Normalized:
		steps = append(steps,
			`insert into main.userline (owner, time, tweet_id)
			 select author, time, id from temp.load_tweets order by author, time, id`,
			`insert into main.timeline (owner, time, tweet_id)
			 select f.follower, t.time, t.id`+fanout)
	case microblog.Async:
		steps = append(steps,
			`insert into main.timeline (owner, time, tweet_id, author, body)
			 select f.follower, t.time, t.id, t.author, t.body`+fanout)
	}
	steps = append(steps, `drop table temp.load_follows`, `drop table temp.load_tweets`)
	for _, q := range steps {
		var args []any
		if strings.Contains(q, "?1") {
			args = []any{first, last}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("sqlite %s: populate userline/timeline (%.50s...): %w", model, strings.Join(strings.Fields(q), " "), err)
		}
	}
	return nil
}

// loader batches rows into multi-row INSERTs prepared inside a transaction.
type loader struct {
	tx     *sql.Tx
	target string // "table (col, ...)"
	cols   int
	many   *sql.Stmt
	buf    []any
}

func newLoader(tx *sql.Tx, target string, cols int) *loader {
	return &loader{tx: tx, target: target, cols: cols, buf: make([]any, 0, cols*loadRows)}
}

func (l *loader) add(ctx context.Context, vals ...any) error {
	l.buf = append(l.buf, vals...)
	if len(l.buf) < l.cols*loadRows {
		return nil
	}
	if l.many == nil {
		st, err := l.tx.PrepareContext(ctx, "insert into "+l.target+" values "+values(l.cols, loadRows))
		if err != nil {
			return fmt.Errorf("sqlite: prepare load of %s: %w", l.target, err)
		}
		l.many = st
	}
	if _, err := l.many.ExecContext(ctx, l.buf...); err != nil {
		return fmt.Errorf("sqlite: load %s: %w", l.target, err)
	}
	l.buf = l.buf[:0]
	return nil
}

// close writes the remaining rows with one statement and releases the
// prepared statement.
func (l *loader) close(ctx context.Context) error {
	defer func() {
		if l.many != nil {
			l.many.Close()
		}
	}()
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.tx.ExecContext(ctx, "insert into "+l.target+" values "+values(l.cols, len(l.buf)/l.cols), l.buf...); err != nil {
		return fmt.Errorf("sqlite: load %s: %w", l.target, err)
	}
	l.buf = l.buf[:0]
	return nil
}

var _ microblog.PartLoader = (*DB)(nil)

// PopulatePart implements microblog.PartLoader. A part is one write
// transaction (BEGIN IMMEDIATE on the writer connection): the schema as
// Microblog makes it, the check of what is there, the part's users,
// follows and tweets and the userline and timeline entries they make. One
// SQLite file has one writer, so parts loaded by several processes run one
// after another, each whole or not at all. The process that finds the
// database whole once its part is in moves the WAL into the file and
// optimizes, as Populate does.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if err := sqlmodel.CheckPart("sqlite", model, ds, part); err != nil {
		return err
	}
	tx, err := db.beginWaiting(ctx)
	if err != nil {
		return fmt.Errorf("sqlite %s: begin part %s: %w", model, part, err)
	}
	whole, err := db.populatePart(ctx, tx, model, ds, part)
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite %s: commit part %s: %w", model, part, err)
	}
	if !whole {
		return nil
	}
	if _, err := db.w.ExecContext(ctx, "pragma wal_checkpoint(truncate)"); err != nil {
		return fmt.Errorf("sqlite %s: checkpoint after the last part: %w", model, err)
	}
	if _, err := db.w.ExecContext(ctx, "pragma optimize"); err != nil {
		return fmt.Errorf("sqlite %s: optimize after the last part: %w", model, err)
	}
	return nil
}

// populatePart writes part in tx and reports whether the database then
// holds every user of ds.
func (db *DB) populatePart(ctx context.Context, tx *sql.Tx, model microblog.Model, ds *microblog.Dataset, part microblog.Part) (whole bool, err error) {
	if err := db.ensureSchemaTx(ctx, tx, model); err != nil {
		return false, err
	}
	var there int64
	if err := tx.QueryRowContext(ctx, "select count(*) from users where id between ? and ?", part.First, part.Last).Scan(&there); err != nil {
		return false, fmt.Errorf("sqlite %s: check part %s: %w", model, part, err)
	}
	if err := sqlmodel.PartThere("sqlite "+db.path, part, there); err != nil {
		return false, err
	}
	users := newLoader(tx, "users (id, name)", 2)
	for u := part.First; u <= part.Last; u++ {
		if err := users.add(ctx, u, microblog.UserName(u)); err != nil {
			return false, err
		}
	}
	if err := users.close(ctx); err != nil {
		return false, err
	}
	follows := newLoader(tx, "follows (follower, followee)", 2)
	for f := part.First; f <= part.Last; f++ {
		for _, r := range ds.Followers(f) {
			if err := follows.add(ctx, r, f); err != nil {
				return false, err
			}
		}
	}
	if err := follows.close(ctx); err != nil {
		return false, err
	}
	tweets := newLoader(tx, "tweets (id, author, time, body)", 4)
	for i := range ds.Tweets {
		if t := &ds.Tweets[i]; part.Holds(t.Author) {
			if err := tweets.add(ctx, t.ID, t.Author, t.Time.UnixMicro(), t.Body); err != nil {
				return false, err
			}
		}
	}
	if err := tweets.close(ctx); err != nil {
		return false, err
	}
	if err := derive(ctx, tx, model, part.First, part.Last); err != nil {
		return false, err
	}
	var users64 int64
	if err := tx.QueryRowContext(ctx, "select count(*) from users").Scan(&users64); err != nil {
		return false, fmt.Errorf("sqlite %s: count users after part %s: %w", model, part, err)
	}
	return users64 == int64(ds.Users), nil
}

// beginWaiting begins a write transaction on the writer connection,
// waiting for as long as ctx allows while another process writes: BEGIN
// IMMEDIATE gives up with SQLITE_BUSY after the busy timeout, and another
// process's part may take longer than that.
func (db *DB) beginWaiting(ctx context.Context) (*sql.Tx, error) {
	var tx *sql.Tx
	err := whileBusy(ctx, time.Time{}, func() (err error) {
		tx, err = db.w.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

// whileBusy calls try until it returns anything but SQLITE_BUSY, ctx ends
// or until passes (zero: no limit), and returns try's last error. Each try
// waits the busy timeout where SQLite calls its busy handler; the pause
// between tries only keeps a BUSY that SQLite returns at once, without
// it, from spinning.
func whileBusy(ctx context.Context, until time.Time, try func() error) error {
	for {
		err := try()
		if err == nil || !isBusy(err) || (!until.IsZero() && time.Now().After(until)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isBusy reports SQLITE_BUSY (or one of its extended codes): another
// connection holds the lock.
func isBusy(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
