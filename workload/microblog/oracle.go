package microblog

import (
	"slices"
	"sync"
)

// Oracle is a brute-force reference implementation of the microblog reads,
// used to check every database adapter: it scans all follows and all
// tweets on each call, so it is slow but obviously correct. It is safe for
// concurrent use.
type Oracle struct {
	mu      sync.Mutex
	follows []Follow
	tweets  []Tweet
}

// NewOracle returns an oracle holding ds's follows and tweets (copied; ds
// need not be indexed and may change afterwards).
func NewOracle(ds *Dataset) *Oracle {
	return &Oracle{
		follows: slices.Clone(ds.Follows),
		tweets:  slices.Clone(ds.Tweets),
	}
}

// Post adds a tweet posted during a run.
func (o *Oracle) Post(t Tweet) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tweets = append(o.tweets, t)
}

// Userline returns user's newest tweets, at most limit, newest first (by
// Time, then ID, descending; see Newer). It returns nil when there are
// none or limit <= 0.
func (o *Oracle) Userline(user int64, limit int) []Tweet {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.newest(limit, func(t Tweet) bool { return t.Author == user })
}

// Timeline returns the newest tweets authored by the users that user
// follows, at most limit, newest first (see Newer). It returns nil when
// there are none or limit <= 0.
func (o *Oracle) Timeline(user int64, limit int) []Tweet {
	o.mu.Lock()
	defer o.mu.Unlock()
	followed := map[int64]bool{}
	for _, f := range o.follows {
		if f.Follower == user {
			followed[f.Followee] = true
		}
	}
	return o.newest(limit, func(t Tweet) bool { return followed[t.Author] })
}

// newest scans every tweet, keeps those matching keep, sorts them newest
// first and truncates to limit. o.mu must be held.
func (o *Oracle) newest(limit int, keep func(Tweet) bool) []Tweet {
	if limit <= 0 {
		return nil
	}
	var out []Tweet
	for _, t := range o.tweets {
		if keep(t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Tweet) int {
		switch {
		case Newer(a, b):
			return -1
		case Newer(b, a):
			return 1
		}
		return 0
	})
	if len(out) > limit {
		out = out[:limit:limit]
	}
	return out
}
