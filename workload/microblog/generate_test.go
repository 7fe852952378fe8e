package microblog

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Study figures (seed 000): 400 users, 10,080 follows, 3,540 tweets.
const (
	studyUsers   = 400
	studyFollows = 10_080
	studyTweets  = 3_540
)

// generated caches datasets shared by read-only tests.
var generated sync.Map // GenOptions -> *Dataset

func gen(t *testing.T, o GenOptions) *Dataset {
	t.Helper()
	if d, ok := generated.Load(o); ok {
		return d.(*Dataset)
	}
	d, err := Generate(o)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", o, err)
	}
	generated.Store(o, d)
	return d
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    GenOptions
	}{
		{"no users", GenOptions{Users: 0}},
		{"one user", GenOptions{Users: 1, Seed: 3}},
		{"negative", GenOptions{Users: -5}},
		{"too many", GenOptions{Users: MaxUsers + 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if d, err := Generate(tc.o); err == nil {
				t.Fatalf("Generate(%+v) = %d users, want an error", tc.o, d.Users)
			}
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	for _, users := range []int{2, 3, 17, 400} {
		a, err := Generate(GenOptions{Users: users, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Generate(GenOptions{Users: users, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("users %d: two Generate calls with the same options differ", users)
		}
		c, err := Generate(GenOptions{Users: users, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		if users >= 17 && reflect.DeepEqual(a.Follows, c.Follows) {
			t.Errorf("users %d: seeds 7 and 8 gave the same follows", users)
		}
		if reflect.DeepEqual(a.Tweets, c.Tweets) {
			t.Errorf("users %d: seeds 7 and 8 gave the same tweets", users)
		}
	}
}

// TestGenerateCalibration: 400 users give about the study's counts. With
// the natural log in the tweet formula (see docs/microblog-generator.md)
// each of seeds 1..5 is within the stated tolerance, not just their mean.
func TestGenerateCalibration(t *testing.T) {
	t.Parallel()
	const seeds = 5
	var follows, tweets float64
	for seed := int64(1); seed <= seeds; seed++ {
		d := gen(t, GenOptions{Users: studyUsers, Seed: seed})
		f, n := len(d.Follows), len(d.Tweets)
		t.Logf("seed %d: %d follows, %d tweets", seed, f, n)
		if rel(f, studyFollows) > 0.10 {
			t.Errorf("seed %d: %d follows, want %d within 10%%", seed, f, studyFollows)
		}
		if rel(n, studyTweets) > 0.15 {
			t.Errorf("seed %d: %d tweets, want %d within 15%%", seed, n, studyTweets)
		}
		follows += float64(f)
		tweets += float64(n)
	}
	follows /= seeds
	tweets /= seeds
	if math.Abs(follows-studyFollows)/studyFollows > 0.10 {
		t.Errorf("mean follows %.0f, want %d within 10%%", follows, studyFollows)
	}
	if math.Abs(tweets-studyTweets)/studyTweets > 0.15 {
		t.Errorf("mean tweets %.0f, want %d within 15%%", tweets, studyTweets)
	}
}

func rel(got, want int) float64 { return math.Abs(float64(got-want)) / float64(want) }

// TestGenerateInvariants checks the structure of generated datasets.
func TestGenerateInvariants(t *testing.T) {
	t.Parallel()
	tests := []GenOptions{
		{Users: 2, Seed: 1},
		{Users: 3, Seed: 2},
		{Users: 9, Seed: 3},
		{Users: 50, Seed: -4},
		{Users: 400, Seed: 1},
		{Users: 400, Seed: 2},
		{Users: 2000, Seed: 5},
	}
	for _, o := range tests {
		d := gen(t, o)
		if d.Users != o.Users || d.Seed != o.Seed {
			t.Errorf("%+v: dataset says users %d seed %d", o, d.Users, d.Seed)
		}
		n := int64(o.Users)
		for i, f := range d.Follows {
			if f.Follower < 1 || f.Follower > n || f.Followee < 1 || f.Followee > n {
				t.Fatalf("%+v: follow %d %+v out of range", o, i, f)
			}
			if f.Follower == f.Followee {
				t.Fatalf("%+v: self-follow %+v", o, f)
			}
			if i > 0 {
				p := d.Follows[i-1]
				if p == f {
					t.Fatalf("%+v: duplicate follow %+v", o, f)
				}
				if p.Follower > f.Follower || (p.Follower == f.Follower && p.Followee > f.Followee) {
					t.Fatalf("%+v: follows not sorted at %d: %+v then %+v", o, i, p, f)
				}
			}
		}
		// The index agrees with Follows (Generate called Index).
		total := 0
		for u := int64(1); u <= n; u++ {
			total += d.FollowerCount(u)
			if len(d.Following(u)) != d.FollowingCount(u) {
				t.Fatalf("%+v: FollowingCount(%d) disagrees", o, u)
			}
		}
		if total != len(d.Follows) {
			t.Errorf("%+v: follower counts sum to %d, want %d", o, total, len(d.Follows))
		}
		// Every user follows at least the power law's minimum (8, or
		// everyone else in a tiny dataset) and has followers.
		for u := int64(1); u <= n; u++ {
			if g := d.FollowingCount(u); g < min(8, o.Users-1) {
				t.Fatalf("%+v: user %d follows %d users", o, u, g)
			}
			if o.Users >= 20 && d.FollowerCount(u) == 0 {
				t.Fatalf("%+v: user %d has no followers", o, u)
			}
		}
		// A tiny dataset may have no tweets at all (3 users with 2
		// followers each draw from N(2.1, 3.4)); a larger one may not.
		if o.Users >= 50 && len(d.Tweets) == 0 {
			t.Errorf("%+v: no tweets", o)
		}
		authors := map[int64]bool{}
		var prev time.Time
		for i, tw := range d.Tweets {
			if tw.ID != int64(i+1) {
				t.Fatalf("%+v: tweet %d has id %d", o, i, tw.ID)
			}
			if tw.Author < 1 || tw.Author > n {
				t.Fatalf("%+v: tweet %d author %d out of range", o, tw.ID, tw.Author)
			}
			authors[tw.Author] = true
			if !tw.Time.After(prev) {
				t.Fatalf("%+v: tweet %d time %v not after %v", o, tw.ID, tw.Time, prev)
			}
			if tw.Time.Location() != time.UTC || tw.Time.Nanosecond()%1000 != 0 {
				t.Fatalf("%+v: tweet %d time %v not UTC microseconds", o, tw.ID, tw.Time)
			}
			if tw.Time.Before(genEpoch) || tw.Time.After(genEpoch.Add(2*genSpan)) {
				t.Fatalf("%+v: tweet %d time %v outside [epoch, epoch + 2 years]", o, tw.ID, tw.Time)
			}
			prev = tw.Time
			checkBody(t, tw.Body)
		}
		// Interleaved: the first tweets are not all by one author.
		if len(d.Tweets) >= 20 {
			first := map[int64]bool{}
			for _, tw := range d.Tweets[:20] {
				first[tw.Author] = true
			}
			if len(first) < 2 && len(authors) > 1 {
				t.Errorf("%+v: the first 20 tweets are all by one author", o)
			}
		}
	}
}

// TestGenerateInterleaved: a heavy author's tweets spread over the whole
// time range instead of coming in one block.
func TestGenerateInterleaved(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: studyUsers, Seed: 1})
	counts := map[int64]int{}
	var top int64
	for _, tw := range d.Tweets {
		counts[tw.Author]++
		if counts[tw.Author] > counts[top] || (counts[tw.Author] == counts[top] && tw.Author < top) {
			top = tw.Author
		}
	}
	first, last := -1, -1
	for i, tw := range d.Tweets {
		if tw.Author == top {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if span := last - first + 1; span < len(d.Tweets)/2 || span == counts[top] {
		t.Errorf("user %d's %d tweets span ids %d..%d of %d: not interleaved", top, counts[top], first+1, last+1, len(d.Tweets))
	}
}

func checkBody(t *testing.T, b string) {
	t.Helper()
	n := utf8.RuneCountInString(b)
	if n < 1 || n > 140 {
		t.Fatalf("body %q has %d runes, want 1..140", b, n)
	}
	if strings.TrimSpace(b) != b || strings.Contains(b, "  ") {
		t.Fatalf("body %q has stray spaces", b)
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("body %q has non-printable or non-ASCII %q", b, c)
		}
	}
}

func TestRandomBody(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	lengths := map[int]bool{}
	for range 20_000 {
		b := RandomBody(r)
		checkBody(t, b)
		lengths[len(b)] = true
	}
	// Lengths cover the whole range, short and long bodies included.
	for _, n := range []int{1, 2, 10, 70, 139, 140} {
		if !lengths[n] {
			t.Errorf("no body of %d characters in 20,000", n)
		}
	}
	a := RandomBody(rand.New(rand.NewPCG(5, 5)))
	b := RandomBody(rand.New(rand.NewPCG(5, 5)))
	if a != b {
		t.Errorf("same seed gave %q and %q", a, b)
	}
}

// TestGenerateDistributions: follower and following counts fit a power law
// well, with an exponent in the range measured on Twitter (about 2 to 2.5).
func TestGenerateDistributions(t *testing.T) {
	t.Parallel()
	for _, o := range []GenOptions{{400, 1}, {400, 2}, {400, 3}, {5000, 1}} {
		s := gen(t, o).Stats()
		for _, c := range []struct {
			name string
			fit  float64
			r2   float64
		}{
			{"follower", s.FollowerFit.Alpha, s.FollowerFit.R2},
			{"following", s.FollowingFit.Alpha, s.FollowingFit.R2},
		} {
			if c.r2 < 0.9 || c.fit < 1.8 || c.fit > 2.7 {
				t.Errorf("%+v: %s fit alpha %.2f R2 %.3f, want alpha in [1.8, 2.7] and R2 >= 0.9", o, c.name, c.fit, c.r2)
			}
		}
		// The weights are corrected for saturation (a user is drawn at
		// most once by each followee): the following fit is as close as
		// the follower fit (see docs/microblog-generator.md).
		if d := s.FollowingFit.Alpha - s.FollowerFit.Alpha; d < -0.1 || d > 0.1 || s.FollowingFit.R2 < 0.99 {
			t.Errorf("%+v: following fit alpha %.2f R2 %.3f, follower fit alpha %.2f: want within 0.1 and R2 >= 0.99", o, s.FollowingFit.Alpha, s.FollowingFit.R2, s.FollowerFit.Alpha)
		}
		if s.MaxFollowers < 10*int(s.MeanFollowers) || s.MaxFollowing < 5*int(s.MeanFollowing) {
			t.Errorf("%+v: max followers %d / following %d not heavy-tailed (mean %.1f)", o, s.MaxFollowers, s.MaxFollowing, s.MeanFollowers)
		}
	}
}

// TestTweetsFollowFollowers: users with many followers tweet more (the
// formula's mean grows as (f+1)^ln 2).
func TestTweetsFollowFollowers(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: 2000, Seed: 5})
	tweets := make([]int, d.Users+1)
	for _, tw := range d.Tweets {
		tweets[tw.Author]++
	}
	var lowSum, lowN, highSum, highN float64
	for u := 1; u <= d.Users; u++ {
		switch f := d.FollowerCount(int64(u)); {
		case f <= 12:
			lowSum += float64(tweets[u])
			lowN++
		case f >= 100:
			highSum += float64(tweets[u])
			highN++
		}
	}
	low, high := lowSum/lowN, highSum/highN
	if lowN == 0 || highN == 0 || high < 2*low {
		t.Errorf("mean tweets %.1f (<=12 followers, %v users) vs %.1f (>=100, %v users): want a strong increase", low, lowN, high, highN)
	}
}

func TestTweetCountFormula(t *testing.T) {
	t.Parallel()
	// Mean of round(N(2^ln(f+1), ln(10(f+1)))) clipped at 0, estimated.
	tests := []struct {
		f    int
		want float64 // expected mean, clipping included
		tol  float64
	}{
		{99, math.Pow(100, math.Ln2), 0.5}, // mu 24.3, sigma 6.9: clipping negligible
		{999, math.Pow(1000, math.Ln2), 1},
		{0, 1.54, 0.1}, // mu 1, sigma 2.30: E[max(0, round X)] ~ 1.54
	}
	for _, tc := range tests {
		r := rand.New(rand.NewPCG(3, 3))
		sum := 0
		const n = 100_000
		for range n {
			k := tweetCount(r, tc.f, math.Log)
			if k < 0 {
				t.Fatalf("negative tweet count %d", k)
			}
			sum += k
		}
		if m := float64(sum) / n; math.Abs(m-tc.want) > tc.tol {
			t.Errorf("f=%d: mean tweets %.2f, want %.2f ± %.2f", tc.f, m, tc.want, tc.tol)
		}
	}
}

func TestGenerateScales(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 100,000 users")
	}
	t.Parallel()
	start := time.Now()
	d, err := Generate(GenOptions{Users: 100_000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	// The time is printed, not judged: a wall-time limit failed here under
	// load (75 s for about 4 s of CPU). What the generator costs is
	// measured by scripts/microblog-parts.sh.
	t.Logf("100,000 users: %d follows, %d tweets in %v", len(d.Follows), len(d.Tweets), el)
	if per := float64(len(d.Follows)) / 100_000; per < 20 || per > 60 {
		t.Errorf("%.1f follows per user at 100,000 users, want 20..60", per)
	}
}
