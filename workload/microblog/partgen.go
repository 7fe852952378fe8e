package microblog

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/fieldbench/fieldbench/workload/distrib"
)

// GeneratorVersion names the generator's method. Version 3 (this one)
// builds the dataset in parts with sampling weights corrected for
// saturation (saturation.go); version 2 built it in parts without the
// correction; version 1 wired the whole follow graph at once. The same
// (Users, Seed) gives different datasets in each version; results record
// the version (see docs/microblog-generator.md).
const GeneratorVersion = 3

// mix64 is SplitMix64's finalizer: a bijective hash of 64 bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// streamKey is the key of one stage's draws for a seed.
func streamKey(seed int64, stream uint64) uint64 {
	return mix64(uint64(seed) ^ mix64(stream))
}

// unit maps a hash to [0, 1) (53 bits).
func unit(h uint64) float64 { return float64(h>>11) * 0x1p-53 }

// feistel is a pseudo-random permutation of [0, n), keyed: a 4-round
// Feistel network on the smallest even number of bits that holds n-1,
// with cycle walking. at and inv cost O(1) (fewer than 4 walks expected)
// and need no table, so any part can ask where one item goes.
type feistel struct {
	n    uint64
	h    uint // bits of each half
	mask uint64
	k    [4]uint64
}

func newFeistel(n uint64, key uint64) feistel {
	h := uint(max(1, (bits.Len64(max(n, 1)-1)+1)/2))
	f := feistel{n: n, h: h, mask: 1<<h - 1}
	for i := range f.k {
		f.k[i] = mix64(key + uint64(i)*0x9e3779b97f4a7c15)
	}
	return f
}

func (f feistel) enc(x uint64) uint64 {
	l, r := x>>f.h, x&f.mask
	for i := range 4 {
		l, r = r, l^(mix64(r^f.k[i])&f.mask)
	}
	return l<<f.h | r
}

func (f feistel) dec(x uint64) uint64 {
	l, r := x>>f.h, x&f.mask
	for i := 3; i >= 0; i-- {
		l, r = r^(mix64(l^f.k[i])&f.mask), l
	}
	return l<<f.h | r
}

// at is the image of i in [0, n).
func (f feistel) at(i uint64) uint64 {
	x := f.enc(i)
	for x >= f.n {
		x = f.enc(x)
	}
	return x
}

// inv is the i whose image is x.
func (f feistel) inv(x uint64) uint64 {
	i := f.dec(x)
	for i >= f.n {
		i = f.dec(i)
	}
	return i
}

// Stream constants of the part-wise generator (version 2).
const (
	streamOutSlot  = 0x6d62_3273_6c6f_746f // following stratum of each user
	streamInSlot   = 0x6d62_3273_6c6f_7469 // follower stratum of each user
	streamOutU     = 0x6d62_3275_6f75_7421 // position inside the stratum
	streamInU      = 0x6d62_3275_696e_2121
	streamRing     = 0x6d62_3272_696e_6721 // the floor ring
	streamTweetIDs = 0x6d62_3274_7769_6473 // tweet id permutation
	streamTimes    = 0x6d62_3274_696d_6573 // time inside a tweet's slot
)

// partGen is what a part computes from (Users, Seed) alone before it
// wires its users' followers: O(Users) numbers, no graph.
type partGen struct {
	o       GenOptions
	p       genParams
	n       int
	part    Part
	floor   int         // every user follows and is followed by this many on the ring
	ring    feistel     // user u sits at position ring.at(u-1)
	offsets []uint64    // u follows the users at its position + offsets[t]
	extra   cumulative  // users by weight (0 for the heavy users)
	heavy   []heavyUser // the users of the largest weights, by id
	heavyW  int64       // their weights' sum
	in      []int       // follower counts of the part's users
	tweets  []int       // tweet counts of the part's users
	before  int64       // tweets of users before the part
	whole   Counts
	ids     feistel // tweet ids: the g-th tweet in (author, k) order gets id ids.at(g)+1
	slot    int64   // µs of time per tweet id
}

// newPartGen draws every user's facts (following count, follower count,
// tweet count: each from the user's id, Users and Seed alone) and keeps
// what part p needs: the sampler of followers by following count over all
// users, and the follower and tweet counts of p's users.
func newPartGen(o GenOptions, pp genParams, p Part) (*partGen, error) {
	if o.Users < 2 {
		return nil, fmt.Errorf("microblog: generate needs at least 2 users, got %d", o.Users)
	}
	if o.Users > MaxUsers {
		return nil, fmt.Errorf("microblog: generate supports at most %d users, got %d", MaxUsers, o.Users)
	}
	n := o.Users
	if p.N < 1 || p.I < 0 || p.I >= p.N || p.First < 1 || p.Last > int64(n) || p.First > p.Last {
		return nil, fmt.Errorf("microblog: part %d/%d holds users %d..%d of 1..%d", p.I, p.N, p.First, p.Last, n)
	}
	g := &partGen{o: o, p: pp, n: n, part: p, floor: min(pp.followingMin, pp.followerMin, n-1)}
	outLaw, err := distrib.NewPowerLaw(pp.followingAlpha, min(pp.followingMin, n-1), n-1)
	if err != nil {
		return nil, fmt.Errorf("microblog: following distribution: %w", err)
	}
	inLaw := outLaw // the same law (one table of Users floats)
	if pp.followerAlpha != pp.followingAlpha || pp.followerMin != pp.followingMin {
		if inLaw, err = distrib.NewPowerLaw(pp.followerAlpha, min(pp.followerMin, n-1), n-1); err != nil {
			return nil, fmt.Errorf("microblog: follower distribution: %w", err)
		}
	}
	outSlot := newFeistel(uint64(n), streamKey(o.Seed, streamOutSlot))
	inSlot := newFeistel(uint64(n), streamKey(o.Seed, streamInSlot))
	outU, inU := streamKey(o.Seed, streamOutU), streamKey(o.Seed, streamInU)
	tweetKey := streamKey(o.Seed, streamTweets)
	pcg := rand.NewPCG(0, 0)
	r := rand.New(pcg)

	size := int(p.Last - p.First + 1)
	g.in, g.tweets = make([]int, size), make([]int, size)
	g.extra.prefix = make([]int64, n+1)
	bins := newDegreeBins(int64(n))
	outBins, inBins := newBinTotals(bins), newBinTotals(bins)
	var follows, tweets int64
	for i := range n {
		u := int64(i + 1)
		// Stratified: user u's value is drawn from stratum slot(u) of n
		// equal-probability strata, the strata shuffled over the users.
		uo := float64(float64(outSlot.at(uint64(i)))+unit(mix64(outU^uint64(i)))) / float64(n)
		ui := float64(float64(inSlot.at(uint64(i)))+unit(mix64(inU^uint64(i)))) / float64(n)
		out, in := outLaw.Quantile(uo), inLaw.Quantile(ui)
		pcg.Seed(tweetKey, uint64(u))
		k := tweetCount(r, in, pp.logf)
		// The target above the floor, for now; weights below.
		g.extra.prefix[i+1] = int64(out - g.floor)
		outBins.add(bins, int64(out-g.floor))
		inBins.add(bins, int64(in-g.floor))
		follows += int64(in)
		if u < p.First {
			g.before += int64(k)
		} else if u <= p.Last {
			g.in[u-p.First], g.tweets[u-p.First] = in, k
		}
		tweets += int64(k)
	}
	g.whole = Counts{Users: int64(n), Follows: follows, Tweets: tweets}
	// Weights corrected for saturation (saturation.go): target times
	// its bin's factor, rounded, at least 1 for a positive target.
	pool := float64(n-1-g.floor) / float64(n)
	// The heavy users, a few of the largest weights, are drawn apart
	// (eachFollowers): rejecting them once taken would make draws keep
	// failing.
	factor, heavyFrom := saturationFactors(bins, outBins, inBins, pool)
	var wsum int64
	for i := range n {
		if t := g.extra.prefix[i+1]; t > 0 {
			w := max(1, int64(float64(float64(t)*factor[bins.of(t)])+0.5))
			if t >= heavyFrom {
				g.heavy = append(g.heavy, heavyUser{u: int64(i + 1), w: w})
				g.heavyW += w
			} else {
				wsum += w
			}
		}
		g.extra.prefix[i+1] = wsum
	}
	g.extra.index()
	g.ring = newFeistel(uint64(n), streamKey(o.Seed, streamRing))
	rr := newRand(o.Seed, streamRing)
	for len(g.offsets) < g.floor {
		c := 1 + rr.Uint64N(uint64(n-1))
		if !slices.Contains(g.offsets, c) {
			g.offsets = append(g.offsets, c)
		}
	}
	g.ids = newFeistel(uint64(tweets), streamKey(o.Seed, streamTweetIDs))
	g.slot = max(1, genSpan.Microseconds()/max(1, tweets))
	return g, nil
}

// heavyUser is a user drawn apart from the cumulative table.
type heavyUser struct{ u, w int64 }

// heavyWeight is u's weight if it is heavy, else 0.
func (g *partGen) heavyWeight(u int64) int64 {
	if i, ok := slices.BinarySearchFunc(g.heavy, u, func(h heavyUser, u int64) int { return cmp.Compare(h.u, u) }); ok {
		return g.heavy[i].w
	}
	return 0
}

// esKey is a user's key in weighted sampling without replacement.
type esKey struct {
	key float64
	v   uint32
}

// cumulative samples users in proportion to integer weights: prefix[i]
// is the sum of the weights of indices below i; guide[b] is the index
// holding the smallest draw of bucket b, so a draw searches a few entries.
type cumulative struct {
	prefix []int64
	guide  []int32
	shift  uint
}

func (c *cumulative) total() int64 { return c.prefix[len(c.prefix)-1] }

func (c *cumulative) weight(i int) int64 { return c.prefix[i+1] - c.prefix[i] }

// index builds the guide: about one bucket per 8 indices.
func (c *cumulative) index() {
	t := c.total()
	if t == 0 {
		return
	}
	buckets := int64(max(1, (len(c.prefix)-1)/8))
	for c.shift = 0; t>>c.shift > buckets; c.shift++ {
	}
	nb := (t-1)>>c.shift + 1 // buckets holding draws 0..t-1
	c.guide = make([]int32, nb+1)
	i := 0
	for b := range nb {
		x := b << c.shift
		for c.prefix[i+1] <= x {
			i++
		}
		c.guide[b] = int32(i)
	}
	c.guide[nb] = int32(len(c.prefix) - 2)
}

// at is the index holding draw x in [0, total()): for x uniform, index
// i with probability weight(i) / total().
func (c *cumulative) at(x int64) int64 {
	b := x >> c.shift
	lo, hi := int(c.guide[b]), int(c.guide[b+1])
	// The first i in [lo, hi] with prefix[i+1] > x.
	i := lo + sort.Search(hi-lo, func(k int) bool { return c.prefix[lo+k+1] > x })
	return int64(i)
}

// bitset marks users while one user's followers are drawn.
type bitset []uint64

func (b bitset) has(u int64) bool { return b[u>>6]&(1<<(u&63)) != 0 }
func (b bitset) set(u int64)      { b[u>>6] |= 1 << (u & 63) }
func (b bitset) clear(u int64)    { b[u>>6] &^= 1 << (u & 63) }

// eachFollowers calls fn with every user v of the part, in order, and its
// followers, ascending (the slice is reused: copy what you keep).
//
// v's followers are: the floor users, the g.floor users at v's ring
// position minus each offset (so every user follows and is followed by
// exactly g.floor users on the ring); then, for the rest of v's follower
// count, users drawn from v's own stream in proportion to their following
// count above the floor (alias sampler over all users), rejecting v
// itself and users already drawn; a user whose draws keep hitting taken
// users (a rare, very popular v) draws the rest at once by weighted
// sampling without replacement (Efraimidis-Spirakis keys). v's follower
// count is exactly its drawn count; a user's following count is the floor
// plus what the draws give it, in expectation its drawn count.
func (g *partGen) eachFollowers(fn func(v int64, followers []int64) error) error {
	n := int64(g.n)
	seen := make(bitset, (n+64)/64)
	edgeKey := streamKey(g.o.Seed, streamEdges)
	pcg := rand.NewPCG(0, 0)
	r := rand.New(pcg)
	var list []int64
	var keys []esKey
	for v := g.part.First; v <= g.part.Last; v++ {
		in := g.in[v-g.part.First]
		list = list[:0]
		seen.set(v)
		heavyLeft := g.heavyW - g.heavyWeight(v)
		pos := g.ring.at(uint64(v - 1))
		for _, c := range g.offsets {
			u := int64(g.ring.inv((pos+uint64(n)-c)%uint64(n))) + 1
			seen.set(u)
			heavyLeft -= g.heavyWeight(u)
			list = append(list, u)
		}
		pcg.Seed(edgeKey, uint64(v))
		light := g.extra.total()
		for len(list) < in {
			if light+heavyLeft == 0 || 8*(in-len(list)) > g.n {
				break
			}
			// In proportion to weight among the users not taken: a
			// light user is drawn from the table and rejected if taken,
			// a heavy one from those not taken.
			picked := int64(0)
			for range 64 {
				x := r.Int64N(light + heavyLeft)
				if x < light {
					if u := g.extra.at(x) + 1; !seen.has(u) {
						picked = u
						break
					}
					continue
				}
				x -= light
				for _, h := range g.heavy {
					if seen.has(h.u) {
						continue
					}
					if x < h.w {
						picked = h.u
						heavyLeft -= h.w
						break
					}
					x -= h.w
				}
				break
			}
			if picked == 0 {
				break
			}
			seen.set(picked)
			list = append(list, picked)
		}
		if need := in - len(list); need > 0 {
			// Many left: keys for every user not taken (those with
			// following above the floor first), smallest keys win.
			keys = keys[:0]
			for u := int64(1); u <= n; u++ {
				if seen.has(u) {
					continue
				}
				// Keys of users with weight are at most -ln(2^-53)
				// < 40; those without come after them, in random order.
				e := -math.Log(1 - r.Float64())
				k := esKey{v: uint32(u), key: 1000 + e}
				if w := g.extra.weight(int(u-1)) + g.heavyWeight(u); w > 0 {
					k.key = e / float64(w)
				}
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(a, b esKey) int {
				if c := cmp.Compare(a.key, b.key); c != 0 {
					return c
				}
				return cmp.Compare(a.v, b.v)
			})
			for _, k := range keys[:need] {
				seen.set(int64(k.v))
				list = append(list, int64(k.v))
			}
		}
		seen.clear(v)
		for _, u := range list {
			seen.clear(u)
		}
		slices.Sort(list)
		if err := fn(v, list); err != nil {
			return err
		}
	}
	return nil
}

// partFollows is the number of follows of the part.
func (g *partGen) partFollows() int {
	n := 0
	for _, k := range g.in {
		n += k
	}
	return n
}

// tweetKey is one tweet of the part before its time and body are made.
type tweetKey struct{ id, author int64 }

// tweetKeys lists the part's tweets by id. The tweets of all users, in
// order of (author, k), are numbered g = 0..T-1; tweet g gets id
// ids.at(g)+1: a pseudo-random permutation, so authors interleave in
// time as before, and any part knows its tweets' ids from the tweet
// counts alone.
func (g *partGen) tweetKeys() []tweetKey {
	total := 0
	for _, k := range g.tweets {
		total += k
	}
	keys := make([]tweetKey, 0, total)
	idx := uint64(g.before)
	for i, k := range g.tweets {
		for range k {
			keys = append(keys, tweetKey{id: int64(g.ids.at(idx)) + 1, author: g.part.First + int64(i)})
			idx++
		}
	}
	slices.SortFunc(keys, func(a, b tweetKey) int { return int(a.id - b.id) })
	return keys
}

// tweet makes the tweet of k: its time is in the id's own slot of
// g.slot µs (so time increases strictly with id and the tweets span
// about genSpan), its body from the id's own stream.
type tweetMaker struct {
	pcg      *rand.PCG
	r        *rand.Rand
	bodyKey  uint64
	timeKey  uint64
	slot     int64
	epochMic int64
}

func (g *partGen) tweetMaker() *tweetMaker {
	pcg := rand.NewPCG(0, 0)
	return &tweetMaker{
		pcg: pcg, r: rand.New(pcg),
		bodyKey: streamKey(g.o.Seed, streamBodies), timeKey: streamKey(g.o.Seed, streamTimes),
		slot: g.slot, epochMic: genEpoch.UnixMicro(),
	}
}

func (m *tweetMaker) make(k tweetKey) Tweet {
	at := m.epochMic + (k.id-1)*m.slot + int64(mix64(m.timeKey^uint64(k.id))%uint64(m.slot))
	m.pcg.Seed(m.bodyKey, uint64(k.id))
	return Tweet{ID: k.id, Author: k.author, Time: time.UnixMicro(at).UTC(), Body: RandomBody(m.r)}
}

// Size is the whole dataset's size for o, as Generate(o).Whole() gives
// it, from the per-user facts alone: O(Users) time and memory, no graph
// (for a process that waits for a database to hold the dataset).
func Size(o GenOptions) (Counts, error) {
	g, err := newPartGen(o, defaultParams, Part{I: 0, N: 1, First: 1, Last: 1})
	if err != nil {
		return Counts{}, err
	}
	return g.whole, nil
}

// GeneratePart generates part p of the dataset of o: its users
// p.First..p.Last, every follow whose followee is one of them, and every
// tweet one of them wrote, exactly as Generate(o) holds them: the union of
// the parts of any split of 1..Users is Generate(o). Its memory grows with
// the part (plus O(Users) numbers), not with the whole dataset.
//
// The result is a part dataset: Follows (sorted by follower, followee)
// and Tweets (by id) are the part's, Users is the whole dataset's, Whole
// gives the whole dataset's counts, and Followers answers for the part's
// users only (Following for none). It is what PartLoader.PopulatePart
// needs for part p.
func GeneratePart(o GenOptions, p Part) (*Dataset, error) {
	return generatePart(o, defaultParams, p)
}

func generatePart(o GenOptions, pp genParams, p Part) (*Dataset, error) {
	g, err := newPartGen(o, pp, p)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Users: o.Users, Seed: o.Seed, part: &p, whole: g.whole}
	d.Follows = make([]Follow, 0, g.partFollows())
	err = g.eachFollowers(func(v int64, fs []int64) error {
		for _, u := range fs {
			d.Follows = append(d.Follows, Follow{Follower: u, Followee: v})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(d.Follows, compareFollow)
	keys := g.tweetKeys()
	m := g.tweetMaker()
	d.Tweets = make([]Tweet, len(keys))
	for i, k := range keys {
		d.Tweets[i] = m.make(k)
	}
	d.Index()
	return d, nil
}

func compareFollow(a, b Follow) int {
	switch {
	case a.Follower != b.Follower:
		return int(a.Follower - b.Follower)
	default:
		return int(a.Followee - b.Followee)
	}
}

// PartCSVNames are the files WritePartCSV writes for part p: UsersCSV,
// FollowsCSV and TweetsCSV for the one part of 1, else
// users-I-of-N.csv and so on, so that the parts can share a directory.
func PartCSVNames(p Part) (users, follows, tweets string) {
	if p.N <= 1 {
		return UsersCSV, FollowsCSV, TweetsCSV
	}
	suffix := fmt.Sprintf("-%d-of-%d.csv", p.I, p.N)
	return "users" + suffix, "follows" + suffix, "tweets" + suffix
}

// PartInfo is what WritePartCSV wrote.
type PartInfo struct {
	Part  Part
	Size  Counts    // the part's users, follows and tweets
	Whole Counts    // the whole dataset's
	Files [3]string // paths of the users, follows and tweets files
	// Stats are the whole dataset's statistics when the part is all of
	// it (N = 1), else nil.
	Stats *Stats
}

// WritePartCSV writes part p of the dataset of o to dir as WriteCSV
// would write the whole (same columns and header rows, follows sorted by
// follower and followee, tweets by id), into the files PartCSVNames(p)
// names, without building a Dataset: its memory is O(Users) numbers plus
// 8 bytes per follow and 16 per tweet of the part. The rows of the N
// parts of any split are together the rows of the one part of 1.
func WritePartCSV(o GenOptions, p Part, dir string) (PartInfo, error) {
	g, err := newPartGen(o, defaultParams, p)
	if err != nil {
		return PartInfo{}, err
	}
	info := PartInfo{Part: p, Whole: g.whole}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return info, fmt.Errorf("microblog: create CSV directory: %w", err)
	}
	un, fn, tn := PartCSVNames(p)
	info.Files = [3]string{filepath.Join(dir, un), filepath.Join(dir, fn), filepath.Join(dir, tn)}
	info.Size.Users = p.Last - p.First + 1

	// Follows, packed follower<<32 | followee (ids below 2^32).
	packed := make([]uint64, 0, g.partFollows())
	err = g.eachFollowers(func(v int64, fs []int64) error {
		for _, u := range fs {
			packed = append(packed, uint64(u)<<32|uint64(v))
		}
		return nil
	})
	if err != nil {
		return info, err
	}
	slices.Sort(packed)
	info.Size.Follows = int64(len(packed))
	var followers, following []int
	if p.N == 1 {
		followers, following = make([]int, o.Users), make([]int, o.Users)
		for _, e := range packed {
			following[e>>32-1]++
			followers[e&(1<<32-1)-1]++
		}
	}

	err = writeFile(info.Files[0], func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write([]string{"id", "name"}); err != nil {
			return err
		}
		for u := p.First; u <= p.Last; u++ {
			if err := cw.Write([]string{strconv.FormatInt(u, 10), UserName(u)}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return info, err
	}
	err = writeFile(info.Files[1], func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		b := []byte("follower,followee\n")
		for i, e := range packed {
			if i > 0 {
				b = b[:0]
			}
			b = strconv.AppendUint(b, e>>32, 10)
			b = append(b, ',')
			b = strconv.AppendUint(b, e&(1<<32-1), 10)
			b = append(b, '\n')
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return info, err
	}
	packed = nil

	keys := g.tweetKeys()
	info.Size.Tweets = int64(len(keys))
	m := g.tweetMaker()
	err = writeFile(info.Files[2], func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write([]string{"id", "author", "time", "body"}); err != nil {
			return err
		}
		for _, k := range keys {
			t := m.make(k)
			rec := []string{strconv.FormatInt(t.ID, 10), strconv.FormatInt(t.Author, 10), t.Time.UTC().Format(time.RFC3339Nano), t.Body}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return info, err
	}
	if p.N == 1 {
		s := statsOf(o.Users, followers, following, int(info.Size.Tweets))
		info.Stats = &s
	}
	return info, nil
}
