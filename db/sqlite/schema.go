package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fieldbench/fieldbench/internal/sqlmodel"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

const createMeta = `create table if not exists meta (
	key   text primary key,
	value text not null
) without rowid`

// types are SQLite's part of the microblog tables (sqlmodel.Types): the
// tables clustered on a primary key of several columns are WITHOUT ROWID
// tables; a partial index holds only the async tweets still to
// materialize, so finding them costs nothing however large tweets grows.
var types = sqlmodel.Types{
	Int:       "integer",
	Key:       "integer primary key",
	Text:      func(int) string { return "text" },
	Clustered: " without rowid",
	Pending:   "pending integer not null default 0",
	Indexes: []string{
		`create index if not exists tweets_author on tweets (author, time, id)`,
		`create index if not exists tweets_pending on tweets (id) where pending = 1`,
	},
}

// recordModel writes the model into meta (MetaKey, the model).
const recordModel = `insert into meta (key, value) values (?, ?) on conflict (key) do update set value = excluded.value`

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
	return schema.Make(ctx, tx.QueryRowContext, sqlmodel.SQLTx(tx).Exec, types, "sqlite "+db.path, model, recordModel)
}

// Microblog implements microblog.Backend: a Store for model, creating its
// schema when absent. The Async store also implements microblog.Materializer.
func (db *DB) Microblog(ctx context.Context, model microblog.Model) (microblog.Store, error) {
	if err := sqlmodel.Supported("sqlite", model); err != nil {
		return nil, err
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
