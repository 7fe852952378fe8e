package postgres

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestWikiStore covers Read, Update, Counts and Reset.
func TestWikiStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("new database: counts %+v, %v; want empty", c, err)
	}
	c, err := s.Populate(ctx, &tinySource{n: 10})
	if err != nil || c != (wiki.Counts{Articles: 10, Bytes: 11, MaxID: 10}) {
		t.Fatalf("Populate = %+v, %v", c, err)
	}
	if got, err := s.Counts(ctx); err != nil || got != c {
		t.Fatalf("Counts = %+v, %v; want %+v", got, err, c)
	}
	if err := s.Update(ctx, 3, "3+1"); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Read(ctx, 3); err != nil || a.Body != "3+1" || a.Title != "t" || a.ID != 3 {
		t.Fatalf("Read after Update = %+v, %v", a, err)
	}
	if _, err := s.Read(ctx, 11); !errors.Is(err, wiki.ErrNotFound) {
		t.Errorf("Read(missing) = %v; want ErrNotFound", err)
	}
	if err := s.Update(ctx, 11, "x"); !errors.Is(err, wiki.ErrNotFound) {
		t.Errorf("Update(missing) = %v; want ErrNotFound", err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Counts(ctx); err != nil || c != (wiki.Counts{}) {
		t.Fatalf("after Reset: counts %+v, %v; want empty", c, err)
	}
}

func openWiki(t *testing.T, db *DB) wiki.Store {
	t.Helper()
	s, err := db.Wiki(t.Context())
	if err != nil {
		t.Fatalf("Wiki: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close wiki store: %v", err)
		}
	})
	return s
}

type tinySource struct{ next, n int64 }

func (s *tinySource) Next() (wiki.Article, error) {
	if s.next >= s.n {
		return wiki.Article{}, io.EOF
	}
	s.next++
	return wiki.Article{ID: s.next, Title: "t", Body: strconv.FormatInt(s.next, 10)}, nil
}

// TestWikiLargePopulate crosses the rows-per-transaction limit, so Populate
// commits several transactions.
func TestWikiLargePopulate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	n := int64(populateTxRows + 10)
	c, err := s.Populate(ctx, &tinySource{n: n})
	if err != nil || c.Articles != n || c.MaxID != n {
		t.Fatalf("Populate: %+v, %v", c, err)
	}
	for _, id := range []int64{1, populateTxRows, populateTxRows + 1, n} {
		if a, err := s.Read(ctx, id); err != nil || a.Body != strconv.FormatInt(id, 10) {
			t.Fatalf("article %d: %+v, %v", id, a, err)
		}
	}
}

// TestWikiDump loads the hand-made MediaWiki dump, bzip2-compressed,
// including its empty page.
func TestWikiDump(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	d, err := wiki.OpenDump("../../workload/wiki/testdata/sample-pages-articles.xml.bz2", wiki.DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := s.Populate(ctx, d)
	if err != nil || c.Articles != 5 || c.MaxID != 5 {
		t.Fatalf("Populate from dump: %+v, %v", c, err)
	}
	for id, title := range map[int64]string{1: "Albert Einstein", 3: "Zürich", 5: "Empty page"} {
		a, err := s.Read(ctx, id)
		if err != nil || a.Title != title {
			t.Errorf("article %d: %q, %v; want %q", id, a.Title, err, title)
		}
	}
	if a, _ := s.Read(ctx, 3); len(a.Body) != 137 { // bytes of UTF-8, not characters
		t.Errorf("Zürich: body of %d bytes, want 137", len(a.Body))
	}
	if a, _ := s.Read(ctx, 5); a.Body != "" {
		t.Errorf("empty page has body %q", a.Body)
	}
}

// failingSource yields n articles, then an error.
type failingSource struct {
	src wiki.Source
	n   int
}

func (f *failingSource) Next() (wiki.Article, error) {
	if f.n == 0 {
		return wiki.Article{}, errors.New("disk on fire")
	}
	f.n--
	return f.src.Next()
}

func TestWikiPopulateSourceError(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openWiki(t, openFresh(t))
	g, _ := wiki.NewGenerator(1, 100)
	_, err := s.Populate(ctx, &failingSource{src: g.Source(1, 100), n: 30})
	if err == nil || err.Error() != "disk on fire" {
		t.Fatalf("Populate: %v, want the source's error", err)
	}
	if c, _ := s.Counts(ctx); c.Articles != 0 {
		t.Fatalf("the failed transaction left %d articles", c.Articles)
	}
}

// TestWikiMatchesOracle runs request sets through runner.Batch, as the CLI
// does, and then checks every article against the brute-force oracle's
// replay of the same plan, and the recorded counts against the replay.
func TestWikiMatchesOracle(t *testing.T) {
	t.Parallel()
	const n = 300
	for _, tc := range []struct {
		name string
		plan wiki.Plan
	}{
		{"one thread uniform", wiki.Plan{Requests: 400, ReadPct: 80, Threads: 1, Dist: wiki.Uniform, Seed: 11}},
		{"four threads uniform", wiki.Plan{Requests: 402, ReadPct: 50, Threads: 4, Dist: wiki.Uniform, Seed: 12}},
		{"three threads zipf write-only", wiki.Plan{Requests: 300, ReadPct: 0, Threads: 3, Dist: wiki.Zipf, ZipfS: 1.2, Seed: 13}},
		{"read-only", wiki.Plan{Requests: 200, ReadPct: 100, Threads: 2, Dist: wiki.Uniform, Seed: 14}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := openWiki(t, openFresh(t))
			g, _ := wiki.NewGenerator(tc.plan.Seed, n)
			if _, err := s.Populate(ctx, g.Source(1, n)); err != nil {
				t.Fatal(err)
			}
			p := tc.plan
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
			var points int
			tot, err := wiki.RunSets(ctx, s, p, sets, repeat, batch, func(r wiki.SetResult) error {
				points++
				return nil
			})
			if err != nil || tot.Interrupted || points != sets {
				t.Fatalf("RunSets: %v, %+v, %d sets reported", err, tot, points)
			}
			snap := rec.Tick(time.Now())
			for op := range wiki.Ops {
				if len(snap.Errors[op]) > 0 {
					t.Fatalf("%s errors: %v", wiki.Ops[op], snap.Errors[op])
				}
			}
			reads, updates := snap.Hists[wiki.OpRead].TotalCount(), snap.Hists[wiki.OpUpdate].TotalCount()
			if reads+updates != int64(sets*repeat*p.Threads)*p.PerThread() {
				t.Fatalf("recorded %d requests, want %d", reads+updates, sets*repeat*p.Threads*int(p.PerThread()))
			}

			o, err := wiki.NewOracle(g.Source(1, n))
			if err != nil {
				t.Fatal(err)
			}
			if replayed := o.Replay(p, sets, repeat); replayed != updates || tot.Updated != updates {
				t.Fatalf("replay made %d updates, the run recorded %d and counted %d", replayed, updates, tot.Updated)
			}
			var lost int64
			for id := int64(1); id <= n; id++ {
				a, err := s.Read(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if err := o.Check(a); err != nil {
					t.Fatal(err)
				}
				lost += o.Expect(id).Max - int64(len(a.Body)-g.Size(id))
			}
			if p.Threads == 1 && lost != 0 {
				t.Fatalf("one thread lost %d updates", lost)
			}
			t.Logf("%d reads, %d updates, %d lost to concurrent read-modify-write", reads, updates, lost)
		})
	}
}
