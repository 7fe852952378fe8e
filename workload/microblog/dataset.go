package microblog

import "sort"

// Follow is one relationship: Follower follows Followee.
type Follow struct {
	Follower int64
	Followee int64
}

// Dataset is a generated (or loaded) microblog: users 1..Users, follows, and
// tweets with ids 1..len(Tweets) in increasing time.
type Dataset struct {
	Users   int
	Seed    int64
	Follows []Follow
	Tweets  []Tweet

	followers [][]int64 // by user id (index 0 unused)
	following [][]int64
}

// Index builds the follower/following lists; Generate calls it, and anyone
// who builds a Dataset by hand must call it before using the accessors.
func (d *Dataset) Index() {
	d.followers = make([][]int64, d.Users+1)
	d.following = make([][]int64, d.Users+1)
	for _, f := range d.Follows {
		d.followers[f.Followee] = append(d.followers[f.Followee], f.Follower)
		d.following[f.Follower] = append(d.following[f.Follower], f.Followee)
	}
	for u := range d.followers {
		sort.Slice(d.followers[u], func(i, j int) bool { return d.followers[u][i] < d.followers[u][j] })
		sort.Slice(d.following[u], func(i, j int) bool { return d.following[u][i] < d.following[u][j] })
	}
}

// Followers returns the users who follow u, ascending.
func (d *Dataset) Followers(u int64) []int64 { return d.followers[u] }

// Following returns the users u follows, ascending.
func (d *Dataset) Following(u int64) []int64 { return d.following[u] }

// FollowerCount is len(Followers(u)).
func (d *Dataset) FollowerCount(u int64) int { return len(d.followers[u]) }
