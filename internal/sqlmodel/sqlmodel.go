// Package sqlmodel is the microblog model bookkeeping the SQL adapters
// (sqlite, postgres, mariadb) share: whether a table exists, whether the
// microblog tables hold data, which model the meta table records, and the
// rule that data of another model, or of no recorded model, is refused.
// What differs between the databases (placeholders, catalog, the driver's
// row type) is a Dialect.
package sqlmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// MetaKey is the meta row recording which microblog model the schema (and
// any data) belongs to.
const MetaKey = "microblog_model"

// DataTables are the tables any of whose rows makes a database hold
// microblog data.
var DataTables = []string{"users", "follows", "tweets"}

// Row is one row a query answered: *sql.Row and pgx.Row.
type Row interface{ Scan(dest ...any) error }

// Dialect is what differs between the SQL adapters. R is the row type of
// the driver's QueryRow: a method value such as (*sql.Tx).QueryRowContext
// or pgx.Tx.QueryRow is the q every method takes.
type Dialect[R Row] struct {
	// Name starts every error: "sqlite", "postgres".
	Name string
	// TableExists answers, as one boolean, whether the table named by its
	// one parameter exists.
	TableExists string
	// Model reads meta's value for the key given as its one parameter.
	Model string
	// NoRows is the driver's error for a query that answered no row.
	NoRows error
}

// Query runs a query that answers at most one row.
type Query[R Row] = func(ctx context.Context, query string, args ...any) R

// HasTable reports whether table name exists.
func (d Dialect[R]) HasTable(ctx context.Context, q Query[R], name string) (bool, error) {
	var ok bool
	if err := q(ctx, d.TableExists, name).Scan(&ok); err != nil {
		return false, fmt.Errorf("%s: look up table %s: %w", d.Name, name, err)
	}
	return ok, nil
}

// HasData reports whether any of DataTables holds a row.
func (d Dialect[R]) HasData(ctx context.Context, q Query[R]) (bool, error) {
	for _, t := range DataTables {
		ok, err := d.HasTable(ctx, q, t)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		var has bool
		if err := q(ctx, "select exists (select 1 from "+t+")").Scan(&has); err != nil {
			return false, fmt.Errorf("%s: check %s for rows: %w", d.Name, t, err)
		}
		if has {
			return true, nil
		}
	}
	return false, nil
}

// Recorded reads the model recorded in meta ("" when meta or its row is
// missing).
func (d Dialect[R]) Recorded(ctx context.Context, q Query[R]) (microblog.Model, error) {
	ok, err := d.HasTable(ctx, q, "meta")
	if err != nil || !ok {
		return "", err
	}
	var v string
	err = q(ctx, d.Model, MetaKey).Scan(&v)
	if errors.Is(err, d.NoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: read microblog model from meta: %w", d.Name, err)
	}
	return microblog.Model(v), nil
}

// Loaded is microblog.Backend's MicroblogModel: the model recorded in
// meta, or "" when the database holds no microblog data.
func (d Dialect[R]) Loaded(ctx context.Context, q Query[R]) (microblog.Model, error) {
	m, err := d.Recorded(ctx, q)
	if err != nil || m == "" {
		return "", err
	}
	has, err := d.HasData(ctx, q)
	if err != nil || !has {
		return "", err
	}
	return m, nil
}

// Check is the rule a schema change for want follows, given the model
// recorded (have) and whether the microblog tables hold data (has): data of
// another model is refused (microblog.CheckModel), and so is data with no
// model recorded (tables this adapter did not make, not to be reused with
// another layout); both errors wrap microblog.ErrModelMismatch. name
// starts the error ("sqlite /path/db").
func Check(name string, have, want microblog.Model, has bool) error {
	if !has {
		return nil
	}
	if have == "" {
		return fmt.Errorf("%s: %w: microblog tables hold data but no model is recorded in meta; use a fresh database", name, microblog.ErrModelMismatch)
	}
	return microblog.CheckModel(name, have, want, "database")
}

// Empty is Populate's check that the database holds no microblog data:
// an error starting with what ("sqlite normalized: populate") when it does.
func (d Dialect[R]) Empty(ctx context.Context, q Query[R], what string) error {
	has, err := d.HasData(ctx, q)
	if err != nil {
		return err
	}
	if has {
		return fmt.Errorf("%s: the database already holds microblog data; use a fresh database", what)
	}
	return nil
}
