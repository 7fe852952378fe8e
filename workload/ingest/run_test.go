package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload"
)

// memStore is an in-memory Store that checks every record it receives is
// the one Generate gives for its position, and can be told to misbehave.
type memStore struct {
	seed int64
	mu   sync.Mutex
	seen map[[2]int32]bool
	dup  int
	bad  int

	calls  atomic.Int64
	resets atomic.Int64
	// fail, when set, is asked before each batch (after Reset it sees the
	// batch number within the current run, from 1).
	fail func(records int64, batch int64) error
	// block makes InsertBatch wait for its context.
	block bool
	// lose makes Count report one record fewer.
	lose bool
	// countFails makes the first countFails calls of Count fail.
	countFails atomic.Int64
	// load is the records per source of the current run (set by tests).
	load atomic.Int64
}

func newMemStore(seed int64) *memStore { return &memStore{seed: seed, seen: map[[2]int32]bool{}} }

func (m *memStore) InsertBatch(ctx context.Context, recs []Record) error {
	n := m.calls.Add(1)
	if m.block {
		<-ctx.Done()
		return ctx.Err()
	}
	if m.fail != nil {
		if err := m.fail(m.load.Load(), n); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		k := [2]int32{r.Source, r.Seq}
		if m.seen[k] {
			m.dup++
		}
		m.seen[k] = true
		if r != Generate(m.seed, int(r.Source), int64(r.Seq)) {
			m.bad++
		}
	}
	return nil
}

func (m *memStore) Count(context.Context) (int64, error) {
	if m.countFails.Add(-1) >= 0 {
		return 0, errors.New("count timed out")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(len(m.seen))
	if m.lose {
		n--
	}
	return n, nil
}

func (m *memStore) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen = map[[2]int32]bool{}
	m.calls.Store(0)
	m.resets.Add(1)
	return nil
}

func (m *memStore) Close() error { return nil }

// countRec counts what a source recorded.
type countRec struct {
	ok   atomic.Int64
	nerr atomic.Int64
}

func (c *countRec) Record(op int, d time.Duration) { c.ok.Add(1) }
func (c *countRec) Error(op int, err error)        { c.nerr.Add(1) }

func recorders(n int) ([]BatchRecorder, []*countRec) {
	out := make([]BatchRecorder, n)
	cs := make([]*countRec, n)
	for i := range out {
		cs[i] = &countRec{}
		out[i] = cs[i]
	}
	return out, cs
}

func totals(cs []*countRec) (ok, errs int64) {
	for _, c := range cs {
		ok += c.ok.Load()
		errs += c.nerr.Load()
	}
	return ok, errs
}

func TestRunInsertsEveryRecordOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sources int
		records int64
		batch   int
	}{
		{1, 1, 1},
		{3, 1000, 64}, // last batch partial
		{8, 500, 100}, // exact batches
		{2, 10, 1000}, // batch larger than the load
		{4, 257, 1},   // one record per batch
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%dx%d/%d", tc.sources, tc.records, tc.batch), func(t *testing.T) {
			t.Parallel()
			st := newMemStore(9)
			recs, cs := recorders(tc.sources)
			res := Run(t.Context(), st, RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: 9, Verify: true}, recs)
			total := int64(tc.sources) * tc.records
			if res.Err != nil || res.Failed() || res.Interrupted {
				t.Fatalf("run failed: %v", res.Err)
			}
			if res.Inserted != total || len(st.seen) != int(total) || st.dup != 0 || st.bad != 0 {
				t.Fatalf("inserted %d, stored %d distinct (%d duplicates, %d not as generated), want %d", res.Inserted, len(st.seen), st.dup, st.bad, total)
			}
			if want := float64(total) / res.Elapsed.Seconds(); res.Throughput != want || res.Throughput <= 0 {
				t.Fatalf("throughput %g, want records/elapsed = %g", res.Throughput, want)
			}
			batches := int64(tc.sources) * ((tc.records + int64(tc.batch) - 1) / int64(tc.batch))
			if ok, errs := totals(cs); ok != batches || errs != 0 {
				t.Fatalf("recorded %d batches and %d errors, want %d and 0", ok, errs, batches)
			}
		})
	}
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk full")
	tests := []struct {
		name      string
		store     func() *memStore
		timeout   time.Duration
		wantIs    error
		wantText  string
		maxErrors int64
	}{
		{"insert error", func() *memStore {
			s := newMemStore(1)
			s.fail = func(_, batch int64) error {
				if batch == 3 {
					return boom
				}
				return nil
			}
			return s
		}, 0, boom, "disk full", 4},
		{"timeout", func() *memStore { s := newMemStore(1); s.block = true; return s }, 30 * time.Millisecond, ErrTimeout, "after 30ms", 4},
		{"lost records", func() *memStore { s := newMemStore(1); s.lose = true; return s }, 0, ErrLost, "3999 records stored, 4000 acknowledged", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := tc.store()
			recs, cs := recorders(4)
			start := time.Now()
			res := Run(t.Context(), st, RunConfig{Sources: 4, Records: 1000, Batch: 10, Seed: 1, Timeout: tc.timeout, Verify: true}, recs)
			if !res.Failed() || !errors.Is(res.Err, tc.wantIs) || !strings.Contains(res.Cause(), tc.wantText) {
				t.Fatalf("result %+v: want a failure wrapping %v saying %q", res, tc.wantIs, tc.wantText)
			}
			if res.Throughput != 0 {
				t.Fatalf("a failed run has throughput %g", res.Throughput)
			}
			if _, errs := totals(cs); errs < 1 && tc.maxErrors > 0 || errs > tc.maxErrors {
				t.Fatalf("%d batch errors recorded, want 1..%d", errs, tc.maxErrors)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("failing run took %s", time.Since(start))
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	st := newMemStore(1)
	st.block = true
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	recs, cs := recorders(2)
	res := Run(ctx, st, RunConfig{Sources: 2, Records: 100, Batch: 10}, recs)
	if !res.Interrupted || res.Failed() || res.Cause() != "" {
		t.Fatalf("interrupted run: %+v", res)
	}
	if _, errs := totals(cs); errs != 0 {
		t.Fatalf("an interrupt recorded %d database errors", errs)
	}
}

func TestRunConfigValidate(t *testing.T) {
	t.Parallel()
	good := RunConfig{Sources: 8, Records: 10, Batch: 5}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*RunConfig)
		want string
	}{
		{"no sources", func(c *RunConfig) { c.Sources = 0 }, "--sources"},
		{"no batch", func(c *RunConfig) { c.Batch = 0 }, "--batch"},
		{"no records", func(c *RunConfig) { c.Records = 0 }, "--records"},
		{"too many records", func(c *RunConfig) { c.Records = MaxRecords + 1 }, "at most"},
		{"negative timeout", func(c *RunConfig) { c.Timeout = -time.Second }, "--timeout"},
		{"negative rate", func(c *RunConfig) { c.Rate = -1 }, "--rate"},
		{"rate not a number", func(c *RunConfig) { c.Rate = math.NaN() }, "--rate"},
		{"infinite rate", func(c *RunConfig) { c.Rate = math.Inf(1) }, "--rate"},
	} {
		c := good
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
}

// timedStore is memStore with a service time, noting when each batch
// (source, index of its first record) entered and left InsertBatch.
type timedStore struct {
	*memStore
	service time.Duration
	mu      sync.Mutex
	in, out map[[2]int64]time.Time
}

func newTimedStore(service time.Duration) *timedStore {
	return &timedStore{memStore: newMemStore(1), service: service, in: map[[2]int64]time.Time{}, out: map[[2]int64]time.Time{}}
}

func (s *timedStore) InsertBatch(ctx context.Context, recs []Record) error {
	k := [2]int64{int64(recs[0].Source), int64(recs[0].Seq)}
	s.mu.Lock()
	s.in[k] = time.Now()
	s.mu.Unlock()
	if s.service > 0 {
		time.Sleep(s.service)
	}
	err := s.memStore.InsertBatch(ctx, recs)
	s.mu.Lock()
	s.out[k] = time.Now()
	s.mu.Unlock()
	return err
}

// latRec keeps every latency a source recorded, in order.
type latRec struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (r *latRec) Record(_ int, d time.Duration) { r.mu.Lock(); r.lat = append(r.lat, d); r.mu.Unlock() }
func (r *latRec) Error(int, error)              {}

// TestRunOpenLoopLatencyFromIntendedStart checks the open-loop definition
// with a store slower than the rate: one source is due a batch every
// millisecond, each batch takes at least 40 ms, so the source falls behind
// and batch k's latency must run from its intended start (the run's start
// plus k ms), not from when it was sent. The bound is derived from times
// the store itself noted, so the test does not depend on machine speed:
// the run's start is no later than the first batch's entry, hence batch k's
// latency is at least its exit minus (first entry + k ms). A closed-loop
// measurement gives about 40 ms for every batch, far below that bound from
// the second batch on (the bound grows by 39 ms a batch).
func TestRunOpenLoopLatencyFromIntendedStart(t *testing.T) {
	t.Parallel()
	const batches = 6
	st := newTimedStore(40 * time.Millisecond)
	rec := &latRec{}
	cfg := RunConfig{Sources: 1, Records: batches * 10, Batch: 10, Seed: 1, Rate: 1000, Verify: true}
	res := Run(t.Context(), st, cfg, []BatchRecorder{rec})
	if res.Failed() || res.Inserted != batches*10 {
		t.Fatalf("run %+v", res)
	}
	if len(rec.lat) != batches {
		t.Fatalf("%d latencies recorded, want %d", len(rec.lat), batches)
	}
	first := st.in[[2]int64{0, 0}]
	for k := int64(0); k < batches; k++ {
		exit := st.out[[2]int64{0, k * 10}]
		floor := exit.Sub(first) - cfg.Intended(0, k)
		if got := rec.lat[k]; got < floor {
			t.Errorf("batch %d: latency %s, but it left the store %s after the run's start at the latest and was due at +%s: want at least %s (latency from the intended start)",
				k, got, exit.Sub(first), cfg.Intended(0, k), floor)
		}
	}
	// The backlog shows: the last batch waited behind five 40 ms batches.
	if last := rec.lat[batches-1]; last < batches*40*time.Millisecond-cfg.Intended(0, batches-1) {
		t.Errorf("last batch latency %s does not include the backlog", last)
	}
}

// TestRunOpenLoopPace checks that an open loop sends no batch before its
// intended start: two sources at 200 batches/s take turns, so source s's
// batch k is due at (2k+s)×5 ms after the start, which is after the test's
// own start time. The store is fast, so a closed loop would send all ten
// batches within a few milliseconds.
func TestRunOpenLoopPace(t *testing.T) {
	t.Parallel()
	st := newTimedStore(0)
	recs, _ := recorders(2)
	cfg := RunConfig{Sources: 2, Records: 50, Batch: 10, Seed: 1, Rate: 200, Verify: true}
	before := time.Now()
	res := Run(t.Context(), st, cfg, recs)
	if res.Failed() || res.Inserted != 100 {
		t.Fatalf("run %+v", res)
	}
	for src := range 2 {
		for k := int64(0); k < 5; k++ {
			due := cfg.Intended(src, k)
			if want := time.Duration(2*k+int64(src)) * 5 * time.Millisecond; due != want {
				t.Fatalf("Intended(%d, %d) = %s, want %s", src, k, due, want)
			}
			in, ok := st.in[[2]int64{int64(src), k * 10}]
			if !ok {
				t.Fatalf("source %d batch %d never sent", src, k)
			}
			if early := before.Add(due).Sub(in); early > 0 {
				t.Errorf("source %d batch %d sent %s before its intended start", src, k, early)
			}
		}
	}
	if last := cfg.Intended(1, 4); res.Elapsed < last {
		t.Errorf("run took %s, less than the last batch's intended start %s", res.Elapsed, last)
	}
}

// TestRunRetries sends failed batches again under a Retry policy: a batch
// that fails twice and then lands costs two retries and is recovered (the
// run succeeds with every record once); one that keeps failing fails the
// run after Max retries, and the cause says so.
func TestRunRetries(t *testing.T) {
	t.Parallel()
	boom := errors.New("write timeout")
	tests := []struct {
		name          string
		failFrom      int64 // calls >= failFrom fail ...
		failTo        int64 // ... up to failTo (0: for ever)
		wantFailed    bool
		wantRetries   int64
		wantRecovered int64
		countFails    int64 // the first Counts that fail (the third answers)
	}{
		{"recovers", 3, 4, false, 2, 1, 0},
		{"exhausted", 3, 0, true, 2, 0, 0},
		{"no failure", 0, -1, false, 0, 0, 0},
		{"count fails twice", 0, -1, false, 0, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newMemStore(1)
			st.countFails.Store(tc.countFails)
			st.fail = func(_, call int64) error {
				if tc.failFrom > 0 && call >= tc.failFrom && (tc.failTo == 0 || call <= tc.failTo) {
					return boom
				}
				return nil
			}
			recs, cs := recorders(1)
			cfg := RunConfig{Sources: 1, Records: 100, Batch: 10, Seed: 1, Verify: true,
				Retry: workload.Retry{Max: 2, Backoff: time.Millisecond}}
			res := Run(t.Context(), st, cfg, recs)
			if res.Failed() != tc.wantFailed || res.Retries != tc.wantRetries || res.Recovered != tc.wantRecovered {
				t.Fatalf("result %+v: want failed %v, %d retries, %d recovered", res, tc.wantFailed, tc.wantRetries, tc.wantRecovered)
			}
			ok, errs := totals(cs)
			if tc.wantFailed {
				if !errors.Is(res.Err, boom) || !strings.Contains(res.Cause(), "after 2 retries") || errs != 1 {
					t.Errorf("cause %q, %d batch errors: want the store's error after 2 retries, one error", res.Cause(), errs)
				}
				return
			}
			if n, _ := st.Count(t.Context()); n != 100 || ok != 10 || errs != 0 || st.dup != 0 {
				t.Errorf("%d stored, %d batches recorded, %d errors, %d duplicates: want 100, 10, 0, 0", n, ok, errs, st.dup)
			}
		})
	}
	if err := (RunConfig{Sources: 1, Records: 1, Batch: 1, Retry: workload.Retry{Max: 2}}).Validate(); err == nil || !strings.Contains(err.Error(), "--retry-backoff must be positive") {
		t.Errorf("Validate with retries and no backoff: %v", err)
	}
}
