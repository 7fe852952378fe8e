package wiki

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// Dist is how a request picks its article id.
type Dist string

const (
	// Uniform picks ids uniformly in [1, articles], as the study did.
	Uniform Dist = "uniform"
	// Zipf picks ids by popularity rank from a Zipf law (rank k has weight
	// 1/k^s); ranks are mapped to ids by a fixed bijection that scatters the
	// hot articles over the id space, so a range-partitioned database does
	// not find them all on one node.
	Zipf Dist = "zipf"
)

// ParseDist validates a distribution name given by a user.
func ParseDist(s string) (Dist, error) {
	switch Dist(s) {
	case Uniform, Zipf:
		return Dist(s), nil
	}
	return "", fmt.Errorf("unknown --dist %q (known: uniform, zipf)", s)
}

// Plan describes the request sets of a run. Request streams depend only on
// the plan and (set, repetition, thread), never on what the database
// answers, so a run can be replayed exactly (see Oracle.Replay).
type Plan struct {
	Requests int     // R: requests per request set
	ReadPct  int     // r: percentage of read-only requests, 0..100
	Threads  int     // T: client threads, each doing Requests/Threads
	Dist     Dist    // how ids are picked
	ZipfS    float64 // skew of Zipf (> 1)
	Seed     int64
	Articles int64 // ids are drawn in [1, Articles]
	// Retry is what a client does when a request fails (the zero value:
	// nothing, every failure counts); a retried update reads the article
	// again and appends again. Tally, when not nil, counts what it did
	// across every client of the run.
	Retry workload.Retry
	Tally *workload.RetryTally
}

// Validate reports the first bad setting in words a user understands.
func (p Plan) Validate() error {
	switch {
	case p.Requests < 1:
		return fmt.Errorf("--requests must be at least 1 (got %d)", p.Requests)
	case p.ReadPct < 0 || p.ReadPct > 100:
		return fmt.Errorf("--reads is a percentage: 0 to 100 (got %d)", p.ReadPct)
	case p.Threads < 1:
		return fmt.Errorf("--threads must be at least 1 (got %d)", p.Threads)
	case p.Requests < p.Threads:
		return fmt.Errorf("--requests (%d) must be at least --threads (%d): each thread does requests/threads requests", p.Requests, p.Threads)
	case p.Dist != Uniform && p.Dist != Zipf:
		_, err := ParseDist(string(p.Dist))
		return err
	case p.Dist == Zipf && (!(p.ZipfS > 1) || math.IsInf(p.ZipfS, 0)):
		return fmt.Errorf("--zipf-s must be a number above 1 (got %g)", p.ZipfS)
	case p.Articles < 1:
		return fmt.Errorf("no articles to request (the database is empty)")
	}
	return p.Retry.Validate()
}

// PerThread is how many requests each thread does in one request set: R/T
// rounded down (so a set does T*floor(R/T) requests; the study's 10,000
// over 6 threads was "about 1667" each).
func (p Plan) PerThread() int64 { return int64(p.Requests / p.Threads) }

// streamRequests separates request streams from the generator's streams.
const streamRequests = 0x7769_6b69_7265_7173 // "wikireqs"

// Clients returns the Threads clients of repetition rep of request set set
// against store. Thread i's generator is seeded from (Seed, set, rep, i).
// store may be nil for clients whose Do is never called (replay).
func (p Plan) Clients(store Store, set, rep int) []*Client {
	mult := zipfMultiplier(p.Articles)
	out := make([]*Client, p.Threads)
	for i := range out {
		a := splitmix64(uint64(p.Seed) ^ streamRequests)
		b := splitmix64(splitmix64(splitmix64(a^uint64(set))^uint64(rep)) ^ uint64(i))
		r := rand.New(rand.NewPCG(a, b))
		c := &Client{store: store, rng: r, n: p.Articles, reads: p.ReadPct, mult: mult, retry: p.Retry, tally: p.Tally}
		c.into, _ = store.(ReaderInto)
		if p.Dist == Zipf && p.Articles > 1 {
			c.zipf = rand.NewZipf(r, p.ZipfS, 1, uint64(p.Articles-1))
		}
		out[i] = c
	}
	return out
}

// zipfMultiplier returns a multiplier coprime with n, so rank -> rank*m
// mod n is a bijection on [0, n).
func zipfMultiplier(n int64) uint64 {
	if n <= 1 {
		return 1
	}
	m := uint64(0x9e3779b97f4a7c15) % uint64(n)
	for m == 0 || gcd(m, uint64(n)) != 1 {
		m = m%uint64(n) + 1
	}
	return m
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Client is one client thread. It implements runner.Worker: Next draws the
// next request (untimed), Do performs it (timed).
type Client struct {
	store Store
	into  ReaderInto // store's, when it has it
	buf   []byte     // into's memory, reused read after read
	rng   *rand.Rand
	zipf  *rand.Zipf
	n     int64
	mult  uint64
	reads int
	id    int64 // article of the request Next drew
	retry workload.Retry
	tally *workload.RetryTally
	// updated counts successful updates; read it after the batch returned.
	updated int64
}

// Next draws the next request's article id and kind: OpRead with
// probability ReadPct %, else OpUpdate.
func (c *Client) Next() int {
	c.id = c.pick()
	if c.rng.IntN(100) < c.reads {
		return OpRead
	}
	return OpUpdate
}

// ID is the article of the request Next drew last.
func (c *Client) ID() int64 { return c.id }

// Updated is the number of updates this client made successfully.
func (c *Client) Updated() int64 { return c.updated }

// Acknowledged is told of a request that succeeded when something other
// than Do performed it (runner/loop's event loop, which sends the store's
// requests itself), so that Updated counts its updates too.
func (c *Client) Acknowledged(op int) {
	if op == OpUpdate {
		c.updated++
	}
}

func (c *Client) pick() int64 {
	switch {
	case c.n <= 1:
		return 1
	case c.zipf != nil:
		hi, lo := bits.Mul64(c.zipf.Uint64(), c.mult)
		return int64(bits.Rem64(hi, lo, uint64(c.n))) + 1
	}
	return c.rng.Int64N(c.n) + 1
}

// Do performs the request Next drew: read the article and, for an update,
// append "1" to its body and write it back, each attempt both, under the
// plan's Retry policy. The group is always -1.
func (c *Client) Do(ctx context.Context, op int) (int, error) {
	if err := c.tally.Do(ctx, c.retry, func(ctx context.Context) error { return c.once(ctx, op) }); err != nil {
		return -1, err
	}
	if op == OpUpdate {
		c.updated++
	}
	return -1, nil
}

// once is one attempt of the request.
func (c *Client) once(ctx context.Context, op int) error {
	a, err := c.read(ctx)
	if err != nil || op != OpUpdate {
		return err
	}
	return c.store.Update(ctx, c.id, a.Body+"1") // a copy: the next read may reuse c.buf
}

// maxKeptBuf bounds the read memory a client keeps between reads: an
// article larger than this is read into memory of its own, so a client
// holds at most this much however large the largest article is.
const maxKeptBuf = 64 << 10

// read reads the request's article, into the client's own memory when the
// store can (ReaderInto).
func (c *Client) read(ctx context.Context) (Article, error) {
	if c.into == nil {
		return c.store.Read(ctx, c.id)
	}
	a, err := c.into.ReadInto(ctx, c.id, &c.buf)
	if cap(c.buf) > maxKeptBuf {
		c.buf = nil // a's strings keep it alive as long as they need it
	}
	return a, err
}

// BatchFunc executes one repetition of a request set: every client does
// perThread requests (Next, then Do) back to back, all clients at once, and
// it returns when all are done. interrupted reports that ctx ended first.
// The CLI passes runner.Batch, which records each request's latency.
type BatchFunc func(ctx context.Context, clients []*Client, perThread int64) (interrupted bool)

// SetResult is one request set: the time of each completed repetition.
type SetResult struct {
	Set     int       // 1-based
	Seconds []float64 // one per completed repetition
	End     time.Time // when its last repetition ended
	// Partial is set when the run was interrupted during this set; Seconds
	// then holds only the repetitions that completed.
	Partial bool
	// Updated is the number of successful updates (each appended one byte),
	// interrupted repetitions included.
	Updated int64
}

// MeanSD is the mean time of the set's repetitions and their sample
// standard deviation (see MeanSD).
func (r SetResult) MeanSD() (mean, sd float64) { return MeanSD(r.Seconds) }

// Totals is what RunSets did.
type Totals struct {
	Sets        int   // request sets with at least one completed repetition
	Interrupted bool  // ctx ended before the last set completed
	Updated     int64 // successful updates, interrupted repetitions included
}

// RunSets runs sets request sets back to back, each executed repeat times,
// and hands each set to onSet as soon as it is done (also a partial one
// with at least one completed repetition). It stops at the first error of
// onSet, or when ctx ends (Totals.Interrupted).
func RunSets(ctx context.Context, store Store, p Plan, sets, repeat int, batch BatchFunc, onSet func(SetResult) error) (Totals, error) {
	var tot Totals
	if err := p.Validate(); err != nil {
		return tot, err
	}
	if sets < 1 || repeat < 1 {
		return tot, fmt.Errorf("wiki: sets (%d) and repeat (%d) must be at least 1", sets, repeat)
	}
	per := p.PerThread()
	for set := 1; set <= sets; set++ {
		// The times are kept as the repetitions end: a capacity of
		// --repeat up front made a huge --repeat (an int the flag takes)
		// a panic or a heap of gigabytes before anything ran.
		res := SetResult{Set: set, Seconds: make([]float64, 0, min(repeat, 1024))}
		for rep := 1; rep <= repeat; rep++ {
			clients := p.Clients(store, set, rep)
			t0 := time.Now()
			stopped := batch(ctx, clients, per)
			end := time.Now()
			for _, c := range clients {
				res.Updated += c.Updated()
			}
			if stopped {
				res.Partial = true
				break
			}
			res.Seconds = append(res.Seconds, end.Sub(t0).Seconds())
			res.End = end
		}
		tot.Updated += res.Updated
		tot.Interrupted = res.Partial
		if len(res.Seconds) > 0 {
			tot.Sets++
			if err := onSet(res); err != nil {
				return tot, err
			}
		}
		if res.Partial {
			return tot, nil
		}
	}
	return tot, nil
}
