package microblog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Model is one of the study's three data models.
type Model string

const (
	// Denormalized fans out on write: a post reads the author's followers and
	// writes the tweet, the userline row and one timeline row (with body) per
	// follower in one batch.
	Denormalized Model = "denormalized"
	// Normalized keeps bodies only in the tweets table; userline and timeline
	// rows hold tweet ids and reads fetch up to Limit bodies by id.
	Normalized Model = "normalized"
	// Async writes a post once; a background materializer builds timelines
	// later and the lag is measured.
	Async Model = "async"
)

// Models lists every data model in the order `fieldbench list` shows them.
var Models = []Model{Denormalized, Normalized, Async}

// ParseModel validates a model name given by a user.
func ParseModel(s string) (Model, error) {
	for _, m := range Models {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown microblog model %q (known: denormalized, normalized, async)", s)
}

// ErrModelMismatch is wrapped by a Backend's Microblog (and PopulatePart)
// when the database holds microblog data of another model: one database
// holds one model's data, never a mix.
var ErrModelMismatch = errors.New("database holds another microblog model")

// CheckModel is the model rule of every Backend's Microblog: a database
// holding the data of one model (have; "" when it holds none) serves that
// model only. For another (want) it returns an error wrapping
// ErrModelMismatch, prefixed with name (the adapter, and what it opened
// where that helps) and saying what holds the data (where: "database",
// "keyspace", "prefix") and what to do.
func CheckModel(name string, have, want Model, where string) error {
	if have == "" || have == want {
		return nil
	}
	return fmt.Errorf("%s: %w: the %s holds the %s model; use a fresh %s (or the %s model) to run the %s model",
		name, ErrModelMismatch, where, have, where, have, want)
}

// CheckLoaded is CheckModel for the model b holds now (its MicroblogModel),
// for a Backend's Microblog that keeps no state of its own.
func CheckLoaded(ctx context.Context, b interface {
	MicroblogModel(context.Context) (Model, error)
}, name string, want Model, where string) error {
	have, err := b.MicroblogModel(ctx)
	if err != nil {
		return err
	}
	return CheckModel(name, have, want, where)
}

// BodyReads is how a normalized userline or timeline fetches the bodies of
// its up to Limit tweets from the tweets table.
type BodyReads string

const (
	// BodyReadsIn fetches them in one multi-key request (Cassandra's
	// WHERE id IN, MongoDB's $in): fieldbench's default.
	BodyReadsIn BodyReads = "in"
	// BodyReadsSeparate reads every tweet with a request of its own, all
	// in flight at once: the study's "up to 50 extra reads" per line.
	BodyReadsSeparate BodyReads = "separate"
)

// ParseBodyReads validates a --timeline-reads value.
func ParseBodyReads(s string) (BodyReads, error) {
	switch r := BodyReads(s); r {
	case BodyReadsIn, BodyReadsSeparate:
		return r, nil
	}
	return "", fmt.Errorf("unknown timeline reads %q (known: in, separate)", s)
}

// BodyReader is implemented by the Stores whose normalized lines fetch
// bodies by key and can do it either way (the SQL adapters join instead,
// in one statement, and do not implement it).
type BodyReader interface {
	// SetBodyReads chooses how the Store's normalized lines fetch bodies
	// (before its first read; not safe to call concurrently with reads).
	SetBodyReads(BodyReads)
}

// StrongReader is implemented by the Stores whose reads can ask fewer
// replicas than hold the data (Cassandra below ALL): the durability audit
// reads again what it did not find through a view that asks every
// replica, to tell a post on no replica from one the run's level missed.
type StrongReader interface {
	// Strong returns a view of the Store whose userline and timeline
	// reads ask every replica, and that level's name. The view shares the
	// Store's connections; closing it closes nothing.
	Strong() (Store, string)
}

// Limit is how many tweets a userline or timeline returns (the study's 50).
const Limit = 50

// Tweet is one message. Time has microsecond precision; order is newest
// first by (Time, ID) descending.
type Tweet struct {
	ID     int64     `json:"id"`
	Author int64     `json:"author"`
	Time   time.Time `json:"time"`
	Body   string    `json:"body"`
}

// Newer reports whether a sorts before b in a userline or timeline.
func Newer(a, b Tweet) bool {
	at, bt := a.Time.UnixMicro(), b.Time.UnixMicro()
	if at != bt {
		return at > bt
	}
	return a.ID > b.ID
}

// Store is what an adapter implements for the microblog family, for one data
// model. Implementations must be safe for concurrent use by many clients.
type Store interface {
	// Populate loads the dataset into an empty database.
	Populate(ctx context.Context, ds *Dataset) error
	// Counts reports how much is stored (used to decide whether to load).
	Counts(ctx context.Context) (Counts, error)
	// Post writes t (t.ID is unique, assigned by the workload).
	Post(ctx context.Context, t Tweet) error
	// Userline returns user's newest tweets, at most limit, newest first.
	Userline(ctx context.Context, user int64, limit int) ([]Tweet, error)
	// Timeline returns the newest tweets by the users that user follows, at
	// most limit, newest first.
	Timeline(ctx context.Context, user int64, limit int) ([]Tweet, error)
	// MaxTweetID is the largest stored tweet id (0 when none), so new posts
	// get unique ids across runs against the same database.
	MaxTweetID(ctx context.Context) (int64, error)
	Close() error
}

// Counts is what a Store holds.
type Counts struct {
	Users   int64 `json:"users"`
	Follows int64 `json:"follows"`
	Tweets  int64 `json:"tweets"`
}

// Materialized is one tweet a materializer pass copied into timelines, with
// its post time so the workload can measure the lag.
type Materialized struct {
	TweetID  int64
	PostedAt time.Time
}

// Materializer is implemented by stores of the Async model. The workload runs
// the background loop and measures lag; the adapter only does one pass.
type Materializer interface {
	// MaterializeOnce fans out tweets not yet in timelines and returns them;
	// an empty result means the timelines have caught up.
	MaterializeOnce(ctx context.Context) ([]Materialized, error)
}

// Backend is implemented by an adapter.DB that supports the microblog family.
type Backend interface {
	// Microblog returns a Store for model, or an error wrapping
	// adapter.ErrUnsupported when the model does not fit the database.
	Microblog(ctx context.Context, model Model) (Store, error)
	// MicroblogModel reports the model the database was loaded with, or ""
	// when it holds no microblog data, so a run cannot mix models.
	MicroblogModel(ctx context.Context) (Model, error)
}
