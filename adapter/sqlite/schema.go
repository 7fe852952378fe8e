package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/internal/sqlmodel"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

const createMeta = `create table if not exists meta (
	key   text primary key,
	value text not null
) without rowid`

// microblogTables are every table and index any model creates, dropped when
// an empty database is switched to another model.
var microblogTables = []string{"users", "follows", "tweets", "userline", "timeline"}

// Times are INTEGER microseconds since the Unix epoch (UTC). Userline and
// timeline tables are WITHOUT ROWID tables clustered on (owner, time,
// tweet_id), so "newest 50 of owner" is one backwards range scan of the
// primary key.
var commonSchema = []string{
	`create table if not exists users (
		id   integer primary key,
		name text not null
	)`,
	// Clustered on (followee, follower): "followers of the author" is a
	// range scan, which is what post and the materializer need.
	`create table if not exists follows (
		follower integer not null,
		followee integer not null,
		primary key (followee, follower)
	) without rowid`,
}

var modelSchema = map[microblog.Model][]string{
	microblog.Denormalized: {
		`create table if not exists tweets (
			id     integer primary key,
			author integer not null,
			time   integer not null,
			body   text not null
		)`,
		`create table if not exists userline (
			owner    integer not null,
			time     integer not null,
			tweet_id integer not null,
			body     text not null,
			primary key (owner, time, tweet_id)
		) without rowid`,
		`create table if not exists timeline (
			owner    integer not null,
			time     integer not null,
			tweet_id integer not null,
			author   integer not null,
			body     text not null,
			primary key (owner, time, tweet_id)
		) without rowid`,
	},
	microblog.Normalized: {
		`create table if not exists tweets (
			id     integer primary key,
			author integer not null,
			time   integer not null,
			body   text not null
		)`,
		`create table if not exists userline (
			owner    integer not null,
			time     integer not null,
			tweet_id integer not null,
			primary key (owner, time, tweet_id)
		) without rowid`,
		`create table if not exists timeline (
			owner    integer not null,
			time     integer not null,
			tweet_id integer not null,
			primary key (owner, time, tweet_id)
		) without rowid`,
	},
	microblog.Async: {
		// pending = 1 until the materializer has fanned the tweet out.
		`create table if not exists tweets (
			id      integer primary key,
			author  integer not null,
			time    integer not null,
			body    text not null,
			pending integer not null default 0
		)`,
		`create index if not exists tweets_author on tweets (author, time, id)`,
		// Partial index: holds only the tweets still to materialize, so
		// finding them costs nothing however large tweets grows.
		`create index if not exists tweets_pending on tweets (id) where pending = 1`,
		`create table if not exists timeline (
			owner    integer not null,
			time     integer not null,
			tweet_id integer not null,
			author   integer not null,
			body     text not null,
			primary key (owner, time, tweet_id)
		) without rowid`,
	},
}

// schema is the microblog bookkeeping shared with the other SQL adapters.
var schema = sqlmodel.Dialect[*sql.Row]{
	Name:        "sqlite",
	TableExists: `select exists (select 1 from sqlite_schema where type = 'table' and name = ?)`,
	Model:       `select value from meta where key = ?`,
	NoRows:      sql.ErrNoRows,
}

// MicroblogModel implements microblog.Backend: the model recorded in meta,
// or "" when the database holds no microblog data.
func (db *DB) MicroblogModel(ctx context.Context) (microblog.Model, error) {
	return schema.Loaded(ctx, db.r.QueryRowContext)
}

// ensureSchema creates model's tables in one write transaction (see
// ensureSchemaTx).
func (db *DB) ensureSchema(ctx context.Context, model microblog.Model) (err error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin schema transaction: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := db.ensureSchemaTx(ctx, tx, model); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit %s schema: %w", model, err)
	}
	return nil
}

// ensureSchemaTx creates model's tables in tx, a write transaction, and
// records the model in meta. A database whose schema belongs to another
// model is switched only while it holds no data; otherwise the error wraps
// microblog.ErrModelMismatch.
func (db *DB) ensureSchemaTx(ctx context.Context, tx *sql.Tx, model microblog.Model) error {
	if _, err := tx.ExecContext(ctx, createMeta); err != nil {
		return fmt.Errorf("sqlite: create meta table: %w", err)
	}
	have, err := schema.Recorded(ctx, tx.QueryRowContext)
	if err != nil {
		return err
	}
	if have != model {
		// Tables left without a recorded model (not made by this adapter)
		// must not be silently reused with another layout.
		has, err := schema.HasData(ctx, tx.QueryRowContext)
		if err != nil {
			return err
		}
		if err := sqlmodel.Check("sqlite "+db.path, have, model, has); err != nil {
			return err
		}
	}
	if have != "" && have != model {
		for _, t := range microblogTables {
			if _, err := tx.ExecContext(ctx, "drop table if exists "+t); err != nil {
				return fmt.Errorf("sqlite: drop empty %s table of the %s model: %w", t, have, err)
			}
		}
	}
	for _, s := range append(append([]string{}, commonSchema...), modelSchema[model]...) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sqlite: create %s schema: %w", model, err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`insert into meta (key, value) values (?, ?) on conflict (key) do update set value = excluded.value`,
		sqlmodel.MetaKey, string(model)); err != nil {
		return fmt.Errorf("sqlite: record model in meta: %w", err)
	}
	return nil
}

// Microblog implements microblog.Backend: a Store for model, creating its
// schema when absent. The Async store also implements microblog.Materializer.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return nil, fmt.Errorf("sqlite: %w: %w", adapter.ErrUnsupported, err)
	}
	if err := db.ensureSchema(ctx, model); err != nil {
		return nil, err
	}
	s, err := newStore(ctx, db, model)
	if err != nil {
		return nil, err
	}
	if model == microblog.Async {
		return &asyncStore{s}, nil
	}
	return s, nil
}
