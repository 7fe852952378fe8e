package microblog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// Operation indexes, in the order Ops lists them.
const (
	OpPost = iota
	OpUserline
	OpTimeline
	// OpAsyncLag is not a client operation: it records, for the async model,
	// the time from a post until the materializer put it in timelines.
	OpAsyncLag
)

// ClientOps are the operations a client issues (and --mix names).
var ClientOps = []string{"post", "userline", "timeline"}

// Ops returns the recorded operations for model.
func Ops(m Model) []string {
	if m == Async {
		return append(append([]string(nil), ClientOps...), "async-lag")
	}
	return ClientOps
}

// Driver turns a Store and its dataset into clients.
type Driver struct {
	store Store
	ds    *Dataset
	mix   workload.Mix
	seed  int64
	ids   *TweetIDs
	// OnPost, when set, sees every tweet a client posted successfully
	// (tests feed it to the oracle).
	OnPost func(Tweet)
	// OnPostFailed, when set, sees every post that returned an error (with
	// a Retry policy, every attempt that did: each is its own tweet): its
	// outcome is unknown (the durability audit checks whether it landed).
	OnPostFailed func(Tweet, error)
	// Retry is what a client does when an operation fails; the zero value
	// does not retry (fieldbench's default: every failure is counted). A
	// post is retried as a new tweet (a new id; same author and body, the
	// time of the retry): every store refuses a tweet id it already holds,
	// and a failed post may have landed, so the same id would fail again
	// where the first attempt had landed. Each failed attempt is reported
	// to OnPostFailed (its outcome is unknown: the durability audit finds
	// it present or absent), as a client that retries a write it could not
	// confirm may write it twice.
	Retry workload.Retry

	tally workload.RetryTally
}

// RetryStats returns the counts so far.
func (d *Driver) RetryStats() workload.RetryStats {
	return d.tally.Stats()
}

// NewDriver prepares clients for store, which holds ds. Posts take their
// ids from a random source (see TweetIDs: unique across concurrent runs;
// a shard sets its own source with UseIDs). ctx is kept for drivers that
// will need to read the store first.
func NewDriver(_ context.Context, store Store, ds *Dataset, mix workload.Mix, seed int64) (*Driver, error) {
	return &Driver{store: store, ds: ds, mix: mix, seed: seed, ids: NewTweetIDs(RandomIDSource())}, nil
}

// UseIDs makes posts take their ids from ids.
func (d *Driver) UseIDs(ids *TweetIDs) { d.ids = ids }

// Clients returns n clients. Clients are spread over the users by a seeded
// permutation: client i simulates user perm[i mod users], so with no more
// clients than users each client is a different user.
func (d *Driver) Clients(n int) []*Client {
	perm := rand.New(rand.NewPCG(uint64(d.seed), 0x5eed)).Perm(d.ds.Users)
	out := make([]*Client, n)
	for i := range out {
		out[i] = d.client(i, int64(perm[i%d.ds.Users])+1)
	}
	return out
}

func (d *Driver) client(i int, user int64) *Client {
	return &Client{d: d, user: user, rng: rand.New(rand.NewPCG(uint64(d.seed), uint64(i)+1))}
}

// Client is one simulated user.
type Client struct {
	d    *Driver
	user int64
	rng  *rand.Rand
}

// User is the user this client simulates.
func (c *Client) User() int64 { return c.user }

// Next picks the next operation from the mix.
func (c *Client) Next() int { return c.d.mix.Pick(c.rng) }

// Do runs op, retried by the driver's Retry policy. A post is grouped by
// its author's follower count; userline reads a user the client follows
// (a random user when it follows none); timeline reads the client's own
// timeline.
func (c *Client) Do(ctx context.Context, op int) (int, error) {
	var t Tweet
	if op == OpPost {
		t = Tweet{
			ID:     c.d.ids.Next(),
			Author: c.user,
			Time:   time.Now().UTC().Truncate(time.Microsecond),
			Body:   RandomBody(c.rng),
		}
	}
	var followed int64
	if op == OpUserline {
		followed = c.pickFollowed()
	}
	if op != OpPost && op != OpUserline && op != OpTimeline {
		return -1, errUnknownOp // not worth a retry
	}
	var group int
	attempts := 0
	err := c.d.tally.Do(ctx, c.d.Retry, func(ctx context.Context) (err error) {
		if attempts++; op == OpPost && attempts > 1 {
			t.ID, t.Time = c.d.ids.Next(), time.Now().UTC().Truncate(time.Microsecond)
		}
		group, err = c.once(ctx, op, t, followed)
		if err != nil && op == OpPost && c.d.OnPostFailed != nil {
			c.d.OnPostFailed(t, err)
		}
		return err
	})
	if err != nil {
		return -1, err
	}
	return group, nil
}

var errUnknownOp = errors.New("microblog: unknown operation")

// once is one attempt of op: the post of t, the userline of followed, or
// the client's timeline.
func (c *Client) once(ctx context.Context, op int, t Tweet, followed int64) (int, error) {
	switch op {
	case OpPost:
		if err := c.d.store.Post(ctx, t); err != nil {
			return -1, err
		}
		if c.d.OnPost != nil {
			c.d.OnPost(t)
		}
		return c.d.ds.FollowerCount(c.user), nil
	case OpUserline:
		_, err := c.d.store.Userline(ctx, followed, Limit)
		return -1, err
	case OpTimeline:
		_, err := c.d.store.Timeline(ctx, c.user, Limit)
		return -1, err
	}
	return -1, fmt.Errorf("%w %d", errUnknownOp, op)
}

func (c *Client) pickFollowed() int64 {
	if f := c.d.ds.Following(c.user); len(f) > 0 {
		return f[c.rng.IntN(len(f))]
	}
	return int64(c.rng.IntN(c.d.ds.Users)) + 1
}

// Materialize runs the async model's background materializer until ctx is
// done, one pass every interval while caught up (back to back while behind),
// calling lag for each tweet it materialized with the time from its post
// until the end of that pass. It returns nil on ctx's end.
func Materialize(ctx context.Context, m Materializer, interval time.Duration, lag func(time.Duration)) error {
	if interval <= 0 {
		// time.NewTicker panics on it; the CLI refuses it first.
		return fmt.Errorf("materializer interval must be positive (got %s)", interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := pass(ctx, m, lag)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CatchUp runs materializer passes until nothing is pending, calling lag (if
// not nil) for each tweet materialized.
func CatchUp(ctx context.Context, m Materializer, lag func(time.Duration)) error {
	for {
		n, err := pass(ctx, m, lag)
		if err != nil || n == 0 {
			return err
		}
	}
}

// pass is one materializer pass; it reports how many tweets it fanned out.
func pass(ctx context.Context, m Materializer, lag func(time.Duration)) (int, error) {
	done, err := m.MaterializeOnce(ctx)
	if err != nil {
		return 0, fmt.Errorf("materializer: %w", err)
	}
	if lag != nil {
		now := time.Now()
		for _, d := range done {
			lag(now.Sub(d.PostedAt))
		}
	}
	return len(done), nil
}
