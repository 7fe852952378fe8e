package trajectory

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// Mode is how a phase's requests are issued, as in the study.
type Mode string

const (
	// Sequential is one client issuing the requests in order: the records
	// in time order, each query of the list in turn, the list repeated.
	Sequential Mode = "sequential"
	// Random is several clients (the study's four load generators) each
	// issuing its share of the requests in a random order.
	Random Mode = "random"
)

// Modes lists every mode in run order.
var Modes = []Mode{Sequential, Random}

// ParseModes accepts "sequential", "random" or "both".
func ParseModes(s string) ([]Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case string(Sequential):
		return []Mode{Sequential}, nil
	case string(Random):
		return []Mode{Random}, nil
	case "both":
		return Modes, nil
	}
	return nil, fmt.Errorf("unknown trajectory mode %q (known: sequential, random, both)", s)
}

// Defaults of a run (the study: 1 sequential client, 4 random ones).
const (
	DefaultRandomClients = 4
	DefaultBatch         = 1000
)

// Stats accumulates one client's request latencies and errors in one phase,
// without allocating, for the per-phase mean and standard deviation.
type Stats struct {
	N      int64
	Errors int64
	sum    float64 // seconds
	sumSq  float64
	// FirstErr is the first error, for the message when a phase failed.
	FirstErr error
}

func (s *Stats) observe(d time.Duration, err error) {
	if err != nil {
		s.Errors++
		if s.FirstErr == nil {
			s.FirstErr = err
		}
		return
	}
	x := d.Seconds()
	s.N++
	s.sum += x
	s.sumSq += x * x
}

// Merge adds o into s.
func (s *Stats) Merge(o *Stats) {
	s.N += o.N
	s.Errors += o.Errors
	s.sum += o.sum
	s.sumSq += o.sumSq
	if s.FirstErr == nil {
		s.FirstErr = o.FirstErr
	}
}

// MeanSD is the mean and sample standard deviation of the successful
// requests' latency, in seconds.
func (s *Stats) MeanSD() (mean, sd float64) {
	if s.N == 0 {
		return 0, 0
	}
	mean = s.sum / float64(s.N)
	if s.N > 1 {
		sd = math.Sqrt(max(0, (s.sumSq-float64(s.N)*mean*mean)/float64(s.N-1)))
	}
	return mean, sd
}

// startClock is where a client's next request counts its latency from: the
// intended start an open-loop runner gave it, or the moment Do begins. In
// an open loop the per-phase mean and deviation then include the wait for a
// late start, like the run's histograms, instead of hiding the backlog.
type startClock struct{ intended time.Time }

// Intended makes the next request's latency count from t, its intended
// start in an open loop (runner.Scheduled calls it before Next).
func (s *startClock) Intended(t time.Time) { s.intended = t }

// begin is the start of the request Do is about to send; an intended start
// holds for one request only.
func (s *startClock) begin() time.Time {
	t := s.intended
	if t.IsZero() {
		return time.Now()
	}
	s.intended = time.Time{}
	return t
}

// retrying is a client's retry policy (workload.Retry; the zero value
// does not retry) and the run's tally of what it did (nil: none kept).
type retrying struct {
	retry workload.Retry
	tally *workload.RetryTally
}

// SetRetry makes each request retried under r, counted in tally (which
// every client of a run shares).
func (c *retrying) SetRetry(r workload.Retry, tally *workload.RetryTally) {
	c.retry, c.tally = r, tally
}

// do runs attempt under the policy.
func (c *retrying) do(ctx context.Context, attempt func(context.Context) error) error {
	return c.tally.Do(ctx, c.retry, attempt)
}

// WriteClient writes its share of the records, Batch records per request.
// It is a runner.Worker: Next prepares the next request's records (not
// timed), Do writes them (timed).
type WriteClient struct {
	w        Writer
	cur      *Cursor
	perm     *Permutation // nil: positions are record indices
	pos, end int64        // next position, end of this client's share
	buf      []Record
	n        int
	requests int64
	records  int64
	Stats    Stats
	startClock
	retrying
}

// WriteClients splits g's records between clients for mode: sequential is
// one client writing records 0..n-1 in order; random gives each of clients
// clients a quarter (a 1/clients share) of a seeded random permutation of
// the records, as the study's four load generators each wrote a quarter of
// the dataset in random order.
func WriteClients(w Writer, g *Generator, mode Mode, clients, batch int, seed int64) ([]*WriteClient, error) {
	if batch < 1 {
		return nil, fmt.Errorf("batch must be at least 1 (got %d)", batch)
	}
	if clients < 1 {
		return nil, fmt.Errorf("clients must be at least 1 (got %d)", clients)
	}
	var perm *Permutation
	if mode == Sequential {
		clients = 1
	} else {
		perm = NewPermutation(g.Len(), seed)
	}
	out := make([]*WriteClient, clients)
	for i := range out {
		from := g.Len() * int64(i) / int64(clients)
		to := g.Len() * int64(i+1) / int64(clients)
		out[i] = &WriteClient{
			w: w, cur: g.NewCursor(), perm: perm, pos: from, end: to,
			buf:      make([]Record, batch),
			requests: (to - from + int64(batch) - 1) / int64(batch),
		}
	}
	return out, nil
}

// Requests is how many write requests the client makes.
func (c *WriteClient) Requests() int64 { return c.requests }

// Records is how many records the client has written successfully.
func (c *WriteClient) Records() int64 { return c.records }

// Next prepares the next batch.
func (c *WriteClient) Next() int {
	c.n = int(min(int64(len(c.buf)), c.end-c.pos))
	if c.perm == nil {
		c.cur.Fill(c.pos, c.buf[:c.n])
	} else {
		for j := range c.n {
			c.buf[j] = c.cur.At(c.perm.At(c.pos + int64(j)))
		}
	}
	c.pos += int64(c.n)
	return OpWrite
}

// Do writes the prepared batch.
func (c *WriteClient) Do(ctx context.Context, _ int) (int, error) {
	t0 := c.begin()
	err := c.do(ctx, func(ctx context.Context) error { return c.w.Write(ctx, c.buf[:c.n]) })
	c.Stats.observe(time.Since(t0), err)
	if err == nil {
		c.records += int64(c.n)
	}
	return -1, err
}

// WrongAnswer is the error of a request whose answer differs from the
// reference. Its kind, "wrong answer", is how a result file counts it.
type WrongAnswer struct {
	Query     Query
	Got, Want Answer
}

func (e *WrongAnswer) Error() string {
	return fmt.Sprintf("%s: got %s, want %s", e.Query, e.Got, e.Want)
}

// Kind implements recorder.KindError.
func (e *WrongAnswer) Kind() string { return "wrong answer" }

// ReadClient issues its list of queries. It is a runner.Worker.
type ReadClient struct {
	q     Querier
	list  []Query
	want  []Answer // nil: answers are not checked
	order []int    // indexes into list, in issue order
	next  int
	cur   int
	Stats Stats
	startClock
	retrying
	// Wrong holds the first few wrong answers (their count is in Stats.Errors).
	Wrong []*WrongAnswer
}

// maxWrongKept bounds ReadClient.Wrong.
const maxWrongKept = 5

// ReadClients deals repeat x len(list) requests to clients for mode:
// sequential is one client sending the list repeat times over, in order;
// random shuffles all requests with seed and gives each client a contiguous
// share. want, when not nil, holds the reference answer of each query: a
// different answer is an error of kind "wrong answer" (checking costs a
// comparison of a few ids, inside the timed request).
func ReadClients(q Querier, list []Query, want []Answer, mode Mode, clients, repeat int, seed int64) ([]*ReadClient, error) {
	if len(list) == 0 || repeat < 1 || clients < 1 {
		return nil, fmt.Errorf("need queries (%d), repeat >= 1 (%d) and clients >= 1 (%d)", len(list), repeat, clients)
	}
	if want != nil && len(want) != len(list) {
		return nil, fmt.Errorf("%d reference answers for %d queries", len(want), len(list))
	}
	all := make([]int, 0, len(list)*repeat)
	for range repeat {
		for i := range list {
			all = append(all, i)
		}
	}
	if mode == Sequential {
		clients = 1
	} else {
		r := rand.New(rand.NewPCG(uint64(seed), streamQuery))
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	}
	out := make([]*ReadClient, clients)
	for i := range out {
		from, to := len(all)*i/clients, len(all)*(i+1)/clients
		out[i] = &ReadClient{q: q, list: list, want: want, order: all[from:to]}
	}
	return out, nil
}

// Requests is how many requests the client makes.
func (c *ReadClient) Requests() int64 { return int64(len(c.order)) }

// Next picks the next query.
func (c *ReadClient) Next() int {
	c.cur = c.order[c.next%len(c.order)]
	c.next++
	return c.list[c.cur].Op
}

// Do runs it and checks the answer.
func (c *ReadClient) Do(ctx context.Context, _ int) (int, error) {
	q := c.list[c.cur]
	t0 := c.begin()
	var got Answer
	err := c.do(ctx, func(ctx context.Context) (err error) {
		got, err = q.Run(ctx, c.q)
		return err
	})
	if err == nil && c.want != nil && !got.Equal(c.want[c.cur]) {
		w := &WrongAnswer{Query: q, Got: got, Want: c.want[c.cur]}
		if len(c.Wrong) < maxWrongKept {
			c.Wrong = append(c.Wrong, w)
		}
		err = w
	}
	c.Stats.observe(time.Since(t0), err)
	return -1, err
}
