package sqlmodel

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// FanOutSQL copies the tweets where chooses (a condition on tweets' own
// columns: id, pending) into the timeline of every current follower of
// their author.
func FanOutSQL(where string) string {
	return `insert into timeline (owner, time, tweet_id, author, body)
		select f.follower, t.time, t.id, t.author, t.body
		from tweets as t join follows as f on f.followee = t.author
		where ` + where
}

// Tx is what a materializer pass needs of a transaction.
type Tx interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	Exec(ctx context.Context, query string, args ...any) error
}

// SQLTx is a database/sql transaction as a Tx.
func SQLTx(tx *sql.Tx) Tx { return sqlTx{tx} }

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, query, args...)
	return err
}

// Pass is the async model's materializer (microblog.Materializer's
// MaterializeOnce): in one transaction, it takes up to Batch pending
// tweets (lowest ids first), copies each into the timeline of every
// current follower of its author (FanOutSQL) and clears their flag. The
// flag is set by the insert that stores the tweet, so a tweet committed
// out of id order is found by a later pass. What differs between the
// adapters is the transaction, how a pass finds and locks its tweets and
// how SQL names them.
type Pass struct {
	// Name starts every error: "mariadb async".
	Name string
	// InTx runs fn in one transaction (again, if the adapter retries it).
	InTx func(ctx context.Context, fn func(tx Tx) error) error
	// Pending finds the pass's pending tweets, (id, time) rows in id order,
	// locked as the database locks them; its one parameter is Batch.
	Pending string
	Batch   int
	// Chosen is the condition on tweets' id and pending columns that
	// names the tweets found (ids in order), with its arguments.
	Chosen func(ids []int64) (where string, args []any)
	// Done is the update's assignment that clears the flag: "pending = 0".
	Done string
}

// Run is one pass: the tweets materialized, none when nothing was pending.
func (p Pass) Run(ctx context.Context) ([]microblog.Materialized, error) {
	var out []microblog.Materialized
	err := p.InTx(ctx, func(tx Tx) (err error) {
		out, err = p.run(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p Pass) run(ctx context.Context, tx Tx) ([]microblog.Materialized, error) {
	rows, err := tx.Query(ctx, p.Pending, p.Batch)
	if err != nil {
		return nil, fmt.Errorf("%s: find pending tweets: %w", p.Name, err)
	}
	var out []microblog.Materialized
	var ids []int64
	for rows.Next() {
		var m microblog.Materialized
		var us int64
		if err := rows.Scan(&m.TweetID, &us); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s: scan pending tweet: %w", p.Name, err)
		}
		m.PostedAt = time.UnixMicro(us).UTC()
		out = append(out, m)
		ids = append(ids, m.TweetID)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("%s: find pending tweets: %w", p.Name, err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: find pending tweets: %w", p.Name, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	where, args := p.Chosen(ids)
	if err := tx.Exec(ctx, FanOutSQL(where), args...); err != nil {
		return nil, fmt.Errorf("%s: fan out %d tweets: %w", p.Name, len(out), err)
	}
	if err := tx.Exec(ctx, "update tweets set "+p.Done+" where "+where, args...); err != nil {
		return nil, fmt.Errorf("%s: mark %d tweets materialized: %w", p.Name, len(out), err)
	}
	return out, nil
}
