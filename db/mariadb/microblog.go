package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fieldbench/fieldbench/internal/sqlmodel"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

const createMeta = "create table if not exists meta (k varchar(64) not null primary key, v varchar(255) not null) engine=InnoDB"

// types are MariaDB's part of the microblog tables (sqlmodel.Types):
// every table is InnoDB, clustered on its primary key; the async model's
// materializer finds pending tweets by the (pending, id) index.
var types = sqlmodel.Types{
	Int:       "bigint",
	Key:       "bigint not null primary key",
	Text:      func(n int) string { return fmt.Sprintf("varchar(%d)", n) },
	Table:     " engine=InnoDB",
	Clustered: " engine=InnoDB",
	Pending:   "pending tinyint not null default 0",
	Keys:      []string{"key tweets_author (author, time, id)", "key tweets_pending (pending, id)"},
}

// param is MariaDB's placeholder: "?".
func param(int) string { return "?" }

// Batch sizes: timeline rows per INSERT of a post's fan-out, rows per
// INSERT of Populate, tweets per materializer pass, users per INSERT ...
// SELECT that derives timelines in Populate (it bounds a Galera write set).
const (
	fanoutRows       = 500
	loadRows         = 1000
	materializeBatch = 512
	deriveUsers      = 200
	loadTxRows       = 50_000
)

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schema is the microblog bookkeeping shared with the other SQL adapters.
var schema = sqlmodel.Dialect[*sql.Row]{
	Name:        "mariadb",
	TableExists: "select exists (select 1 from information_schema.tables where table_schema = database() and table_name = ?)",
	Model:       "select v from meta where k = ?",
	NoRows:      sql.ErrNoRows,
}

// MicroblogModel implements microblog.Backend.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	return schema.Loaded(ctx, db.first().QueryRowContext)
}

// schemaLockKey is the meta row whose row lock is the schema lock: shared
// while a part loads or a schema is checked, exclusive while the schema
// changes.
const schemaLockKey = "schema_lock"

// errSchemaBusy says the exclusive schema lock was not free.
var errSchemaBusy = errors.New("the schema lock is held")

// withSchemaLock runs fn holding the schema lock, shared or exclusive.
// GET_LOCK cannot be it: it is exclusive only (parts must load side by
// side), and Galera refuses it. The lock is a row lock on meta's
// schema_lock row, taken by a transaction on a connection of its own that
// writes nothing (so, on Galera, it never replicates and stays on the
// first node, where every process sends its schema changes and loads):
// DDL commits implicitly in MariaDB, so the lock cannot live in the
// statements that change the schema, which fn runs on other connections.
// A part's own transaction takes the lock shared itself (see
// PopulatePart).
//
// The exclusive lock is taken with NOWAIT, failing with errSchemaBusy: a
// waiting exclusive request would queue every later shared one behind it
// (InnoDB grants a row's locks in order), so one process waiting for a
// part to end would stall the other parts starting meanwhile.
func (db *DB) withSchemaLock(ctx context.Context, exclusive bool, fn func() error) error {
	p := db.first()
	if ok, err := schema.HasTable(ctx, p.QueryRowContext, "meta"); err != nil {
		return err
	} else if !ok {
		// Only when missing: CREATE TABLE on an existing table could wait
		// for the metadata locks of parts loading.
		if _, err := p.ExecContext(ctx, createMeta); err != nil {
			return fmt.Errorf("mariadb: create meta table: %w", err)
		}
	}
	if _, err := p.ExecContext(ctx, "insert ignore into meta (k, v) values (?, '')", schemaLockKey); err != nil {
		return fmt.Errorf("mariadb: create the schema lock row: %w", err)
	}
	conn, err := p.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mariadb: connect for the schema lock: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mariadb: begin the schema lock: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := lockSchema(ctx, tx, exclusive); err != nil {
		return err
	}
	return fn()
}

// lockSchema takes the schema lock in tx until it ends: shared, waiting
// for a schema change to end, or exclusive without waiting.
func lockSchema(ctx context.Context, tx *sql.Tx, exclusive bool) error {
	q := "select v from meta where k = ? lock in share mode"
	if exclusive {
		q = "select v from meta where k = ? for update nowait"
	}
	var v string
	err := tx.QueryRowContext(ctx, q, schemaLockKey).Scan(&v)
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return nil
	case exclusive && errors.As(err, &me) && me.Number == 1205: // ER_LOCK_WAIT_TIMEOUT, as NOWAIT reports it
		return errSchemaBusy
	case exclusive:
		return fmt.Errorf("mariadb: take the schema lock (exclusive): %w", err)
	}
	return fmt.Errorf("mariadb: take the schema lock (shared): %w", err)
}

// schemaState reads the schema for model: the model recorded (have),
// whether model's tables are all there under it (ready), and an error
// wrapping microblog.ErrModelMismatch when the database holds data of another model
// or of none recorded.
func schemaState(ctx context.Context, q queryer, model microblog.Model) (have microblog.Model, ready bool, err error) {
	if have, err = schema.Recorded(ctx, q.QueryRowContext); err != nil {
		return "", false, err
	}
	has, err := schema.HasData(ctx, q.QueryRowContext)
	if err != nil {
		return "", false, err
	}
	if err := sqlmodel.Check("mariadb", have, model, has); err != nil {
		return "", false, err
	}
	if have != model {
		return have, false, nil
	}
	for _, t := range sqlmodel.ModelTables[model] {
		if ok, err := schema.HasTable(ctx, q.QueryRowContext, t); err != nil || !ok {
			return have, false, err
		}
	}
	return have, true, nil
}

// ensureSchema creates model's tables. It checks the schema under the
// shared schema lock, so that opening a store or loading a part does not
// wait for parts loading, and changes it under the exclusive one: a
// database holding another model's data is refused before anything
// changes, and one holding none is switched. DDL commits implicitly in
// MariaDB, so a change is a sequence of statements, not a transaction; the
// model is recorded last. When the exclusive lock is held, the check is
// made again once it is free: the holder was a schema change (done by
// then), or parts of this model (the schema is then ready) or of another
// (their data is then refused once committed); so this waits, for as long
// as ctx allows, while another model's parts load.
func (db *DB) ensureSchema(ctx context.Context, model microblog.Model) error {
	p := db.first()
	for {
		var ready bool
		if err := db.withSchemaLock(ctx, false, func() (err error) {
			_, ready, err = schemaState(ctx, p, model)
			return err
		}); err != nil || ready {
			return err
		}
		err := db.withSchemaLock(ctx, true, func() error { return changeSchema(ctx, p, model) })
		if !errors.Is(err, errSchemaBusy) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mariadb: wait for the schema lock: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// changeSchema makes model's schema, under the exclusive schema lock.
func changeSchema(ctx context.Context, p *sql.DB, model microblog.Model) error {
	have, ready, err := schemaState(ctx, p, model)
	if err != nil || ready {
		return err
	}
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := p.ExecContext(ctx, q, args...)
		return err
	}
	if have != model {
		if err := exec(ctx, "delete from meta where k = ?", sqlmodel.MetaKey); err != nil {
			return fmt.Errorf("mariadb: clear the recorded model: %w", err)
		}
		if err := sqlmodel.Drop(ctx, exec, "mariadb", have); err != nil {
			return err
		}
	}
	return types.Create(ctx, exec, "mariadb", model,
		"insert into meta (k, v) values (?, ?) on duplicate key update v = values(v)")
}

// Microblog implements microblog.Backend: every model fits a relational
// server. The async store also implements microblog.Materializer.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if err := sqlmodel.Supported("mariadb", model); err != nil {
		return nil, err
	}
	if err := db.ensureSchema(ctx, model); err != nil {
		return nil, err
	}
	s := &store{db: db}
	s.Reads = sqlmodel.SendReads("mariadb "+string(model), model, param,
		func(ctx context.Context, q string, args ...any) (sqlmodel.Rows, error) {
			return db.pick().QueryContext(ctx, q, args...)
		},
		func(ctx context.Context) sqlmodel.Row { return db.first().QueryRowContext(ctx, sqlmodel.MaxTweetIDSQL) })
	if model == microblog.Async {
		return &asyncStore{s}, nil
	}
	return s, nil
}

// store is the Store of the denormalized and normalized models and the
// base of the async one. It holds no server state: statements are sent
// with interpolated parameters.
type store struct {
	sqlmodel.Reads
	db *DB
}

type asyncStore struct{ *store }

var (
	_ microblog.Store        = (*store)(nil)
	_ microblog.Materializer = (*asyncStore)(nil)
)

// Close implements microblog.Store; the DB stays open.
func (s *store) Close() error { return nil }

func (s *store) followersOf(ctx context.Context, pool *sql.DB, author int64) ([]int64, error) {
	rows, err := pool.QueryContext(ctx, sqlmodel.FollowersSQL(param), author)
	return sqlmodel.Followers(s.Name, author, rows, err)
}

// Post implements microblog.Store. Denormalized and normalized: read the
// author's followers, then one transaction writes the tweet, the userline
// row and the timeline rows with multi-row INSERTs.
func (s *store) Post(ctx context.Context, t microblog.Tweet) error {
	pool := s.db.pick()
	followers, err := s.followersOf(ctx, pool, t.Author)
	if err != nil {
		return err
	}
	us := t.Time.UnixMicro()
	denorm := s.Model == microblog.Denormalized
	cols := 3
	if denorm {
		cols = 5
	}
	return inTx(ctx, pool, "post", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "insert into tweets (id, author, time, body) values (?, ?, ?, ?)",
			t.ID, t.Author, us, t.Body); err != nil {
			return fmt.Errorf("mariadb %s: insert tweet %d: %w", s.Model, t.ID, err)
		}
		var err error
		if denorm {
			_, err = tx.ExecContext(ctx, "insert into userline (owner, time, tweet_id, body) values (?, ?, ?, ?)", t.Author, us, t.ID, t.Body)
		} else {
			_, err = tx.ExecContext(ctx, "insert into userline (owner, time, tweet_id) values (?, ?, ?)", t.Author, us, t.ID)
		}
		if err != nil {
			return fmt.Errorf("mariadb %s: insert userline row of tweet %d: %w", s.Model, t.ID, err)
		}
		target := "timeline (owner, time, tweet_id)"
		if denorm {
			target = "timeline (owner, time, tweet_id, author, body)"
		}
		for lo := 0; lo < len(followers); lo += fanoutRows {
			chunk := followers[lo:min(lo+fanoutRows, len(followers))]
			args := make([]any, 0, len(chunk)*cols)
			for _, f := range chunk {
				if denorm {
					args = append(args, f, us, t.ID, t.Author, t.Body)
				} else {
					args = append(args, f, us, t.ID)
				}
			}
			if _, err := tx.ExecContext(ctx, "insert into "+target+" values "+values(cols, len(chunk)), args...); err != nil {
				return fmt.Errorf("mariadb %s: insert timeline rows of tweet %d: %w", s.Model, t.ID, err)
			}
		}
		return nil
	})
}

// Post implements microblog.Store for the async model: one insert, flagged
// pending for the materializer.
func (s *asyncStore) Post(ctx context.Context, t microblog.Tweet) error {
	if _, err := s.db.pick().ExecContext(ctx, "insert into tweets (id, author, time, body, pending) values (?, ?, ?, ?, 1)",
		t.ID, t.Author, t.Time.UnixMicro(), t.Body); err != nil {
		return fmt.Errorf("mariadb %s: insert tweet %d: %w", s.Model, t.ID, err)
	}
	return nil
}

// Counts implements microblog.Store.
func (s *store) Counts(ctx context.Context) (microblog.Counts, error) {
	var c microblog.Counts
	if err := s.db.first().QueryRowContext(ctx,
		"select (select count(*) from users), (select count(*) from follows), (select count(*) from tweets)").
		Scan(&c.Users, &c.Follows, &c.Tweets); err != nil {
		return c, fmt.Errorf("mariadb %s: counts: %w", s.Model, err)
	}
	return c, nil
}

// MaterializeOnce implements microblog.Materializer: in one transaction it
// locks up to materializeBatch pending tweets (lowest ids first, SELECT
// ... FOR UPDATE, so two materializers never fan out the same tweet),
// copies each into the timeline of every current follower of its author,
// and clears their flag. The pending flag is set by the insert that stores
// the tweet, so a tweet committed out of id order is found by a later pass.
func (s *asyncStore) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	return sqlmodel.Pass{
		Name: "mariadb async",
		InTx: func(ctx context.Context, fn func(sqlmodel.Tx) error) error {
			return inTx(ctx, s.db.first(), "materialize", func(tx *sql.Tx) error { return fn(sqlmodel.SQLTx(tx)) })
		},
		Pending: "select id, time from tweets where pending = 1 order by pending, id limit ? for update",
		Batch:   materializeBatch,
		Chosen: func(ids []int64) (string, []any) {
			in := make([]string, len(ids))
			for i, id := range ids {
				in[i] = fmt.Sprint(id)
			}
			return "id in (" + strings.Join(in, ",") + ")", nil
		},
		Done: "pending = 0",
	}.Run(ctx)
}

// Populate implements microblog.Store: users, follows and tweets with
// multi-row INSERTs (loadRows a statement, one transaction per table),
// then userline and timeline derived in SQL with INSERT ... SELECT, by
// ranges of deriveUsers owners so that no transaction (a Galera write set)
// grows with the dataset.
func (s *store) Populate(ctx context.Context, ds *microblog.Dataset) error {
	if ds == nil {
		return fmt.Errorf("mariadb %s: populate: nil dataset", s.Model)
	}
	p := s.db.first()
	if err := schema.Empty(ctx, p.QueryRowContext, s.Name+": populate"); err != nil {
		return err
	}
	users := make([][]any, 0, ds.Users)
	for u := 1; u <= ds.Users; u++ {
		users = append(users, []any{int64(u), microblog.UserName(int64(u))})
	}
	if err := load(ctx, p, "users (id, name)", users); err != nil {
		return err
	}
	follows := make([][]any, len(ds.Follows))
	for i, f := range ds.Follows {
		follows[i] = []any{f.Followee, f.Follower}
	}
	if err := load(ctx, p, "follows (followee, follower)", follows); err != nil {
		return err
	}
	tweets := make([][]any, len(ds.Tweets))
	for i, t := range ds.Tweets {
		tweets[i] = []any{t.ID, t.Author, t.Time.UnixMicro(), t.Body}
	}
	if err := load(ctx, p, "tweets (id, author, time, body)", tweets); err != nil {
		return err
	}
	steps := deriveSQL(s.Model, "f.follower")
	for lo := int64(1); lo <= int64(ds.Users); lo += deriveUsers {
		hi := lo + deriveUsers - 1
		for _, q := range steps {
			if _, err := p.ExecContext(ctx, q, lo, hi); err != nil {
				return fmt.Errorf("mariadb %s: populate userline/timeline of users %d..%d: %w", s.Model, lo, hi, err)
			}
		}
	}
	return nil
}

// deriveSQL is the INSERT ... SELECTs that derive userline and timeline
// from tweets and follows for a range of users (two parameters, first and
// last): the userline of the authors in it, and the timeline entries of
// the follows whose column by (f.follower or f.followee) is in it.
func deriveSQL(model microblog.Model, by string) []string {
	timeline := `
		 from follows as f join tweets as t on t.author = f.followee
		 where ` + by + ` between ? and ?`
	switch model {
	case microblog.Denormalized:
		return []string{
			`insert into userline (owner, time, tweet_id, body)
			 select author, time, id, body from tweets where author between ? and ?`,
			`insert into timeline (owner, time, tweet_id, author, body)
			 select f.follower, t.time, t.id, t.author, t.body` + timeline,
		}
	case microblog.Normalized:
		return []string{
			`insert into userline (owner, time, tweet_id)
			 select author, time, id from tweets where author between ? and ?`,
			`insert into timeline (owner, time, tweet_id)
			 select f.follower, t.time, t.id` + timeline,
		}
	case microblog.Async:
		return []string{
			`insert into timeline (owner, time, tweet_id, author, body)
			 select f.follower, t.time, t.id, t.author, t.body` + timeline,
		}
	}
	return nil
}

// load inserts rows into target ("table (cols)") with multi-row INSERTs
// of loadRows rows, loadTxRows rows a transaction.
func load(ctx context.Context, p *sql.DB, target string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	for txLo := 0; txLo < len(rows); txLo += loadTxRows {
		part := rows[txLo:min(txLo+loadTxRows, len(rows))]
		if err := inTx(ctx, p, "load "+target, func(tx *sql.Tx) error { return insertRows(ctx, tx, target, part) }); err != nil {
			return err
		}
	}
	return nil
}

// insertRows inserts rows into target ("table (cols)") in tx with
// multi-row INSERTs of loadRows rows.
func insertRows(ctx context.Context, tx *sql.Tx, target string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	cols := len(rows[0])
	args := make([]any, 0, cols*min(len(rows), loadRows))
	for lo := 0; lo < len(rows); lo += loadRows {
		chunk := rows[lo:min(lo+loadRows, len(rows))]
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, "insert into "+target+" values "+values(cols, len(chunk)), args...); err != nil {
			return fmt.Errorf("mariadb: load %s: %w", target, err)
		}
	}
	return nil
}

var _ microblog.PartLoader = (*DB)(nil)

// errDuplicateUser marks a part whose users another client inserted
// between the part's check and its own inserts (their commit made its
// insert fail with a duplicate key).
var errDuplicateUser = errors.New("a user of the part was inserted by another client")

// PopulatePart implements microblog.PartLoader: the schema as Microblog
// makes it, then the part in one transaction on the first node (all of it
// or nothing), holding the schema lock shared so that parts load side by
// side while a schema change waits for them. A part whose users are all
// there is already loaded (ErrPartLoaded); one whose users are partly
// there belongs to a load in another number of parts.
//
// The transaction runs at READ COMMITTED. At REPEATABLE READ, InnoDB's
// INSERT ... SELECT sets shared next-key locks on the rows and gaps it
// reads (all of tweets in the denormalized and normalized models, whose
// tweets have no author index), so a part waits for another's uncommitted
// inserts or deadlocks with it (TestPartLoadsBesideAnOpenPart fails so in
// every model). At READ COMMITTED the SELECT is a consistent read without
// locks and inserts of disjoint keys take no gap locks, so parts do not
// wait for each other. inTx still
// reruns a part rolled back for a deadlock or a Galera certification
// conflict (error 1213), up to 5 times: it wrote nothing, and its checks
// then see what the other transaction committed.
//
// One part is one transaction, so on Galera its write set holds the part's
// rows and their fan-out and must fit wsrep_max_ws_size: load a large
// dataset in more parts.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if err := sqlmodel.CheckPart("mariadb", model, ds, part); err != nil {
		return err
	}
	if err := db.ensureSchema(ctx, model); err != nil {
		return err
	}
	p := db.first()
	rc := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	err := inTxOpts(ctx, p, "load part "+part.String(), rc, func(tx *sql.Tx) error {
		if err := lockSchema(ctx, tx, false); err != nil {
			return err
		}
		if have, err := schema.Recorded(ctx, tx.QueryRowContext); err != nil {
			return err
		} else if have != model {
			return fmt.Errorf("mariadb: %w: the database records the %q model (opened by another process meanwhile); load the %s model into a fresh database",
				microblog.ErrModelMismatch, have, model)
		}
		if err := partThere(ctx, tx, part); err != nil {
			return err
		}
		return insertPart(ctx, tx, model, ds, part)
	})
	if errors.Is(err, errDuplicateUser) {
		// Committed by another client since the check: say what is there.
		if err := partThere(ctx, p, part); err != nil {
			return err
		}
	}
	return err
}

// partThere checks what q sees of part's users: an error wrapping
// ErrPartLoaded when they are all there, one saying so when some are
// (another number of parts), nil when none.
func partThere(ctx context.Context, q queryer, part microblog.Part) error {
	var there int64
	if err := q.QueryRowContext(ctx, "select count(*) from users where id between ? and ?", part.First, part.Last).Scan(&there); err != nil {
		return fmt.Errorf("mariadb: check part %s: %w", part, err)
	}
	return sqlmodel.PartThere("mariadb", part, there)
}

// insertPart writes part's users, the follows of its followees and its
// authors' tweets in tx, then derives their userline and timeline entries
// in SQL (a tweet's readers follow its author, so the follows joined are
// the part's own).
func insertPart(ctx context.Context, tx *sql.Tx, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	users := make([][]any, 0, part.Last-part.First+1)
	for u := part.First; u <= part.Last; u++ {
		users = append(users, []any{u, microblog.UserName(u)})
	}
	if err := insertRows(ctx, tx, "users (id, name)", users); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY
			return fmt.Errorf("%w: %w", errDuplicateUser, err)
		}
		return err
	}
	var follows [][]any
	for f := part.First; f <= part.Last; f++ {
		for _, r := range ds.Followers(f) {
			follows = append(follows, []any{f, r})
		}
	}
	if err := insertRows(ctx, tx, "follows (followee, follower)", follows); err != nil {
		return err
	}
	var tweets [][]any
	for i := range ds.Tweets {
		if t := &ds.Tweets[i]; part.Holds(t.Author) {
			tweets = append(tweets, []any{t.ID, t.Author, t.Time.UnixMicro(), t.Body})
		}
	}
	if err := insertRows(ctx, tx, "tweets (id, author, time, body)", tweets); err != nil {
		return err
	}
	for _, q := range deriveSQL(model, "f.followee") {
		if _, err := tx.ExecContext(ctx, q, part.First, part.Last); err != nil {
			return fmt.Errorf("mariadb %s: derive userline/timeline of part %s: %w", model, part, err)
		}
	}
	return nil
}
