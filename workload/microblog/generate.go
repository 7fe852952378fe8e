package microblog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/workload/distrib"
)

// GenOptions configures Generate.
type GenOptions struct {
	// Users is the number of users (ids 1..Users); at least 2.
	Users int
	// Seed makes the dataset reproducible: the same (Users, Seed) gives the
	// same dataset on every run and machine.
	Seed int64
}

// MaxUsers bounds GenOptions.Users (follow ids and tables stay small enough
// to build in memory).
const MaxUsers = 10_000_000

// genEpoch is where generated time starts: the first tweet is shortly
// after it and, whatever the size, the last about genSpan later.
var genEpoch = time.Date(2013, 3, 1, 0, 0, 0, 0, time.UTC)

// genSpan is the expected time from genEpoch to the last generated tweet:
// gaps between consecutive tweets are uniform in [1µs, 2*genSpan/T] for T
// tweets. So generated tweets are always older than those a run posts.
const genSpan = 365 * 24 * time.Hour

// genParams are the generator's distribution parameters (see
// docs/microblog-generator.md for how they were calibrated).
type genParams struct {
	followingAlpha float64 // exponent of the following (out-degree) power law
	followingMin   int     // smallest following count
	followerAlpha  float64 // exponent of the follower-weight power law
	followerMin    int     // smallest follower weight
	logf           func(float64) float64
}

var defaultParams = genParams{
	followingAlpha: 2.19,
	followingMin:   8,
	followerAlpha:  2.19,
	followerMin:    8,
	logf:           math.Log,
}

// PCG stream constants: one independent stream per generation stage so a
// change in one stage leaves the others' draws untouched.
const (
	streamFollowing = 0x6d62_666f_6c6c_6f77 // "mbfollow"
	streamFollowers = 0x6d62_7765_6967_6874 // "mbweight"
	streamEdges     = 0x6d62_6564_6765_7321 // "mbedges!"
	streamTweets    = 0x6d62_7477_6565_7473 // "mbtweets"
	streamBodies    = 0x6d62_626f_6469_6573 // "mbbodies"
)

func newRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// Generate builds a synthetic microblog following the study's recipe.
// Following and follower counts are drawn from the same discrete power law
// (exponent 2.19 on [8, Users-1]) and wired into a follow graph without
// self-follows or duplicates (genFollows). Each user writes
// round(N(2^ln(f+1), ln(10(f+1)))) tweets, clipped at 0, f its follower
// count. Tweets of all users are shuffled together and get ids 1..T and
// strictly increasing times from 2013-03-01T00:00:00Z over about a year,
// with random microsecond gaps. 400 users give about the study's 10,080
// follows and 3,540 tweets; see docs/microblog-generator.md.
//
// The result depends only on (Users, Seed), is indexed, and has its
// Follows sorted by (Follower, Followee).
func Generate(o GenOptions) (*Dataset, error) {
	return generate(o, defaultParams)
}

func generate(o GenOptions, p genParams) (*Dataset, error) {
	if o.Users < 2 {
		return nil, fmt.Errorf("microblog: generate needs at least 2 users, got %d", o.Users)
	}
	if o.Users > MaxUsers {
		return nil, fmt.Errorf("microblog: generate supports at most %d users, got %d", MaxUsers, o.Users)
	}
	n := o.Users
	follows, err := genFollows(o, p)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Users: n, Seed: o.Seed, Follows: follows}
	d.Index()

	// Tweets per user from the follower counts.
	tr := newRand(o.Seed, streamTweets)
	authors := make([]int64, 0, 16*n)
	for u := 1; u <= n; u++ {
		k := tweetCount(tr, d.FollowerCount(int64(u)), p.logf)
		for range k {
			authors = append(authors, int64(u))
		}
	}
	tr.Shuffle(len(authors), func(i, j int) { authors[i], authors[j] = authors[j], authors[i] })

	br := newRand(o.Seed, streamBodies)
	tweets := make([]Tweet, len(authors))
	at := genEpoch.UnixMicro()
	maxGap := max(1, 2*genSpan.Microseconds()/int64(max(1, len(authors))))
	for i, a := range authors {
		at += 1 + tr.Int64N(maxGap)
		tweets[i] = Tweet{
			ID:     int64(i + 1),
			Author: a,
			Time:   time.UnixMicro(at).UTC(),
			Body:   RandomBody(br),
		}
	}
	d.Tweets = tweets
	return d, nil
}

// tweetCount draws the number of tweets of a user with f followers:
// round(N(mu, sigma)) clipped at 0, mu = 2^log(f+1), sigma = log(10(f+1)).
func tweetCount(r *rand.Rand, f int, logf func(float64) float64) int {
	x := float64(f) + 1
	mu := math.Pow(2, logf(x))
	sigma := logf(float64(x * 10))
	k := math.Round(distrib.Normal(r, mu, sigma))
	if k < 0 {
		return 0
	}
	return int(k)
}

// genFollows draws the follow graph, sorted by (Follower, Followee), with
// no self-follows and no duplicates.
//
// Every user gets a following count and a follower target, both from
// discrete power laws (stratified, see distrib.PowerLaw.SampleStratified);
// the targets are then nudged to the same total (balance). Followers are
// wired one by one, largest following count first: each follow picks a
// followee with probability proportional to its remaining follower
// capacity (integer arithmetic over a Fenwick tree), rejecting itself and
// repeats. When only invalid followees have capacity left (rare, near the
// end), a follow falls back to picking by target, so follower counts stay
// close to the drawn power law.
func genFollows(o GenOptions, p genParams) ([]Follow, error) {
	n := o.Users
	outDist, err := distrib.NewPowerLaw(p.followingAlpha, min(p.followingMin, n-1), n-1)
	if err != nil {
		return nil, fmt.Errorf("microblog: following distribution: %w", err)
	}
	inDist, err := distrib.NewPowerLaw(p.followerAlpha, min(p.followerMin, n-1), n-1)
	if err != nil {
		return nil, fmt.Errorf("microblog: follower distribution: %w", err)
	}
	or := newRand(o.Seed, streamFollowing)
	out := append([]int{0}, outDist.SampleStratified(or, n)...) // index u
	total := 0
	for _, k := range out {
		total += k
	}
	wr := newRand(o.Seed, streamFollowers)
	in := inDist.SampleStratified(wr, n) // index v-1 for user v
	if err := balance(wr, in, total, inDist.Min, n-1); err != nil {
		return nil, err
	}
	target := make([]float64, n)
	resid := distrib.NewFenwick(n)
	for i, k := range in {
		target[i] = float64(k)
		resid.Add(i, int64(k))
	}
	static, err := distrib.NewWeighted(target)
	if err != nil {
		return nil, fmt.Errorf("microblog: follower targets: %w", err)
	}

	order := make([]int, n)
	for i := range order {
		order[i] = i + 1
	}
	slices.SortStableFunc(order, func(a, b int) int { return out[b] - out[a] })

	// Each follower's follows go to their place in the sorted result.
	offset := make([]int, n+2)
	for u := 1; u <= n; u++ {
		offset[u+1] = offset[u] + out[u]
	}
	er := newRand(o.Seed, streamEdges)
	follows := make([]Follow, total)
	mark := make([]int, n+1) // mark[v] == u: u already follows v (or v == u)
	picked := make([]int64, 0, 64)
	var keys []keyed
	for _, u := range order {
		k := out[u]
		picked = picked[:0]
		if 8*k > n {
			// Many picks: weighted sampling without replacement by
			// Efraimidis-Spirakis keys (smallest Exp(1)/weight wins),
			// users with capacity left before those without.
			keys = keys[:0]
			for v := 1; v <= n; v++ {
				if v == u {
					continue
				}
				e := -math.Log(1 - er.Float64())
				kv := keyed{v: int64(v)}
				if c := resid.Get(v - 1); c > 0 {
					kv.key = e / float64(c)
				} else {
					kv.tier, kv.key = 1, e/target[v-1]
				}
				keys = append(keys, kv)
			}
			slices.SortFunc(keys, compareKeyed)
			for _, kv := range keys[:k] {
				picked = append(picked, kv.v)
			}
		} else {
			// Few picks: draw by remaining capacity, reject self and
			// repeats; fall back to the static targets when stuck.
			mark[u] = u
			for len(picked) < k {
				v := 0
				for try := 0; try < 32 && resid.Total() > 0; try++ {
					c := resid.Find(er.Int64N(resid.Total())) + 1
					if mark[c] != u {
						v = c
						break
					}
				}
				for v == 0 {
					c := static.Sample(er) + 1
					if mark[c] != u {
						v = c
					}
				}
				mark[v] = u
				picked = append(picked, int64(v))
			}
		}
		for _, v := range picked {
			if resid.Get(int(v)-1) > 0 {
				resid.Add(int(v)-1, -1)
			}
		}
		slices.Sort(picked)
		for i, v := range picked {
			follows[offset[u]+i] = Follow{Follower: int64(u), Followee: v}
		}
	}
	return follows, nil
}

// balance makes the follower targets in sum to total, so every follow has
// a place and no user is left short: a surplus is removed one follower at
// a time from users drawn in proportion to how far they are above lo, a
// deficit added to users drawn in proportion to their target (capped at
// hi). Both keep the shape of the power law.
func balance(r *rand.Rand, in []int, total, lo, hi int) error {
	sum := 0
	for _, k := range in {
		sum += k
	}
	if sum > total {
		excess := distrib.NewFenwick(len(in))
		for i, k := range in {
			excess.Add(i, int64(k-lo))
		}
		for ; sum > total && excess.Total() > 0; sum-- {
			i := excess.Find(r.Int64N(excess.Total()))
			in[i]--
			excess.Add(i, -1)
		}
	}
	if sum < total {
		w := make([]float64, len(in))
		for i, k := range in {
			if k < hi {
				w[i] = float64(k)
			}
		}
		room, err := distrib.NewWeighted(w)
		if err != nil {
			return fmt.Errorf("microblog: follower targets: %w", err)
		}
		for sum < total {
			if i := room.Sample(r); in[i] < hi {
				in[i]++
				sum++
			}
		}
	}
	return nil
}

type keyed struct {
	tier int
	key  float64
	v    int64
}

func compareKeyed(a, b keyed) int {
	switch {
	case a.tier != b.tier:
		return a.tier - b.tier
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	}
	return int(a.v - b.v)
}

// words is the vocabulary of generated bodies (ASCII, lower case).
var words = strings.Fields(`
a about after again all also always am an and any are around as at away back
be because been before being best better big but by call can cluster come
could data day did do does done down each even every feel few find first
follow for from get give go going good got great had has have he her here
him his home how i if in into is it its just know last latest life like
little look love make many me more most much my need never new news next
night no node not now of off old on one only or other our out over people
post read really right said same say see she should show so some still
such take tell than thank that the their them then there these they thing
think this those time to today too tweet two up us use very want was way
we well went were what when where which while who why will with work world
would year yes yet you your
`)

// RandomBody returns a tweet body like the generator's: 1 to 140 printable
// ASCII characters, lower-case words separated by single spaces, with an
// occasional #tag or @mention and final punctuation.
func RandomBody(r *rand.Rand) string {
	target := 1 + r.IntN(140)
	var b strings.Builder
	b.Grow(target)
	for b.Len() < target {
		var w string
		switch x := r.IntN(20); {
		case x == 0:
			w = "#" + words[r.IntN(len(words))]
		case x == 1:
			w = "@" + UserName(1+r.Int64N(9999))
		default:
			w = words[r.IntN(len(words))]
		}
		if b.Len() > 0 {
			if b.Len()+1+len(w) > target {
				break
			}
			b.WriteByte(' ')
		} else if len(w) > target {
			w = w[:target]
		}
		b.WriteString(w)
	}
	s := b.String()
	if len(s) < 140 && r.IntN(4) == 0 {
		s += string(".!?"[r.IntN(3)])
	}
	return s
}
