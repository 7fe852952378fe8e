package microblog

import "slices"

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
	nf := make([]int, d.Users+1) // followers per user
	ng := make([]int, d.Users+1) // following per user
	for _, f := range d.Follows {
		nf[f.Followee]++
		ng[f.Follower]++
	}
	// Two backing arrays, cut into exactly sized lists (nil when empty).
	fbuf := make([]int64, 0, len(d.Follows))
	gbuf := make([]int64, 0, len(d.Follows))
	d.followers = make([][]int64, d.Users+1)
	d.following = make([][]int64, d.Users+1)
	for u := range d.followers {
		if nf[u] > 0 {
			d.followers[u] = fbuf[len(fbuf) : len(fbuf) : len(fbuf)+nf[u]]
			fbuf = fbuf[:len(fbuf)+nf[u]]
		}
		if ng[u] > 0 {
			d.following[u] = gbuf[len(gbuf) : len(gbuf) : len(gbuf)+ng[u]]
			gbuf = gbuf[:len(gbuf)+ng[u]]
		}
	}
	for _, f := range d.Follows {
		d.followers[f.Followee] = append(d.followers[f.Followee], f.Follower)
		d.following[f.Follower] = append(d.following[f.Follower], f.Followee)
	}
	for u := range d.followers {
		// Already ascending when Follows is sorted (as Generate returns it).
		if !slices.IsSorted(d.followers[u]) {
			slices.Sort(d.followers[u])
		}
		if !slices.IsSorted(d.following[u]) {
			slices.Sort(d.following[u])
		}
	}
}

// Followers returns the users who follow u, ascending.
func (d *Dataset) Followers(u int64) []int64 { return d.followers[u] }

// Following returns the users u follows, ascending.
func (d *Dataset) Following(u int64) []int64 { return d.following[u] }

// FollowerCount is len(Followers(u)).
func (d *Dataset) FollowerCount(u int64) int { return len(d.followers[u]) }

// FollowingCount is len(Following(u)).
func (d *Dataset) FollowingCount(u int64) int { return len(d.following[u]) }
