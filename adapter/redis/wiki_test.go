package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func openWikiStore(t *testing.T) wiki.Store {
	t.Helper()
	s, err := open(t, false).Wiki(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Reset(context.Background()); s.Close() })
	return s
}

// TestWikiStore covers Populate, Read, Update, Counts and Reset on the
// 3-master cluster.
func TestWikiStore(t *testing.T) {
	ctx := t.Context()
	s := openWikiStore(t)
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("empty: %+v, %v", c, err)
	}
	const n = 1200 // more than one populate pipeline
	g, _ := wiki.NewGenerator(3, n)
	var wantBytes int64
	for id := int64(1); id <= n; id++ {
		wantBytes += int64(g.Size(id))
	}
	want := wiki.Counts{Articles: n, Bytes: wantBytes, MaxID: n}
	if got, err := s.Populate(ctx, g.Source(1, n)); err != nil || got != want {
		t.Fatalf("Populate = %+v, %v; want %+v", got, err, want)
	}
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
	}
	for _, id := range []int64{1, 17, 1000, 1001, n} {
		if a, err := s.Read(ctx, id); err != nil || a != g.Article(id) {
			t.Fatalf("Read(%d): %v", id, err)
		}
	}
	a := g.Article(17)
	if err := s.Update(ctx, 17, a.Body+"1"); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Read(ctx, 17); err != nil || b.Body != a.Body+"1" || b.Title != a.Title {
		t.Fatalf("after Update: %v", err)
	}
	for name, err := range map[string]error{
		"read":   func() error { _, err := s.Read(ctx, n+1); return err }(),
		"update": s.Update(ctx, n+1, "x"),
		"read 0": func() error { _, err := s.Read(ctx, 0); return err }(),
	} {
		if !errors.Is(err, wiki.ErrNotFound) {
			t.Errorf("%s of a missing article: %v", name, err)
		}
	}
	// Loading an existing id fails and keeps nothing of that batch.
	if _, err := s.Populate(ctx, g.Source(n-1, n+5)); err == nil {
		t.Fatal("populating existing ids must fail")
	}
	if c, _ := s.Counts(ctx); c.Articles != n || c.Bytes != wantBytes+1 {
		t.Fatalf("after failed populate: %+v", c)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("after Reset: %+v, %v", c, err)
	}
}

// TestWikiMatchesOracle runs request sets with several threads against the
// cluster and checks every article against the oracle's replay.
func TestWikiMatchesOracle(t *testing.T) {
	const n = 300
	for _, plan := range []wiki.Plan{
		{Requests: 400, ReadPct: 80, Threads: 1, Dist: wiki.Uniform, Seed: 11},
		{Requests: 402, ReadPct: 50, Threads: 4, Dist: wiki.Uniform, Seed: 12},
		{Requests: 300, ReadPct: 0, Threads: 3, Dist: wiki.Zipf, ZipfS: 1.2, Seed: 13},
	} {
		t.Run("", func(t *testing.T) {
			ctx := context.Background()
			s := openWikiStore(t)
			g, _ := wiki.NewGenerator(plan.Seed, n)
			if _, err := s.Populate(ctx, g.Source(1, n)); err != nil {
				t.Fatal(err)
			}
			p := plan
			p.Articles = n
			const sets, repeat = 3, 2
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
			tot, err := wiki.RunSets(ctx, s, p, sets, repeat, batch, func(wiki.SetResult) error { return nil })
			if err != nil || tot.Interrupted {
				t.Fatalf("RunSets: %v, %+v", err, tot)
			}
			snap := rec.Tick(time.Now())
			for op := range wiki.Ops {
				if len(snap.Errors[op]) > 0 {
					t.Fatalf("%s errors: %v", wiki.Ops[op], snap.Errors[op])
				}
			}
			updates := snap.Hists[wiki.OpUpdate].TotalCount()
			o, err := wiki.NewOracle(g.Source(1, n))
			if err != nil {
				t.Fatal(err)
			}
			if replayed := o.Replay(p, sets, repeat); replayed != updates {
				t.Fatalf("replay made %d updates, the run %d", replayed, updates)
			}
			for id := int64(1); id <= n; id++ {
				a, err := s.Read(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if err := o.Check(a); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
