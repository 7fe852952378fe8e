package wiki

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

func TestPlanValidate(t *testing.T) {
	t.Parallel()
	ok := Plan{Requests: 100, ReadPct: 80, Threads: 4, Dist: Uniform, ZipfS: 1.1, Seed: 1, Articles: 10}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid plan: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Plan)
		want string
	}{
		{"no requests", func(p *Plan) { p.Requests = 0 }, "--requests"},
		{"reads over 100", func(p *Plan) { p.ReadPct = 120 }, "--reads"},
		{"negative reads", func(p *Plan) { p.ReadPct = -1 }, "--reads"},
		{"no threads", func(p *Plan) { p.Threads = 0 }, "--threads"},
		{"fewer requests than threads", func(p *Plan) { p.Requests = 3 }, "at least --threads"},
		{"unknown dist", func(p *Plan) { p.Dist = "pareto" }, `unknown --dist "pareto"`},
		{"zipf s of 1", func(p *Plan) { p.Dist, p.ZipfS = Zipf, 1 }, "--zipf-s"},
		{"zipf s NaN", func(p *Plan) { p.Dist, p.ZipfS = Zipf, math.NaN() }, "--zipf-s"},
		{"no articles", func(p *Plan) { p.Articles = 0 }, "empty"},
	} {
		p := ok
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := ParseDist("zipf"); err != nil {
		t.Error(err)
	}
}

func TestPerThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r, t int
		want int64
	}{{10000, 1, 10000}, {10000, 6, 1666}, {12, 4, 3}, {5, 5, 1}} {
		if got := (Plan{Requests: tc.r, Threads: tc.t}).PerThread(); got != tc.want {
			t.Errorf("R %d T %d: %d per thread, want %d", tc.r, tc.t, got, tc.want)
		}
	}
}

// draw returns n requests of one client: op and id.
func draw(c *Client, n int) (ops []int, ids []int64) {
	for range n {
		ops = append(ops, c.Next())
		ids = append(ids, c.ID())
	}
	return ops, ids
}

func TestClientStreams(t *testing.T) {
	t.Parallel()
	const n = 20_000
	for _, tc := range []struct {
		name string
		plan Plan
	}{
		{"uniform", Plan{Requests: n, ReadPct: 80, Threads: 2, Dist: Uniform, Seed: 3, Articles: 1000}},
		{"zipf", Plan{Requests: n, ReadPct: 30, Threads: 2, Dist: Zipf, ZipfS: 1.1, Seed: 3, Articles: 1000}},
		{"one article", Plan{Requests: n, ReadPct: 50, Threads: 2, Dist: Zipf, ZipfS: 1.1, Seed: 3, Articles: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := tc.plan
			ops, ids := draw(p.Clients(nil, 2, 5)[1], n)
			ops2, ids2 := draw(p.Clients(nil, 2, 5)[1], n)
			if !equal(ops, ops2) || !equal(ids, ids2) {
				t.Fatal("the same (seed, set, repetition, thread) gave two streams")
			}
			for _, other := range [][3]int{{1, 5, 1}, {2, 4, 1}, {2, 5, 0}} {
				_, o := draw(p.Clients(nil, other[0], other[1])[other[2]], n)
				if p.Articles > 1 && equal(ids, o) {
					t.Errorf("set/rep/thread %v gave the same ids as (2, 5, 1)", other)
				}
			}
			reads, hits := 0, map[int64]int{}
			for i, op := range ops {
				if op == OpRead {
					reads++
				}
				if ids[i] < 1 || ids[i] > p.Articles {
					t.Fatalf("id %d outside [1, %d]", ids[i], p.Articles)
				}
				hits[ids[i]]++
			}
			if got := float64(reads) / n * 100; math.Abs(got-float64(p.ReadPct)) > 1.5 {
				t.Errorf("%.1f%% reads, want %d%%", got, p.ReadPct)
			}
			top := 0
			for _, h := range hits {
				top = max(top, h)
			}
			switch {
			case p.Articles == 1:
			case p.Dist == Uniform && (len(hits) < 990 || top > 60):
				t.Errorf("uniform: %d distinct ids, hottest %d hits, expected ~all 1000 and ~20", len(hits), top)
			case p.Dist == Zipf && top < n/20:
				t.Errorf("zipf: hottest id has %d of %d hits, expected a heavy head", top, n)
			}
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestZipfMultiplierIsBijection(t *testing.T) {
	t.Parallel()
	for n := int64(1); n <= 300; n++ {
		m := zipfMultiplier(n)
		seen := make([]bool, n)
		for r := int64(0); r < n; r++ {
			id := (uint64(r) * m) % uint64(n)
			if seen[id] {
				t.Fatalf("n %d: multiplier %d maps two ranks to %d", n, m, id)
			}
			seen[id] = true
		}
	}
}

// goBatch runs each client on its own goroutine, like runner.Batch without
// recording; errors are collected.
func goBatch(errs *[]error, mu *sync.Mutex) BatchFunc {
	return func(ctx context.Context, clients []*Client, per int64) bool {
		var wg sync.WaitGroup
		stopped := false
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					if ctx.Err() != nil {
						mu.Lock()
						stopped = true
						mu.Unlock()
						return
					}
					if _, err := c.Do(ctx, c.Next()); err != nil {
						mu.Lock()
						*errs = append(*errs, err)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return stopped
	}
}

// TestRunSetsMatchesReplay runs request sets concurrently against an
// in-memory store and checks that replaying the plan gives every article
// the same body: the request streams are reproducible and each update
// appends exactly one "1".
func TestRunSetsMatchesReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, _ := NewGenerator(4, 200)
	for _, p := range []Plan{
		{Requests: 300, ReadPct: 80, Threads: 1, Dist: Uniform, Seed: 9, Articles: 200},
		{Requests: 301, ReadPct: 50, Threads: 4, Dist: Uniform, Seed: 9, Articles: 200},
		{Requests: 400, ReadPct: 0, Threads: 3, Dist: Zipf, ZipfS: 1.3, Seed: 2, Articles: 200},
		{Requests: 100, ReadPct: 100, Threads: 2, Dist: Uniform, Seed: 2, Articles: 200},
	} {
		store := NewMemStore()
		if _, err := store.Populate(ctx, g.Source(1, 200)); err != nil {
			t.Fatal(err)
		}
		want, err := NewOracle(g.Source(1, 200))
		if err != nil {
			t.Fatal(err)
		}
		var errs []error
		var mu sync.Mutex
		var got []SetResult
		tot, err := RunSets(ctx, store, p, 3, 2, goBatch(&errs, &mu), func(r SetResult) error {
			got = append(got, r)
			return nil
		})
		if err != nil || tot.Interrupted || tot.Sets != 3 || len(errs) > 0 {
			t.Fatalf("%+v: RunSets: %v, %+v, request errors %v", p, err, tot, errs)
		}
		if len(got) != 3 {
			t.Fatalf("%d sets reported, want 3", len(got))
		}
		for i, r := range got {
			if r.Set != i+1 || len(r.Seconds) != 2 || r.Partial || r.End.IsZero() {
				t.Errorf("set %d reported as %+v", i+1, r)
			}
		}
		updates := want.Replay(p, 3, 2)
		if tot.Updated != updates {
			t.Errorf("%+v: the run made %d updates, the replay %d", p, tot.Updated, updates)
		}
		wantUpdates := int64(3*2*p.Threads) * p.PerThread() * int64(100-p.ReadPct) / 100
		if p.ReadPct%100 != 0 && (updates < wantUpdates/2 || updates > wantUpdates*2) || p.ReadPct == 100 && updates != 0 || p.ReadPct == 0 && updates != wantUpdates {
			t.Errorf("%+v: replay made %d updates, expected about %d", p, updates, wantUpdates)
		}
		exact := 0
		for id := int64(1); id <= 200; id++ {
			a, _ := store.Read(ctx, id)
			if err := want.Check(a); err != nil {
				t.Fatalf("%+v: %v", p, err)
			}
			if e := want.Expect(id); e.Min == e.Max {
				exact++
			}
		}
		if p.Threads == 1 && exact != 200 {
			t.Errorf("one thread: only %d of 200 articles have an exact expectation", exact)
		}
	}
}

func TestRunSetsInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	g, _ := NewGenerator(1, 50)
	store := NewMemStore()
	if _, err := store.Populate(ctx, g.Source(1, 50)); err != nil {
		t.Fatal(err)
	}
	p := Plan{Requests: 10, ReadPct: 80, Threads: 1, Dist: Uniform, Seed: 1, Articles: 50}
	var errs []error
	var mu sync.Mutex
	inner := goBatch(&errs, &mu)
	reps := 0
	batch := func(ctx context.Context, c []*Client, per int64) bool {
		if reps++; reps == 6 { // set 2, repetition 2 of 4
			cancel()
		}
		return inner(ctx, c, per)
	}
	var got []SetResult
	tot, err := RunSets(ctx, store, p, 5, 4, batch, func(r SetResult) error { got = append(got, r); return nil })
	if err != nil || !tot.Interrupted || tot.Sets != 2 {
		t.Fatalf("RunSets: %v, %+v", err, tot)
	}
	if len(got) != 2 || got[0].Partial || len(got[0].Seconds) != 4 || !got[1].Partial || len(got[1].Seconds) != 1 {
		t.Fatalf("sets %+v: want set 1 complete and set 2 partial with 1 repetition", got)
	}

	// onSet's error stops the run.
	boom := errors.New("disk full")
	_, err = RunSets(context.Background(), store, p, 5, 1, inner, func(SetResult) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("onSet error: got %v", err)
	}
	if _, err := RunSets(context.Background(), store, p, 0, 1, inner, nil); err == nil {
		t.Error("0 sets must fail")
	}
}

func TestClientDoErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewMemStore() // empty: every id is missing
	p := Plan{Requests: 1, ReadPct: 0, Threads: 1, Dist: Uniform, Seed: 1, Articles: 5}
	c := p.Clients(store, 1, 1)[0]
	if _, err := c.Do(ctx, c.Next()); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing article: %v, want ErrNotFound", err)
	}
	if err := store.Update(ctx, 1, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing article: %v", err)
	}
}

func TestStatistics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		xs             []float64
		mean, sd, mdel float64
	}{
		{nil, 0, 0, 0},
		{[]float64{2}, 2, 0, 0},
		{[]float64{1, 3}, 2, math.Sqrt2, 2},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7), 1},
		{[]float64{1, 2, 4, 7}, 3.5, math.Sqrt(7), 2},
	} {
		m, sd := MeanSD(tc.xs)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(sd-tc.sd) > 1e-12 {
			t.Errorf("MeanSD(%v) = %g, %g, want %g, %g", tc.xs, m, sd, tc.mean, tc.sd)
		}
		if got := MedianDelta(tc.xs); math.Abs(got-tc.mdel) > 1e-12 {
			t.Errorf("MedianDelta(%v) = %g, want %g", tc.xs, got, tc.mdel)
		}
	}
	r := SetResult{Seconds: []float64{1, 3}, End: time.Now()}
	if m, sd := r.MeanSD(); m != 2 || math.Abs(sd-math.Sqrt2) > 1e-12 {
		t.Errorf("SetResult.MeanSD = %g, %g", m, sd)
	}
}

func TestMemStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, _ := NewGenerator(1, 20)
	m := NewMemStore()
	c, err := m.Populate(ctx, g.Source(1, 20))
	if err != nil || c.Articles != 20 || c.MaxID != 20 {
		t.Fatalf("Populate: %+v, %v", c, err)
	}
	if _, err := m.Populate(ctx, g.Source(5, 5)); err == nil {
		t.Error("populating an existing id must fail")
	}
	before, _ := m.Counts(ctx)
	if err := m.Update(ctx, 3, g.Article(3).Body+"1"); err != nil {
		t.Fatal(err)
	}
	after, _ := m.Counts(ctx)
	if after.Bytes != before.Bytes+1 {
		t.Errorf("Update: bytes %d -> %d", before.Bytes, after.Bytes)
	}
	if err := m.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, _ := m.Counts(ctx); c != (Counts{}) {
		t.Errorf("after Reset: %+v", c)
	}
}

// TestOracleCheck shows what the oracle accepts and rejects.
func TestOracleCheck(t *testing.T) {
	t.Parallel()
	g, _ := NewGenerator(1, 300)
	o, err := NewOracle(g.Source(1, 300))
	if err != nil || o.Len() != 300 {
		t.Fatalf("NewOracle: %v, %d articles", err, o.Len())
	}
	if _, err := NewOracle(&listSource{g.Article(1), g.Article(1)}); err == nil {
		t.Error("a duplicate id must fail")
	}
	p := Plan{Requests: 600, ReadPct: 20, Threads: 3, Dist: Zipf, ZipfS: 1.5, Seed: 5, Articles: 300}
	o.Replay(p, 1, 1)
	var exact, loose int64 = -1, -1
	for id := int64(1); id <= 300; id++ {
		e := o.Expect(id)
		if e.Min == e.Max && e.Max > 0 && exact < 0 {
			exact = id
		}
		if e.Min < e.Max && loose < 0 {
			loose = id
		}
	}
	if exact < 0 || loose < 0 {
		t.Fatalf("want an exactly and a loosely expected article (zipf over 3 threads), got %d, %d", exact, loose)
	}
	ones := func(n int64) string { return strings.Repeat("1", int(n)) }
	a, l := g.Article(exact), g.Article(loose)
	ea, el := o.Expect(exact), o.Expect(loose)
	for _, tc := range []struct {
		name string
		a    Article
		ok   bool
	}{
		{"exact", Article{ID: exact, Title: a.Title, Body: a.Body + ones(ea.Max)}, true},
		{"exact, one append lost", Article{ID: exact, Title: a.Title, Body: a.Body + ones(ea.Max-1)}, false},
		{"exact, one too many", Article{ID: exact, Title: a.Title, Body: a.Body + ones(ea.Max+1)}, false},
		{"concurrent, lower bound", Article{ID: loose, Title: l.Title, Body: l.Body + ones(el.Min)}, true},
		{"concurrent, upper bound", Article{ID: loose, Title: l.Title, Body: l.Body + ones(el.Max)}, true},
		{"concurrent, too many", Article{ID: loose, Title: l.Title, Body: l.Body + ones(el.Max+1)}, false},
		{"concurrent, none", Article{ID: loose, Title: l.Title, Body: l.Body}, false},
		{"other text appended", Article{ID: exact, Title: a.Title, Body: a.Body + "x" + ones(ea.Max-1)}, false},
		{"body cut", Article{ID: exact, Title: a.Title, Body: a.Body[1:] + ones(ea.Max)}, false},
		{"wrong title", Article{ID: exact, Title: "X", Body: a.Body + ones(ea.Max)}, false},
		{"unknown id", Article{ID: 301, Title: "X"}, false},
	} {
		if err := o.Check(tc.a); (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

type listSource []Article

func (l *listSource) Next() (Article, error) {
	if len(*l) == 0 {
		return Article{}, io.EOF
	}
	a := (*l)[0]
	*l = (*l)[1:]
	return a, nil
}

func TestPopulateBatchesSplitsByRowsAndBytes(t *testing.T) {
	t.Parallel()
	var arts []Article
	for i := int64(1); i <= 7; i++ {
		arts = append(arts, Article{ID: i, Body: strings.Repeat("x", int(10*i))})
	}
	var sizes []int
	src := listSource(arts)
	got, err := PopulateBatches(&src, 3, 60, func(b []Article) error {
		sizes = append(sizes, len(b))
		return nil
	})
	// rows cap 3: [1 2 3] (60 bytes), bytes cap: [4 5] (90), [6] (60), [7]
	if err != nil || !slices.Equal(sizes, []int{3, 2, 1, 1}) || got.Articles != 7 || got.Bytes != 280 || got.MaxID != 7 {
		t.Fatalf("batches %v, counts %+v, err %v", sizes, got, err)
	}
	boom := errors.New("boom")
	src = listSource(arts)
	got, err = PopulateBatches(&src, 3, 1000, func(b []Article) error {
		if b[0].ID > 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || got.Articles != 3 {
		t.Fatalf("a failed insert must stop with the earlier batches counted: %+v %v", got, err)
	}
}

// intoStore is a MemStore that reads into its caller's memory, as an
// adapter implementing ReaderInto does, and counts those reads.
type intoStore struct {
	*MemStore
	into int
}

func (s *intoStore) ReadInto(ctx context.Context, id int64, buf *[]byte) (Article, error) {
	a, err := s.MemStore.Read(ctx, id)
	if err != nil {
		return a, err
	}
	s.into++
	b := append(append((*buf)[:0], a.Title...), a.Body...)
	*buf = b
	return Article{ID: id, Title: string(b[:len(a.Title)]), Body: unsafe.String(unsafe.SliceData(b[len(a.Title):]), len(a.Body))}, nil
}

// TestClientReadsInto checks that a client reads through ReaderInto when
// the store has it, that an update stores a body of its own (the next read
// reuses the memory the read body was in), and that a client keeps no more
// than maxKeptBuf between reads.
func TestClientReadsInto(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		bodyLen int
		kept    bool
	}{
		{"small articles", 100, true},
		{"articles over the kept bound", maxKeptBuf + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &intoStore{MemStore: NewMemStore()}
			const n = 3
			var arts []Article
			for id := int64(1); id <= n; id++ {
				arts = append(arts, Article{ID: id, Title: fmt.Sprint("t", id), Body: strings.Repeat(fmt.Sprint(id), tc.bodyLen)})
			}
			if _, err := s.Populate(ctx, &sliceSource{arts: arts}); err != nil {
				t.Fatal(err)
			}
			p := Plan{Requests: 20, ReadPct: 50, Threads: 1, Dist: Uniform, Seed: 3, Articles: n}
			c := p.Clients(s, 1, 1)[0]
			want := map[int64]int{} // updates per article
			for range p.Requests {
				op := c.Next()
				if _, err := c.Do(ctx, op); err != nil {
					t.Fatal(err)
				}
				if op == OpUpdate {
					want[c.id]++
				}
				if kept := c.buf != nil; kept != tc.kept {
					t.Fatalf("client keeps its read memory: %v; want %v (cap %d)", kept, tc.kept, cap(c.buf))
				}
			}
			if s.into != p.Requests {
				t.Errorf("%d reads through ReadInto; want %d", s.into, p.Requests)
			}
			for _, a := range arts {
				got, err := s.MemStore.Read(ctx, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if wantBody := a.Body + strings.Repeat("1", want[a.ID]); got.Body != wantBody {
					t.Errorf("article %d: body of %d bytes ending %q; want %d bytes ending %q", a.ID, len(got.Body), tail(got.Body), len(wantBody), tail(wantBody))
				}
			}
		})
	}
}

// sliceSource yields arts in order.
type sliceSource struct{ arts []Article }

func (s *sliceSource) Next() (Article, error) {
	if len(s.arts) == 0 {
		return Article{}, io.EOF
	}
	a := s.arts[0]
	s.arts = s.arts[1:]
	return a, nil
}

func tail(s string) string { return s[max(0, len(s)-8):] }
