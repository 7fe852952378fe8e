package microblog

import (
	"cmp"
	"fmt"
	"slices"
)

// TimelineRound is the timeline rows a part load holds at most at once:
// every adapter that materializes a part's timelines (one row per tweet
// and follower of its author: 5–10 G rows in one of 8 parts of 1 M users)
// writes them in rounds of this many so that its memory stays bounded
// whatever the part's size. 200,000 rows cost a few MiB here (16 bytes
// each) and a few tens of MiB as a driver's statements, and at ~100 rows
// per follower a round still groups each follower's rows into a few
// multi-row writes (docs/microblog-generator.md, "Loads in parts").
const TimelineRound = 200_000

// TimelineRow is one timeline row of a load: the tweet Tweets[Tweet] on
// Follower's timeline.
type TimelineRow struct {
	Follower int64
	Tweet    int // index into Dataset.Tweets
}

// TimelineRounds calls fn with the timeline rows of part p's tweets (one
// per tweet of a user of p and follower of that user) at most maxRows at
// a time. Rows come follower by follower, ascending, so a follower's rows
// are consecutive and split across two rounds only where a round is full:
// a database that writes one batch per follower and round keeps its
// batches large. fn must not keep rows: the slice is reused. Beyond the
// round, it holds an index of p's tweets by author (one int per tweet of
// p) and, only if Follows is not sorted by follower, one int per follow.
func (d *Dataset) TimelineRounds(p Part, maxRows int, fn func(rows []TimelineRow) error) error {
	if maxRows < 1 {
		return fmt.Errorf("microblog: timeline rounds of %d rows", maxRows)
	}
	if p.First > p.Last {
		return nil
	}
	// byAuthor[start[a-First]:start[a-First+1]] are a's tweets, in order.
	start := make([]int, p.Last-p.First+2)
	for i := range d.Tweets {
		if a := d.Tweets[i].Author; p.Holds(a) {
			start[a-p.First+1]++
		}
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	byAuthor := make([]int, start[len(start)-1])
	next := slices.Clone(start[:len(start)-1])
	for i := range d.Tweets {
		if a := d.Tweets[i].Author; p.Holds(a) {
			byAuthor[next[a-p.First]] = i
			next[a-p.First]++
		}
	}
	next = nil
	// The follows of p's users, by follower.
	byFollower := func(a, b Follow) int { return cmp.Compare(a.Follower, b.Follower) }
	var order []int
	if !slices.IsSortedFunc(d.Follows, byFollower) {
		for i, f := range d.Follows {
			if p.Holds(f.Followee) {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(i, j int) int { return byFollower(d.Follows[i], d.Follows[j]) })
	}
	n := len(d.Follows)
	if order != nil {
		n = len(order)
	}
	round := make([]TimelineRow, 0, min(maxRows, 4096))
	for k := 0; k < n; k++ {
		f := d.Follows[k]
		if order != nil {
			f = d.Follows[order[k]]
		}
		if !p.Holds(f.Followee) {
			continue
		}
		for _, ti := range byAuthor[start[f.Followee-p.First]:start[f.Followee-p.First+1]] {
			round = append(round, TimelineRow{Follower: f.Follower, Tweet: ti})
			if len(round) == maxRows {
				if err := fn(round); err != nil {
					return err
				}
				round = round[:0]
			}
		}
	}
	if len(round) > 0 {
		return fn(round)
	}
	return nil
}
