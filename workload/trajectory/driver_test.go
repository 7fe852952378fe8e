package trajectory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
)

// memStore is a Store over an Oracle: what the driver tests need from a
// database. lie makes it answer region queries wrongly.
type memStore struct {
	mu      sync.Mutex
	o       *Oracle
	written []int64 // (user, slot of week) keys in write order
	lie     bool
}

func newMemStore() *memStore { return &memStore{o: NewOracle()} }

func (m *memStore) Write(_ context.Context, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.o.Add(recs...)
	for _, r := range recs {
		m.written = append(m.written, r.User<<12|int64(r.Weekday-1)*SlotsPerDay+int64(r.Slot()))
	}
	return nil
}

func (m *memStore) Distance(_ context.Context, p Point, r int64) ([]Hit, error) {
	return m.o.Distance(p, r), nil
}

func (m *memStore) KNN(_ context.Context, p Point, k int, d int64) ([]Hit, error) {
	return m.o.KNN(p, k, d), nil
}
func (m *memStore) Range(_ context.Context, t Triangle) ([]Hit, error) { return m.o.Range(t), nil }
func (m *memStore) Region(_ context.Context, d Weekday, s int) (Busiest, bool, error) {
	b, ok := m.o.Region(d, s)
	if m.lie {
		b.Visits++
	}
	return b, ok, nil
}
func (m *memStore) Counts(context.Context) (Counts, error) { return m.o.Counts(), nil }
func (m *memStore) Reset(context.Context) error            { m.o = NewOracle(); return nil }
func (m *memStore) Close() error                           { return nil }

var _ Store = (*memStore)(nil)

func workers[T runner.Worker](cs []T) []runner.Worker {
	out := make([]runner.Worker, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// drive runs each worker's own number of requests, as a run does.
func drive(t *testing.T, ws []runner.Worker, counts []int64) *recorder.Recorder {
	t.Helper()
	rec := recorder.New(Ops, time.Now())
	handles := make([]*recorder.Handle, len(ws))
	for i := range handles {
		handles[i] = rec.Handle()
	}
	runner.Shares(context.Background(), ws, handles, counts, 0)
	return rec
}

func TestWriteClients(t *testing.T) {
	t.Parallel()
	g := newGen(t, 0.002, 4)
	for _, tc := range []struct {
		mode    Mode
		clients int
		batch   int
		want    int // clients made
	}{
		{Sequential, 4, 100, 1},
		{Random, 4, 333, 4},
		{Random, 3, 1, 3},
	} {
		m := newMemStore()
		cs, err := WriteClients(m, g, tc.mode, tc.clients, tc.batch, 9)
		if err != nil || len(cs) != tc.want {
			t.Fatalf("%s: %d clients, %v", tc.mode, len(cs), err)
		}
		counts := make([]int64, len(cs))
		total := int64(0)
		for i, c := range cs {
			counts[i] = c.Requests()
			total += c.Requests()
		}
		rec := drive(t, workers(cs), counts)
		snap := rec.Tick(time.Now())
		if got := snap.Hists[OpWrite].TotalCount(); got != total {
			t.Fatalf("%s: recorded %d writes, want %d", tc.mode, got, total)
		}
		// Every record exactly once; sequential in index order, random not.
		if int64(len(m.written)) != g.Len() {
			t.Fatalf("%s: wrote %d records, want %d", tc.mode, len(m.written), g.Len())
		}
		seen := map[int64]bool{}
		inOrder := true
		cur := g.NewCursor()
		for i, k := range m.written {
			if seen[k] {
				t.Fatalf("%s: record %x written twice", tc.mode, k)
			}
			seen[k] = true
			r := cur.At(int64(i))
			if k != r.User<<12|int64(r.Weekday-1)*SlotsPerDay+int64(r.Slot()) {
				inOrder = false
			}
		}
		if inOrder != (tc.mode == Sequential) {
			t.Fatalf("%s: written in index order = %v", tc.mode, inOrder)
		}
		var st Stats
		for _, c := range cs {
			st.Merge(&c.Stats)
		}
		if st.N != total || st.Errors != 0 {
			t.Fatalf("%s: stats %+v", tc.mode, st)
		}
	}
	if _, err := WriteClients(newMemStore(), g, Random, 4, 0, 1); err == nil {
		t.Fatal("batch 0 accepted")
	}
}

func TestReadClientsCheckAnswers(t *testing.T) {
	t.Parallel()
	g := newGen(t, 0.002, 4)
	m := newMemStore()
	cur := g.NewCursor()
	for i := range g.Len() {
		m.Write(context.Background(), []Record{cur.At(i)})
	}
	ref, err := OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	list := MakeQueries(g.City(), OpRegion, QueryOptions{N: 7, Seed: 1})
	// Ask only for slots that have records, so a lie is visible.
	for i := range list {
		list[i].Day, list[i].Slot = Monday, 100+i
	}
	want := make([]Answer, len(list))
	for i, q := range list {
		want[i] = ref.Answer(q)
	}
	for _, tc := range []struct {
		mode    Mode
		lie     bool
		clients int
	}{
		{Sequential, false, 1}, {Random, false, 4}, {Random, true, 4},
	} {
		m.lie = tc.lie
		cs, err := ReadClients(m, list, want, tc.mode, 4, 3, 2)
		if err != nil || len(cs) != tc.clients {
			t.Fatalf("%d clients, %v", len(cs), err)
		}
		counts := make([]int64, len(cs))
		var total int64
		for i, c := range cs {
			counts[i] = c.Requests()
			total += counts[i]
		}
		if total != 21 {
			t.Fatalf("%d requests, want 7 queries x 3", total)
		}
		rec := drive(t, workers(cs), counts)
		snap := rec.Tick(time.Now())
		okN, wrong := snap.Hists[OpRegion].TotalCount(), snap.Errors[OpRegion]["wrong answer"]
		if tc.lie && (wrong != 21 || okN != 0) || !tc.lie && (wrong != 0 || okN != 21) {
			t.Fatalf("%s lie=%v: %d right, %d wrong", tc.mode, tc.lie, okN, wrong)
		}
		if tc.lie {
			var wa *WrongAnswer
			if len(cs[0].Wrong) == 0 || !errors.As(cs[0].Stats.FirstErr, &wa) {
				t.Fatal("wrong answers not kept")
			}
		}
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	var s Stats
	for _, ms := range []int{1, 2, 3} {
		s.observe(time.Duration(ms)*time.Millisecond, nil)
	}
	s.observe(time.Second, errors.New("x"))
	mean, sd := s.MeanSD()
	if s.N != 3 || s.Errors != 1 || mean < 0.0019999 || mean > 0.0020001 || sd < 0.00099 || sd > 0.00101 {
		t.Fatalf("stats %+v mean %v sd %v", s, mean, sd)
	}
}

// TestClientsMeasureFromIntendedStart: a request given an intended start
// (open loop) counts its latency from it, once; without one, from Do.
func TestClientsMeasureFromIntendedStart(t *testing.T) {
	t.Parallel()
	g, err := New(Options{Scale: 0.0002, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := newMemStore()
	wcs, err := WriteClients(st, g, Sequential, 1, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	list := MakeQueries(g.City(), OpRegion, QueryOptions{N: 1, Seed: 1})
	rcs, err := ReadClients(st, list, nil, Sequential, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		c     runner.Worker
		stats *Stats
	}{
		{"write", wcs[0], &wcs[0].Stats},
		{"read", rcs[0], &rcs[0].Stats},
	} {
		// An hour late, then on time: the first request counts the hour,
		// the second only its own time, so the mean is about half an hour.
		tc.c.(runner.Scheduled).Intended(time.Now().Add(-time.Hour))
		for range 2 {
			if _, err := tc.c.Do(context.Background(), tc.c.Next()); err != nil {
				t.Fatal(err)
			}
		}
		if mean, _ := tc.stats.MeanSD(); tc.stats.N != 2 || mean < 1800 || mean >= 3600 {
			t.Fatalf("%s: %d requests, mean %.0fs: want the first from its intended start an hour ago, the second from its own", tc.name, tc.stats.N, mean)
		}
	}
}

// stallingStore is a memStore whose every other call hangs until its
// context ends: a node that stops answering, every second request.
type stallingStore struct {
	*memStore
	calls atomic.Int64
}

func (s *stallingStore) stall(ctx context.Context) error {
	if s.calls.Add(1)%2 == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *stallingStore) Write(ctx context.Context, recs []Record) error {
	if err := s.stall(ctx); err != nil {
		return err
	}
	return s.memStore.Write(ctx, recs)
}

func (s *stallingStore) Region(ctx context.Context, d Weekday, slot int) (Busiest, bool, error) {
	if err := s.stall(ctx); err != nil {
		return Busiest{}, false, err
	}
	return s.memStore.Region(ctx, d, slot)
}

// TestClientsRetry: with a retry policy whose attempts are bounded, a
// write or query whose first attempt stalls gives it up after the bound
// and succeeds on the retry; the run's tally counts one retry and one
// recovery per request, and the records all land once.
func TestClientsRetry(t *testing.T) {
	t.Parallel()
	g, err := New(Options{Scale: 0.0002, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	st := &stallingStore{memStore: newMemStore()}
	policy := workload.Retry{Max: 1, Backoff: time.Microsecond, Timeout: 20 * time.Millisecond}
	var tally workload.RetryTally
	wcs, err := WriteClients(st, g, Sequential, 1, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	list := MakeQueries(g.City(), OpRegion, QueryOptions{N: 2, Seed: 1})
	rcs, err := ReadClients(st, list, nil, Sequential, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	wcs[0].SetRetry(policy, &tally)
	rcs[0].SetRetry(policy, &tally)
	requests := wcs[0].Requests() + rcs[0].Requests()
	for _, c := range []interface {
		runner.Worker
		Requests() int64
	}{wcs[0], rcs[0]} {
		for range c.Requests() {
			if _, err := c.Do(context.Background(), c.Next()); err != nil {
				t.Fatalf("a request failed after its retry: %v", err)
			}
		}
	}
	if got := tally.Stats(); got.Retries != requests || got.Recovered != requests || got.Exhausted != 0 {
		t.Fatalf("tally %+v, want %d retries and recoveries", got, requests)
	}
	if n := st.o.Counts().Records; n != g.Len() || wcs[0].Records() != g.Len() {
		t.Fatalf("%d records stored, %d counted, want %d", n, wcs[0].Records(), g.Len())
	}
}
