package microblog

import (
	"math"
	"math/rand/v2"
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
	streamEdges  = 0x6d62_6564_6765_7321 // "mbedges!"
	streamTweets = 0x6d62_7477_6565_7473 // "mbtweets"
	streamBodies = 0x6d62_626f_6469_6573 // "mbbodies"
)

func newRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// Generate builds a synthetic microblog following the study's recipe:
// GeneratePart of the one part that holds every user (see
// docs/microblog-generator.md for the method, version GeneratorVersion).
// Following and follower counts are drawn per user from the same discrete
// power law (exponent 2.19 on [8, Users-1], stratified over the users);
// every user follows and is followed by at least 8 users; a user's
// followers are drawn in proportion to following counts, without
// self-follows or duplicates. Each user writes round(N(2^ln(f+1),
// ln(10(f+1)))) tweets, clipped at 0, f its follower count. Tweets of all
// users interleave in time and have ids 1..T and strictly increasing times
// from 2013-03-01T00:00:00Z over about a year. 400 users give about the
// study's 10,080 follows and 3,540 tweets.
//
// The result depends only on (Users, Seed), is indexed, and has its
// Follows sorted by (Follower, Followee).
func Generate(o GenOptions) (*Dataset, error) {
	return generate(o, defaultParams)
}

func generate(o GenOptions, p genParams) (*Dataset, error) {
	d, err := generatePart(o, p, Part{I: 0, N: 1, First: 1, Last: int64(max(o.Users, 1))})
	if err != nil {
		return nil, err
	}
	d.part = nil
	d.Index()
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
