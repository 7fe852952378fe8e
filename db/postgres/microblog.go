package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/internal/sqlmodel"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// materializeBatch is the most tweets one MaterializeOnce pass fans out.
const materializeBatch = 512

// schemaLock is the advisory lock key that serializes schema changes of
// concurrent fieldbench processes.
const schemaLock = 0x66626d62 // "fbmb"

// param is PostgreSQL's n-th placeholder: "$n".
func param(n int) string { return "$" + strconv.Itoa(n) }

// createMeta is the meta table, made before the schema lock's checks.
const createMeta = `create table if not exists meta (key text primary key, value text not null)`

// types are PostgreSQL's part of the microblog tables (sqlmodel.Types),
// clustered by their primary keys; the async tweets still to materialize
// are in a partial index.
var types = sqlmodel.Types{
	Int:     "bigint",
	Key:     "bigint primary key",
	Text:    func(int) string { return "text" },
	Pending: "pending boolean not null default false",
	Indexes: []string{
		`create index if not exists tweets_author on tweets (author, time, id)`,
		`create index if not exists tweets_pending on tweets (id) where pending`,
	},
}

// recordModel writes the model into meta (MetaKey, the model).
const recordModel = `insert into meta (key, value) values ($1, $2)
	on conflict (key) do update set value = excluded.value`

// schema is the microblog bookkeeping shared with the other SQL adapters.
var schema = sqlmodel.Dialect[pgx.Row]{
	Name:        "postgres",
	TableExists: `select to_regclass('public.' || $1::text) is not null`,
	Model:       `select value from meta where key = $1`,
	NoRows:      pgx.ErrNoRows,
}

// MicroblogModel implements microblog.Backend (asks the primary).
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	return schema.Loaded(ctx, db.w.QueryRow)
}

// schemaRetry is how long ensureSchema waits before it looks again when
// another session holds the schema lock.
const schemaRetry = 100 * time.Millisecond

// ensureSchema creates model's tables in one transaction; a database whose
// tables belong to another model is switched only while it holds no data.
// A schema already made for model (its model recorded in meta, which the
// transaction that makes the tables also writes) is left as it is without
// asking for the exclusive schema lock: parts of a sharded load hold that
// lock shared for their whole load, and PostgreSQL queues a later shared
// request behind a waiting exclusive one, so one process asking for it
// would stall every part that starts after it. For the same reason the
// exclusive lock is only tried (pg_try_advisory_xact_lock), and the check
// made again after schemaRetry when another session holds it.
func (db *DB) ensureSchema(ctx context.Context, model microblog.Model) error {
	for {
		have, err := schema.Recorded(ctx, db.w.QueryRow)
		if err != nil || have == model {
			return err
		}
		made := false
		err = pgx.BeginFunc(ctx, db.w, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, "select pg_try_advisory_xact_lock($1)", int64(schemaLock)).Scan(&made); err != nil {
				return fmt.Errorf("postgres: lock schema: %w", err)
			}
			if !made {
				return nil
			}
			return makeSchema(ctx, tx, model)
		})
		if err != nil || made {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres: wait for the schema lock: %w", ctx.Err())
		case <-time.After(schemaRetry):
		}
	}
}

// makeSchema is ensureSchema's work, in tx, which holds the schema lock.
func makeSchema(ctx context.Context, tx pgx.Tx, model microblog.Model) error {
	if _, err := tx.Exec(ctx, createMeta); err != nil {
		return fmt.Errorf("postgres: create meta table: %w", err)
	}
	return schema.Make(ctx, tx.QueryRow, pgTx{tx}.Exec, types, "postgres", model, recordModel)
}

// Microblog implements microblog.Backend. The Async store also implements
// microblog.Materializer.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if err := sqlmodel.Supported("postgres", model); err != nil {
		return nil, err
	}
	if err := db.ensureSchema(ctx, model); err != nil {
		return nil, err
	}
	s := &store{db: db}
	s.Reads = sqlmodel.SendReads("postgres "+string(model), model, param,
		func(ctx context.Context, q string, args ...any) (sqlmodel.Rows, error) {
			r, err := db.reader().Query(ctx, q, args...)
			return rows{r}, err
		},
		// On the primary: new ids must be unique.
		func(ctx context.Context) sqlmodel.Row { return db.w.QueryRow(ctx, sqlmodel.MaxTweetIDSQL) })
	if model == microblog.Async {
		return &asyncStore{s}, nil
	}
	return s, nil
}

// rows is pgx.Rows as sqlmodel.Rows, whose Close returns an error.
type rows struct{ pgx.Rows }

// Close closes the rows; their error is Err's.
func (r rows) Close() error {
	r.Rows.Close()
	return nil
}

// store is the Store of the denormalized and normalized models and the base
// of the async one. pgx prepares and caches each statement per connection.
type store struct {
	sqlmodel.Reads
	db *DB
}

// asyncStore adds the materializer.
type asyncStore struct{ *store }

var (
	_ microblog.Backend      = (*DB)(nil)
	_ microblog.Store        = (*store)(nil)
	_ microblog.Materializer = (*asyncStore)(nil)
)

// Close implements microblog.Store; the DB stays open.
func (s *store) Close() error { return nil }

func (s *store) followersOf(ctx context.Context, author int64) ([]int64, error) {
	rows, _ := s.db.w.Query(ctx, `select follower from follows where followee = $1`, author)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("postgres %s: read followers of %d: %w", s.Model, author, err)
	}
	return out, nil
}

// Post implements microblog.Store (denormalized and normalized): read the
// author's followers on the primary, then send the tweet, the userline row
// and the timeline rows — one multi-row INSERT over unnest of the follower
// array — as one batch: one round trip, one implicit transaction (pgx ends
// a batch with a single Sync, so the server runs it all or nothing).
func (s *store) Post(ctx context.Context, t microblog.Tweet) error {
	followers, err := s.followersOf(ctx, t.Author)
	if err != nil {
		return err
	}
	us := t.Time.UnixMicro()
	b := &pgx.Batch{}
	b.Queue(`insert into tweets (id, author, time, body) values ($1, $2, $3, $4)`, t.ID, t.Author, us, t.Body)
	if s.Model == microblog.Denormalized {
		b.Queue(`insert into userline (owner, time, tweet_id, body) values ($1, $2, $3, $4)`, t.Author, us, t.ID, t.Body)
		if len(followers) > 0 {
			b.Queue(`insert into timeline (owner, time, tweet_id, author, body)
				select f, $2, $3, $4, $5 from unnest($1::bigint[]) as f`, followers, us, t.ID, t.Author, t.Body)
		}
	} else {
		b.Queue(`insert into userline (owner, time, tweet_id) values ($1, $2, $3)`, t.Author, us, t.ID)
		if len(followers) > 0 {
			b.Queue(`insert into timeline (owner, time, tweet_id)
				select f, $2, $3 from unnest($1::bigint[]) as f`, followers, us, t.ID)
		}
	}
	if err := s.db.w.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres %s: post tweet %d: %w", s.Model, t.ID, err)
	}
	return nil
}

// Post implements microblog.Store for the async model: one insert, flagged
// pending for the materializer.
func (s *asyncStore) Post(ctx context.Context, t microblog.Tweet) error {
	if _, err := s.db.w.Exec(ctx, `insert into tweets (id, author, time, body, pending) values ($1, $2, $3, $4, true)`,
		t.ID, t.Author, t.Time.UnixMicro(), t.Body); err != nil {
		return fmt.Errorf("postgres async: insert tweet %d: %w", t.ID, err)
	}
	return nil
}

// Counts implements microblog.Store.
func (s *store) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	err := s.db.w.QueryRow(ctx, `select (select count(*) from users), (select count(*) from follows),
		(select count(*) from tweets)`).Scan(&c.Users, &c.Follows, &c.Tweets)
	if err != nil {
		return microblog.Counts{}, fmt.Errorf("postgres %s: counts: %w", s.Model, err)
	}
	return c, nil
}

// MaterializeOnce implements microblog.Materializer: in one transaction it
// locks up to materializeBatch pending tweets (lowest ids first; SKIP
// LOCKED lets concurrent materializers share the work), copies each into
// the timeline of every current follower of its author and clears their
// flag.
func (s *asyncStore) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	return sqlmodel.Pass{
		Name: "postgres async",
		InTx: func(ctx context.Context, fn func(sqlmodel.Tx) error) error {
			return pgx.BeginFunc(ctx, s.db.w, func(tx pgx.Tx) error { return fn(pgTx{tx}) })
		},
		// SKIP LOCKED lets concurrent materializers share the work.
		Pending: `select id, time from tweets where pending order by id limit $1 for update skip locked`,
		Batch:   materializeBatch,
		Chosen:  func(ids []int64) (string, []any) { return "id = any($1)", []any{ids} },
		Done:    "pending = false",
	}.Run(ctx)
}

// pgTx is a pgx transaction as a sqlmodel.Tx.
type pgTx struct{ tx pgx.Tx }

func (t pgTx) Query(ctx context.Context, q string, args ...any) (sqlmodel.Rows, error) {
	r, err := t.tx.Query(ctx, q, args...)
	return rows{r}, err
}

func (t pgTx) Exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.Exec(ctx, q, args...)
	return err
}

// Populate implements microblog.Store: COPY of users, follows and tweets in
// one transaction, then userline and timeline derived in SQL (async: the
// timeline fully materialized), then ANALYZE.
func (s *store) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return fmt.Errorf("postgres %s: populate: nil dataset", s.Model)
	}
	err := pgx.BeginFunc(ctx, s.db.w, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return fmt.Errorf("postgres: lock schema: %w", err)
		}
		if err := schema.Empty(ctx, tx.QueryRow, s.Name+": populate"); err != nil {
			return err
		}
		if err := copyMicroblog(ctx, tx, s.Model, ds, microblog.Part{I: 0, N: 1, First: 1, Last: int64(ds.Users)}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, recordModel, sqlmodel.MetaKey, string(s.Model)); err != nil {
			return fmt.Errorf("postgres %s: record model: %w", s.Model, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := s.db.w.Exec(ctx, "analyze"); err != nil {
		return fmt.Errorf("postgres %s: analyze after populate: %w", s.Model, err)
	}
	return nil
}

// copyMicroblog writes part of ds in tx: COPY of its users, the follows of
// its followees and its authors' tweets, then the userline and timeline
// entries of those tweets derived in SQL. The follows joined are the
// part's own (a tweet's readers follow its author), so parts written by
// concurrent transactions derive exactly their own entries.
func copyMicroblog(ctx context.Context, tx pgx.Tx, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	u := part.First - 1
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"users"}, []string{"id", "name"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if u >= part.Last {
				return nil, nil
			}
			u++
			return []any{u, microblog.UserName(u)}, nil
		})); err != nil {
		return fmt.Errorf("postgres %s: copy users: %w", model, err)
	}
	var follows [][]any
	for f := part.First; f <= part.Last; f++ {
		for _, r := range ds.Followers(f) {
			follows = append(follows, []any{r, f})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"follows"}, []string{"follower", "followee"}, pgx.CopyFromRows(follows)); err != nil {
		return fmt.Errorf("postgres %s: copy follows: %w", model, err)
	}
	var tweets [][]any
	for i := range ds.Tweets {
		if t := &ds.Tweets[i]; part.Holds(t.Author) {
			tweets = append(tweets, []any{t.ID, t.Author, t.Time.UnixMicro(), t.Body})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"tweets"}, []string{"id", "author", "time", "body"}, pgx.CopyFromRows(tweets)); err != nil {
		return fmt.Errorf("postgres %s: copy tweets: %w", model, err)
	}
	var steps []string
	const (
		own    = ` from tweets where author between $1 and $2 order by 1, 2, 3`
		fanout = ` from follows as f join tweets as t on t.author = f.followee where t.author between $1 and $2 order by 1, 2, 3`
	)
	switch model {
	case microblog.Denormalized:
		steps = []string{
			`insert into userline (owner, time, tweet_id, body) select author, time, id, body` + own,
			`insert into timeline (owner, time, tweet_id, author, body) select f.follower, t.time, t.id, t.author, t.body` + fanout,
		}
	case microblog.Normalized:
		steps = []string{
			`insert into userline (owner, time, tweet_id) select author, time, id` + own,
			`insert into timeline (owner, time, tweet_id) select f.follower, t.time, t.id` + fanout,
		}
	case microblog.Async:
		steps = []string{
			`insert into timeline (owner, time, tweet_id, author, body) select f.follower, t.time, t.id, t.author, t.body` + fanout,
		}
	}
	for _, q := range steps {
		if _, err := tx.Exec(ctx, q, part.First, part.Last); err != nil {
			return fmt.Errorf("postgres %s: derive userline/timeline: %w", model, err)
		}
	}
	return nil
}

var _ microblog.PartLoader = (*DB)(nil)

// PopulatePart implements microblog.PartLoader: the schema as Microblog
// makes it, then the part in one transaction (all of it or nothing),
// holding the schema lock shared so that parts load side by side while a
// schema change waits. A part whose users are all there is loaded; one
// whose users are partly there belongs to a load in another number of
// parts.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if err := sqlmodel.CheckPart("postgres", model, ds, part); err != nil {
		return err
	}
	if err := db.ensureSchema(ctx, model); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, db.w, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock_shared($1)", int64(schemaLock)); err != nil {
			return fmt.Errorf("postgres: lock schema: %w", err)
		}
		if have, err := schema.Recorded(ctx, tx.QueryRow); err != nil {
			return err
		} else if have != model {
			return fmt.Errorf("postgres: %w: the database holds (or is being loaded with) the %s model; load the %s model into a fresh database", microblog.ErrModelMismatch, have, model)
		}
		var there int64
		if err := tx.QueryRow(ctx, "select count(*) from users where id between $1 and $2", part.First, part.Last).Scan(&there); err != nil {
			return fmt.Errorf("postgres: check part %s: %w", part, err)
		}
		if err := sqlmodel.PartThere("postgres", part, there); err != nil {
			return err
		}
		return copyMicroblog(ctx, tx, model, ds, part)
	})
	if err != nil {
		return err
	}
	if _, err := db.w.Exec(ctx, "analyze"); err != nil {
		return fmt.Errorf("postgres %s: analyze after loading part %s: %w", model, part, err)
	}
	return nil
}
