package microblog

import "slices"

// Follow is one relationship: Follower follows Followee.
type Follow struct {
	Follower int64
	Followee int64
}

// Dataset is a generated (or loaded) microblog: users 1..Users, follows, and
// tweets with ids 1..len(Tweets) in increasing time.
//
// A part dataset (GeneratePart) holds one part of it: Follows and Tweets
// are the part's (Tweets ids are then some of 1..Whole().Tweets), Users is
// still the whole dataset's, and the accessors answer for the part's
// users only (Followers of the part's users; Following of none).
type Dataset struct {
	Users   int
	Seed    int64
	Follows []Follow
	Tweets  []Tweet

	followers [][]int64 // by user id (index 0 unused); a part's: by id - part.First
	following [][]int64

	part  *Part  // nil: the whole dataset
	whole Counts // of the whole dataset, when part != nil
}

// Part reports the part a part dataset holds (ok false for a whole one).
func (d *Dataset) Part() (p Part, ok bool) {
	if d.part == nil {
		return Part{}, false
	}
	return *d.part, true
}

// Whole is the size of the whole dataset: for a part dataset, of all its
// parts together (the counts a database holds once every part is in).
func (d *Dataset) Whole() Counts {
	if d.part != nil {
		return d.whole
	}
	return Counts{Users: int64(d.Users), Follows: int64(len(d.Follows)), Tweets: int64(len(d.Tweets))}
}

// Index builds the follower/following lists; Generate calls it, and anyone
// who builds a Dataset by hand must call it before using the accessors.
func (d *Dataset) Index() {
	if d.part != nil {
		d.indexPart()
		return
	}
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

// indexPart builds the follower lists of a part's users (one backing
// array; Follows sorted by follower keeps each list ascending).
func (d *Dataset) indexPart() {
	p := *d.part
	nf := make([]int, p.Last-p.First+1)
	for _, f := range d.Follows {
		if p.Holds(f.Followee) {
			nf[f.Followee-p.First]++
		}
	}
	buf := make([]int64, 0, len(d.Follows))
	d.followers = make([][]int64, len(nf))
	for i, k := range nf {
		if k > 0 {
			d.followers[i] = buf[len(buf) : len(buf) : len(buf)+k]
			buf = buf[:len(buf)+k]
		}
	}
	for _, f := range d.Follows {
		if p.Holds(f.Followee) {
			i := f.Followee - p.First
			d.followers[i] = append(d.followers[i], f.Follower)
		}
	}
	for _, l := range d.followers {
		if !slices.IsSorted(l) {
			slices.Sort(l)
		}
	}
	d.following = nil
}

// Followers returns the users who follow u, ascending.
func (d *Dataset) Followers(u int64) []int64 {
	if d.part != nil {
		if !d.part.Holds(u) {
			return nil
		}
		return d.followers[u-d.part.First]
	}
	return d.followers[u]
}

// Following returns the users u follows, ascending (nil in a part
// dataset).
func (d *Dataset) Following(u int64) []int64 {
	if d.part != nil {
		return nil
	}
	return d.following[u]
}

// FollowerCount is len(Followers(u)).
func (d *Dataset) FollowerCount(u int64) int { return len(d.Followers(u)) }

// FollowingCount is len(Following(u)).
func (d *Dataset) FollowingCount(u int64) int { return len(d.Following(u)) }
