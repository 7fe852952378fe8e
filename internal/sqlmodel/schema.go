package sqlmodel

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Tables are every table any model creates, dropped when an empty
// database is switched to another model.
var Tables = []string{"users", "follows", "tweets", "userline", "timeline"}

// ModelTables are the tables of each model.
var ModelTables = map[microblog.Model][]string{
	microblog.Denormalized: Tables,
	microblog.Normalized:   Tables,
	microblog.Async:        {"users", "follows", "tweets", "timeline"},
}

// Types is what a dialect puts in the microblog tables. The tables are the
// same in every SQL adapter: times are integer microseconds since the Unix
// epoch (UTC), exact and compared as integers; follows is clustered on
// (followee, follower), so "followers of the author" is one range scan;
// userline and timeline on (owner, time, tweet_id), so "newest 50 of
// owner" is one backward range scan. The async model writes a tweet once,
// flagged pending until the materializer has fanned it out, and reads the
// userline from tweets by an (author, time, id) index.
type Types struct {
	// Int is the 64-bit integer type: "bigint", "integer".
	Int string
	// Key is a one-column integer primary key: "bigint primary key",
	// "integer primary key" (SQLite's rowid).
	Key string
	// Text is the type of a string of up to n characters.
	Text func(n int) string
	// Table follows the closing parenthesis of a table: " engine=InnoDB".
	Table string
	// Clustered follows that of a table clustered on a primary key of
	// several columns: " without rowid" in SQLite.
	Clustered string
	// Pending is the async tweets' flag column, 0 or false by default.
	Pending string
	// Keys are index definitions inside the async tweets table (MariaDB's
	// "key name (cols)"); Indexes are statements after it.
	Keys, Indexes []string
}

// Schema is the statements that create model's tables, each "if not
// exists".
func (t Types) Schema(model microblog.Model) []string {
	col := func(name string) string { return name + " " + t.Int + " not null" }
	table := func(name, options string, cols ...[]string) string {
		return "create table if not exists " + name + " (\n\t" + strings.Join(slices.Concat(cols...), ",\n\t") + "\n)" + options
	}
	body := "body " + t.Text(560) + " not null"
	tweet := []string{"id " + t.Key, col("author"), col("time"), body}
	line := []string{col("owner"), col("time"), col("tweet_id")}
	pk := []string{"primary key (owner, time, tweet_id)"}
	out := []string{
		table("users", t.Table, []string{"id " + t.Key, "name " + t.Text(64) + " not null"}),
		table("follows", t.Clustered, []string{col("follower"), col("followee"), "primary key (followee, follower)"}),
	}
	withBodies := table("timeline", t.Clustered, line, []string{col("author"), body}, pk)
	switch model {
	case microblog.Denormalized:
		return append(out, table("tweets", t.Table, tweet),
			table("userline", t.Clustered, line, []string{body}, pk), withBodies)
	case microblog.Normalized:
		return append(out, table("tweets", t.Table, tweet),
			table("userline", t.Clustered, line, pk), table("timeline", t.Clustered, line, pk))
	case microblog.Async:
		out = append(out, table("tweets", t.Table, tweet, []string{t.Pending}, t.Keys))
		return append(append(out, t.Indexes...), withBodies)
	}
	return nil
}

// Exec runs a statement that answers no rows.
type Exec = func(ctx context.Context, query string, args ...any) error

// Create runs model's Schema with exec, then records model with record, an
// upsert of meta's row whose two parameters are MetaKey and the model.
// name starts the errors ("sqlite").
func (t Types) Create(ctx context.Context, exec Exec, name string, model microblog.Model, record string) error {
	for _, s := range t.Schema(model) {
		if err := exec(ctx, s); err != nil {
			return fmt.Errorf("%s: create %s schema: %w", name, model, err)
		}
	}
	if err := exec(ctx, record, MetaKey, string(model)); err != nil {
		return fmt.Errorf("%s: record model in meta: %w", name, err)
	}
	return nil
}

// Drop drops every table of Tables with exec, for a switch from the model
// have ("" when none is recorded), whose tables hold no data.
func Drop(ctx context.Context, exec Exec, name string, have microblog.Model) error {
	of := ""
	if have != "" {
		of = " of the " + string(have) + " model"
	}
	for _, t := range Tables {
		if err := exec(ctx, "drop table if exists "+t); err != nil {
			return fmt.Errorf("%s: drop empty %s table%s: %w", name, t, of, err)
		}
	}
	return nil
}

// PartThere is the rule for a part of a sharded load given how many of its
// users (there) the database holds: none, load it (nil); all, an error
// wrapping microblog.ErrPartLoaded; some, an error saying the database was
// loaded in another number of parts. name starts the errors.
func PartThere(name string, part microblog.Part, there int64) error {
	switch size := part.Last - part.First + 1; {
	case there == size:
		return fmt.Errorf("%s: part %s (users %d..%d): %w", name, part, part.First, part.Last, microblog.ErrPartLoaded)
	case there > 0:
		return fmt.Errorf("%s: part %s: %d of its users %d..%d are there already, loaded in another number of parts: use a fresh database",
			name, part, there, part.First, part.Last)
	}
	return nil
}

// Supported checks a model name the Backend was asked for: an error
// wrapping adapter.ErrUnsupported for one microblog does not know.
func Supported(name string, model microblog.Model) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("%s: %w: %w", name, adapter.ErrUnsupported, err)
	}
	return nil
}

// CheckPart checks a PopulatePart's model and part before anything is
// written.
func CheckPart(name string, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if err := Supported(name, model); err != nil {
		return err
	}
	return part.Validate(ds)
}

// Make is a schema change to model in one transaction that holds the
// schema lock and whose meta table exists; q and exec run its statements.
// A database whose schema belongs to another model is switched (its
// tables dropped) only while it holds no data, and one with data but no
// model recorded is refused (Check, which names the database as db); then
// model's tables are created and model recorded (Types.Create).
func (d Dialect[R]) Make(ctx context.Context, q Query[R], exec Exec, t Types, db string, model microblog.Model, record string) error {
	have, err := d.Recorded(ctx, q)
	if err != nil {
		return err
	}
	if have != model {
		has, err := d.HasData(ctx, q)
		if err != nil {
			return err
		}
		if err := Check(db, have, model, has); err != nil {
			return err
		}
	}
	if have != "" && have != model {
		if err := Drop(ctx, exec, d.Name, have); err != nil {
			return err
		}
	}
	return t.Create(ctx, exec, d.Name, model, record)
}
