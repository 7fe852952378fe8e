package sqlmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Param is a dialect's n-th bind parameter (from 1): "?" for MariaDB and
// SQLite, "$n" for PostgreSQL.
type Param func(n int) string

// Rows is what the shared reads need of a driver's rows: *sql.Rows, or
// pgx.Rows behind a Close that returns an error.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// MaxTweetIDSQL answers the largest tweet id, 0 when there is none.
const MaxTweetIDSQL = "select coalesce(max(id), 0) from tweets"

// LineSQL is model's userline and timeline statements. Each takes the
// owner and the limit and answers (id, author, time, body), newest first.
// The normalized model's derived table keeps its LIMIT, so neither SQLite
// nor MariaDB nor PostgreSQL flattens it: the top ids come from the
// clustered index, then at most limit bodies by primary key.
func LineSQL(model microblog.Model, p Param) (userline, timeline string) {
	withBodies := `select tweet_id, author, time, body from timeline
		where owner = ` + p(1) + ` order by time desc, tweet_id desc limit ` + p(2)
	byIDs := func(table string) string {
		return `select t.id, t.author, t.time, t.body
			from (select tweet_id, time from ` + table + ` where owner = ` + p(1) + `
			      order by time desc, tweet_id desc limit ` + p(2) + `) as l
			join tweets as t on t.id = l.tweet_id
			order by l.time desc, l.tweet_id desc`
	}
	switch model {
	case microblog.Denormalized:
		return `select tweet_id, owner, time, body from userline
			where owner = ` + p(1) + ` order by time desc, tweet_id desc limit ` + p(2), withBodies
	case microblog.Normalized:
		return byIDs("userline"), byIDs("timeline")
	case microblog.Async:
		return `select id, author, time, body from tweets
			where author = ` + p(1) + ` order by time desc, id desc limit ` + p(2), withBodies
	}
	return "", ""
}

// Reads is microblog.Store's Userline, Timeline and MaxTweetID over an
// adapter's driver; a store embeds it. What differs between the adapters
// (which pool, prepared or not, the driver) is in Lines and MaxID.
type Reads struct {
	// Name starts every error: "mariadb denormalized".
	Name string
	// Model is the store's model.
	Model microblog.Model
	// Lines runs LineSQL's userline (timeline false) or timeline
	// statement with user and limit.
	Lines func(ctx context.Context, timeline bool, user int64, limit int) (Rows, error)
	// MaxID runs MaxTweetIDSQL.
	MaxID func(ctx context.Context) Row
}

// Userline implements microblog.Store.
func (r Reads) Userline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return r.read(ctx, false, user, limit)
}

// Timeline implements microblog.Store.
func (r Reads) Timeline(ctx context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	return r.read(ctx, true, user, limit)
}

// MaxTweetID implements microblog.Store.
func (r Reads) MaxTweetID(ctx context.Context) (int64, error) {
	var id int64
	if err := r.MaxID(ctx).Scan(&id); err != nil {
		return 0, fmt.Errorf("%s: max tweet id: %w", r.Name, err)
	}
	return id, nil
}

// read is Userline's and Timeline's: no tweets (nil) for a limit of 0 or
// less, without asking the server.
func (r Reads) read(ctx context.Context, timeline bool, user int64, limit int) ([]microblog.Tweet, error) {
	if limit <= 0 {
		return nil, nil
	}
	what := "userline"
	if timeline {
		what = "timeline"
	}
	rows, err := r.Lines(ctx, timeline, user, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %s of %d: %w", r.Name, what, user, err)
	}
	defer rows.Close()
	out := make([]microblog.Tweet, 0, min(limit, microblog.Limit))
	for rows.Next() {
		var t microblog.Tweet
		var us int64
		if err := rows.Scan(&t.ID, &t.Author, &us, &t.Body); err != nil {
			return nil, fmt.Errorf("%s: scan %s row of %d: %w", r.Name, what, user, err)
		}
		t.Time = time.UnixMicro(us).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %s of %d: %w", r.Name, what, user, err)
	}
	return out, nil
}

// FollowersSQL answers the followers of the author given as its one
// parameter (p gives the dialect's).
func FollowersSQL(p Param) string { return "select follower from follows where followee = " + p(1) }

// Followers reads the rows of FollowersSQL for author (err: the query's
// error); name starts the errors ("sqlite normalized").
func Followers(name string, author int64, rows Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: read followers of %d: %w", name, author, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			return nil, fmt.Errorf("%s: scan follower of %d: %w", name, author, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: read followers of %d: %w", name, author, err)
	}
	return out, nil
}

// SendReads is Reads whose Lines sends model's LineSQL statements (in the
// dialect of p) with query, for an adapter that does not prepare them.
func SendReads(name string, model microblog.Model, p Param, query func(ctx context.Context, q string, args ...any) (Rows, error), maxID func(ctx context.Context) Row) Reads {
	userline, timeline := LineSQL(model, p)
	return Reads{
		Name:  name,
		Model: model,
		Lines: func(ctx context.Context, tl bool, user int64, limit int) (Rows, error) {
			if tl {
				return query(ctx, timeline, user, limit)
			}
			return query(ctx, userline, user, limit)
		},
		MaxID: maxID,
	}
}
