package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func init() {
	registerFamily(wiki.Name, func(t *testing.T, open func(t *testing.T) adapter.DB) { checkWiki(t, open(t)) })
}

// Wiki check sizes: 150 synthetic articles (a few tens of kB each at most)
// and two request plans of one thread, so every article's expected body is
// exact.
const (
	wikiArticles = 150
	wikiSeed     = 5
	wikiSets     = 2
	wikiRepeat   = 2
)

// wikiPlans are replayed one after the other against the same articles;
// the oracle's expectations add up.
var wikiPlans = []wiki.Plan{
	{Requests: 300, ReadPct: 50, Threads: 1, Dist: wiki.Uniform, Seed: 21},
	{Requests: 200, ReadPct: 0, Threads: 1, Dist: wiki.Zipf, ZipfS: 1.2, Seed: 22},
}

// wikiConcurrentPlans run after wikiPlans, with several threads through
// runner.Batch as the CLI runs them: concurrent read-modify-writes may lose
// appends, within the oracle's bounds.
var wikiConcurrentPlans = []wiki.Plan{
	{Requests: 402, ReadPct: 50, Threads: 4, Dist: wiki.Uniform, Seed: 23},
	{Requests: 300, ReadPct: 0, Threads: 3, Dist: wiki.Zipf, ZipfS: 1.2, Seed: 24},
	{Requests: 200, ReadPct: 100, Threads: 2, Dist: wiki.Uniform, Seed: 25},
}

// checkWiki populates synthetic articles, reads each back, runs request
// sets with one thread through the workload's clients, checks every
// article against the oracle's replay, then Reset and a reload.
func checkWiki(t testing.TB, db adapter.DB) {
	ctx := checkContext(t)
	b, ok := db.(wiki.Backend)
	if !ok {
		t.Fatalf("%T does not implement wiki.Backend", db)
	}
	s, err := b.Wiki(ctx)
	if err != nil {
		t.Fatalf("Wiki on a fresh database: %v", err)
	}
	closeOnCleanup(t, "wiki", s)
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("Counts of a fresh database = %+v, %v; want all zero", c, err)
	}

	g, err := wiki.NewGenerator(wikiSeed, wikiArticles)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for id := int64(1); id <= wikiArticles; id++ {
		bytes += int64(g.Size(id))
	}
	loaded := wiki.Counts{Articles: wikiArticles, Bytes: bytes, MaxID: wikiArticles}
	if c, err := s.Populate(ctx, g.Source(1, wikiArticles)); err != nil || c != loaded {
		t.Fatalf("Populate = %+v, %v; want %+v", c, err, loaded)
	}
	if c, err := s.Counts(ctx); err != nil || c != loaded {
		t.Fatalf("Counts after Populate = %+v, %v; want %+v", c, err, loaded)
	}
	bad := &mismatches{t: t}
	for id := int64(1); id <= wikiArticles; id++ {
		a, err := s.Read(ctx, id)
		if err != nil {
			t.Fatalf("Read(%d): %v", id, err)
		}
		if err := sameArticle(a, g.Article(id)); err != nil {
			bad.add("after Populate: %v", err)
		}
	}
	if into, ok := s.(wiki.ReaderInto); ok {
		// One buffer for every read, as a client thread uses it: each read
		// must be whole in it, the missing article still ErrNotFound.
		var buf []byte
		for id := int64(wikiArticles); id >= 1; id-- {
			a, err := into.ReadInto(ctx, id, &buf)
			if err != nil {
				t.Fatalf("ReadInto(%d): %v", id, err)
			}
			if err := sameArticle(a, g.Article(id)); err != nil {
				bad.add("ReadInto after Populate: %v", err)
			}
		}
		if _, err := into.ReadInto(ctx, wikiArticles+1, &buf); !errors.Is(err, wiki.ErrNotFound) {
			t.Errorf("ReadInto(%d) of a missing article = %v; want an error wrapping wiki.ErrNotFound", wikiArticles+1, err)
		}
	}
	for name, err := range map[string]error{
		"Read(0)":                                 func() error { _, err := s.Read(ctx, 0); return err }(),
		fmt.Sprintf("Read(%d)", wikiArticles+1):   func() error { _, err := s.Read(ctx, wikiArticles+1); return err }(),
		fmt.Sprintf("Update(%d)", wikiArticles+1): s.Update(ctx, wikiArticles+1, "x"),
	} {
		if !errors.Is(err, wiki.ErrNotFound) {
			t.Errorf("%s of a missing article = %v; want an error wrapping wiki.ErrNotFound", name, err)
		}
	}
	// Loading existing ids fails and keeps nothing of that load.
	if _, err := s.Populate(ctx, g.Source(wikiArticles-1, wikiArticles+5)); err == nil {
		t.Errorf("Populate of existing ids succeeded")
	}
	if c, err := s.Counts(ctx); err != nil || c != loaded {
		t.Errorf("Counts after a refused Populate = %+v, %v; want %+v", c, err, loaded)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Request sets through the workload's own clients, one thread, as the
	// CLI runs them (minus the timing).
	o, err := wiki.NewOracle(g.Source(1, wikiArticles))
	if err != nil {
		t.Fatal(err)
	}
	var updates int64
	for _, p := range wikiPlans {
		p.Articles = wikiArticles
		var reqErr error
		batch := func(ctx context.Context, clients []*wiki.Client, per int64) bool {
			for _, c := range clients {
				for range per {
					if ctx.Err() != nil {
						return true
					}
					if _, err := c.Do(ctx, c.Next()); err != nil && reqErr == nil {
						reqErr = err
					}
				}
			}
			return false
		}
		tot, err := wiki.RunSets(ctx, s, p, wikiSets, wikiRepeat, batch, func(wiki.SetResult) error { return nil })
		if err != nil || tot.Interrupted || tot.Sets != wikiSets {
			t.Fatalf("RunSets(%+v) = %+v, %v", p, tot, err)
		}
		if reqErr != nil {
			t.Fatalf("request of plan %+v: %v", p, reqErr)
		}
		if replayed := o.Replay(p, wikiSets, wikiRepeat); replayed != tot.Updated {
			t.Fatalf("plan %+v: the run made %d updates, the oracle's replay %d", p, tot.Updated, replayed)
		}
		updates += tot.Updated
	}
	if updates == 0 {
		t.Fatal("the request plans made no update: the check would prove nothing")
	}
	for id := int64(1); id <= wikiArticles; id++ {
		a, err := s.Read(ctx, id)
		if err != nil {
			t.Fatalf("Read(%d) after the requests: %v", id, err)
		}
		if a.ID != id {
			bad.add("Read(%d) after the requests returned article %d", id, a.ID)
			continue
		}
		if err := o.Check(a); err != nil {
			bad.add("after the requests: %v", err)
		} else if e := o.Expect(id); int64(len(a.Body)-g.Size(id)) != e.Max {
			// One thread: nothing may be lost.
			bad.add("article %d: %d appends after the requests, want exactly %d", id, len(a.Body)-g.Size(id), e.Max)
		}
	}
	after := loaded
	after.Bytes += updates
	if c, err := s.Counts(ctx); err != nil || c != after {
		t.Errorf("Counts after %d updates = %+v, %v; want %+v", updates, c, err, after)
	}
	wikiConcurrent(t, s, o)

	// Reset empties the store, which then loads again.
	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Errorf("Counts after Reset = %+v, %v; want all zero", c, err)
	}
	if _, err := s.Read(ctx, 1); !errors.Is(err, wiki.ErrNotFound) {
		t.Errorf("Read(1) after Reset = %v; want an error wrapping wiki.ErrNotFound", err)
	}
	const reload = 10
	if c, err := s.Populate(ctx, g.Source(1, reload)); err != nil || c.Articles != reload || c.MaxID != reload {
		t.Fatalf("Populate after Reset = %+v, %v; want %d articles", c, err, reload)
	}
	for id := int64(1); id <= reload; id++ {
		a, err := s.Read(ctx, id)
		if err != nil {
			t.Fatalf("Read(%d) after Reset and Populate: %v", id, err)
		}
		if err := sameArticle(a, g.Article(id)); err != nil {
			bad.add("after Reset and Populate: %v", err)
		}
	}
}

// wikiConcurrent runs wikiConcurrentPlans through runner.Batch with one
// recorder handle per thread, checks the recorded requests and updates
// against the plans and the oracle's replay, every article against the
// oracle and Counts against what was read.
func wikiConcurrent(t testing.TB, s wiki.Store, o *wiki.Oracle) {
	ctx := checkContext(t)
	const sets, repeat = 3, 2
	for _, p := range wikiConcurrentPlans {
		p.Articles = wikiArticles
		rec := recorder.New(wiki.Ops, time.Now())
		handles := make([]*recorder.Handle, p.Threads)
		for i := range handles {
			handles[i] = rec.Handle()
		}
		batch := func(ctx context.Context, clients []*wiki.Client, per int64) bool {
			w := make([]runner.Worker, len(clients))
			for i, c := range clients {
				w[i] = c
			}
			return runner.Batch(ctx, w, handles, per)
		}
		points := 0
		tot, err := wiki.RunSets(ctx, s, p, sets, repeat, batch, func(wiki.SetResult) error { points++; return nil })
		if err != nil || tot.Interrupted || points != sets {
			t.Fatalf("RunSets(%+v) = %+v, %v; %d sets reported", p, tot, err, points)
		}
		snap := rec.Tick(time.Now())
		for op := range wiki.Ops {
			if len(snap.Errors[op]) > 0 {
				t.Fatalf("plan %+v: %s errors: %v", p, wiki.Ops[op], snap.Errors[op])
			}
		}
		reads, updates := snap.Hists[wiki.OpRead].TotalCount(), snap.Hists[wiki.OpUpdate].TotalCount()
		if want := int64(sets*repeat*p.Threads) * p.PerThread(); reads+updates != want {
			t.Fatalf("plan %+v: recorded %d requests, want %d", p, reads+updates, want)
		}
		if replayed := o.Replay(p, sets, repeat); replayed != updates || tot.Updated != updates {
			t.Fatalf("plan %+v: the oracle's replay made %d updates, the run recorded %d and counted %d", p, replayed, updates, tot.Updated)
		}
	}
	bad := &mismatches{t: t}
	var bytes int64
	for id := int64(1); id <= wikiArticles; id++ {
		a, err := s.Read(ctx, id)
		if err != nil {
			t.Fatalf("Read(%d) after the concurrent requests: %v", id, err)
		}
		if a.ID != id {
			bad.add("Read(%d) after the concurrent requests returned article %d", id, a.ID)
			continue
		}
		if err := o.Check(a); err != nil {
			bad.add("after the concurrent requests: %v", err)
		}
		bytes += int64(len(a.Body))
	}
	want := wiki.Counts{Articles: wikiArticles, Bytes: bytes, MaxID: wikiArticles}
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Errorf("Counts after the concurrent requests = %+v, %v; want %+v", c, err, want)
	}
}

// sameArticle compares a stored article with the generator's.
func sameArticle(got, want wiki.Article) error {
	switch {
	case got.ID != want.ID:
		return fmt.Errorf("article %d: got id %d", want.ID, got.ID)
	case got.Title != want.Title:
		return fmt.Errorf("article %d: title %q, want %q", want.ID, got.Title, want.Title)
	case got.Body != want.Body:
		return fmt.Errorf("article %d: body of %d bytes differs from the generator's (%d bytes)", want.ID, len(got.Body), len(want.Body))
	}
	return nil
}
