package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func openStore(t *testing.T, db *DB, m microblog.Model) microblog.Store {
	t.Helper()
	s, err := db.Microblog(t.Context(), m)
	if err != nil {
		t.Fatalf("Microblog(%s): %v", m, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func generate(t *testing.T, users int, seed int64) *microblog.Dataset {
	t.Helper()
	ds, err := microblog.Generate(microblog.GenOptions{Users: users, Seed: seed})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return ds
}

func sameTweets(got, want []microblog.Tweet) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d tweets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Author != w.Author || g.Time.UnixMicro() != w.Time.UnixMicro() || g.Body != w.Body {
			return fmt.Errorf("tweet %d: got {id %d author %d time %d body %q}, want {id %d author %d time %d body %q}",
				i, g.ID, g.Author, g.Time.UnixMicro(), g.Body, w.ID, w.Author, w.Time.UnixMicro(), w.Body)
		}
		if g.Time.Location() != time.UTC {
			return fmt.Errorf("tweet %d: time %v is not UTC", i, g.Time)
		}
	}
	return nil
}

// compareAll checks every user's userline and timeline against the oracle.
func compareAll(t *testing.T, s microblog.Store, o *microblog.Oracle, users int) {
	t.Helper()
	ctx := t.Context()
	bad := 0
	for u := int64(1); u <= int64(users); u++ {
		ul, err := s.Userline(ctx, u, microblog.Limit)
		if err != nil {
			t.Fatalf("Userline(%d): %v", u, err)
		}
		if err := sameTweets(ul, o.Userline(u, microblog.Limit)); err != nil {
			t.Errorf("Userline(%d): %v", u, err)
			bad++
		}
		tl, err := s.Timeline(ctx, u, microblog.Limit)
		if err != nil {
			t.Fatalf("Timeline(%d): %v", u, err)
		}
		if err := sameTweets(tl, o.Timeline(u, microblog.Limit)); err != nil {
			t.Errorf("Timeline(%d): %v", u, err)
			bad++
		}
		if bad > 10 {
			t.Fatal("too many mismatches")
		}
	}
}

func catchUp(t *testing.T, s microblog.Store) {
	t.Helper()
	m, ok := s.(microblog.Materializer)
	if !ok {
		return
	}
	for range 1000 {
		done, err := m.MaterializeOnce(t.Context())
		if err != nil {
			t.Fatalf("MaterializeOnce: %v", err)
		}
		if len(done) == 0 {
			return
		}
	}
	t.Fatal("materializer never caught up")
}

func TestMaterializerOnlyForAsync(t *testing.T) {
	t.Parallel()
	for _, m := range microblog.Models {
		db := openFresh(t)
		s := openStore(t, db, m)
		if _, ok := s.(microblog.Materializer); ok != (m == microblog.Async) {
			t.Errorf("%s store implements Materializer: %v", m, ok)
		}
	}
}

// TestOracle loads a generated dataset, compares every userline and
// timeline with the brute-force oracle, posts concurrently (with tied
// times) and compares again.
func TestOracle(t *testing.T) {
	t.Parallel()
	const users = 120
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ds := generate(t, users, 3)
			db := openFresh(t)
			s := openStore(t, db, m)
			start := time.Now()
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatalf("Populate: %v", err)
			}
			t.Logf("populate %d users, %d follows, %d tweets: %v", ds.Users, len(ds.Follows), len(ds.Tweets), time.Since(start))
			if m == microblog.Async {
				if done, err := s.(microblog.Materializer).MaterializeOnce(ctx); err != nil || len(done) != 0 {
					t.Fatalf("after Populate MaterializeOnce = %d tweets, %v; want caught up", len(done), err)
				}
			}
			o := microblog.NewOracle(ds)
			compareAll(t, s, o, users)

			maxID, err := s.MaxTweetID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const posts = 300
			r := rand.New(rand.NewPCG(3, 7))
			base := time.Now().Truncate(time.Microsecond)
			tweets := make([]microblog.Tweet, posts)
			for i := range tweets {
				tweets[i] = microblog.Tweet{
					ID:     maxID + 1 + int64(i),
					Author: 1 + r.Int64N(users),
					// Three tweets share each microsecond; ids break the tie.
					Time: base.Add(time.Duration(i/3) * time.Microsecond),
					Body: microblog.RandomBody(r),
				}
			}
			// Some authors post several tweets at the very same time.
			for i := 0; i < 30; i += 3 {
				tweets[i+1].Author = tweets[i].Author
			}
			var wg sync.WaitGroup
			errs := make(chan error, posts)
			const clients = 16
			for c := range clients {
				wg.Go(func() {
					for i := c; i < posts; i += clients {
						if err := s.Post(ctx, tweets[i]); err != nil {
							errs <- fmt.Errorf("Post(%d): %w", tweets[i].ID, err)
						}
					}
				})
			}
			// Readers run alongside the writers.
			for c := range 4 {
				wg.Go(func() {
					for i := range 50 {
						u := int64(1 + (c*50+i)%users)
						if _, err := s.Timeline(ctx, u, microblog.Limit); err != nil {
							errs <- fmt.Errorf("Timeline(%d) during posts: %w", u, err)
						}
					}
				})
			}
			if m == microblog.Async {
				// The materializer runs concurrently with the posts too.
				wg.Go(func() {
					for range 20 {
						if _, err := s.(microblog.Materializer).MaterializeOnce(ctx); err != nil {
							errs <- fmt.Errorf("MaterializeOnce during posts: %w", err)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for _, tw := range tweets {
				o.Post(tw)
			}
			catchUp(t, s)
			compareAll(t, s, o, users)
			got, err := s.MaxTweetID(ctx)
			if err != nil || got != maxID+posts {
				t.Errorf("MaxTweetID after posts = %d, %v; want %d", got, err, maxID+posts)
			}
		})
	}
}

// tiny is a hand-built dataset exercising ties and users without tweets or
// follows.
func tiny() *microblog.Dataset {
	at := func(us int64) time.Time { return time.UnixMicro(1_700_000_000_000_000 + us).UTC() }
	ds := &microblog.Dataset{
		Users: 5,
		Follows: []microblog.Follow{
			{Follower: 1, Followee: 2}, {Follower: 1, Followee: 3}, {Follower: 2, Followee: 3},
			{Follower: 4, Followee: 1}, {Follower: 3, Followee: 2},
		},
	}
	times := []int64{10, 10, 10, 20, 20, 5, 30, 30, 30, 30}
	authors := []int64{2, 3, 2, 3, 3, 1, 2, 3, 1, 2}
	for i := range times {
		ds.Tweets = append(ds.Tweets, microblog.Tweet{
			ID: int64(i + 1), Author: authors[i], Time: at(times[i]), Body: fmt.Sprintf("tweet %d", i+1),
		})
	}
	ds.Index()
	return ds
}

func TestTinyTiesAndLimits(t *testing.T) {
	t.Parallel()
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ds := tiny()
			db := openFresh(t)
			s := openStore(t, db, m)
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatal(err)
			}
			o := microblog.NewOracle(ds)
			compareAll(t, s, o, ds.Users)
			for _, limit := range []int{0, 1, 2, 3} {
				for u := int64(1); u <= int64(ds.Users); u++ {
					got, err := s.Timeline(ctx, u, limit)
					if err != nil {
						t.Fatal(err)
					}
					if err := sameTweets(got, o.Timeline(u, limit)); err != nil {
						t.Errorf("Timeline(%d, limit %d): %v", u, limit, err)
					}
					got, err = s.Userline(ctx, u, limit)
					if err != nil {
						t.Fatal(err)
					}
					if err := sameTweets(got, o.Userline(u, limit)); err != nil {
						t.Errorf("Userline(%d, limit %d): %v", u, limit, err)
					}
				}
			}
			// A duplicate tweet id is an error, not a silent overwrite.
			if err := s.Post(ctx, ds.Tweets[0]); err == nil {
				t.Error("Post of an existing tweet id succeeded")
			}
		})
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	ds := generate(t, 120, 3)
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := openFresh(t)
			s := openStore(t, db, m)
			if c, err := s.Counts(ctx); err != nil || c != (microblog.Counts{}) {
				t.Fatalf("Counts of an empty database = %+v, %v", c, err)
			}
			if id, err := s.MaxTweetID(ctx); err != nil || id != 0 {
				t.Fatalf("MaxTweetID of an empty database = %d, %v", id, err)
			}
			if got, err := db.MicroblogModel(ctx); err != nil || got != "" {
				t.Fatalf("MicroblogModel before Populate = %q, %v; want empty", got, err)
			}
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatal(err)
			}
			c, err := s.Counts(ctx)
			want := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
			if err != nil || c != want {
				t.Errorf("Counts = %+v, %v; want %+v", c, err, want)
			}
			id, err := s.MaxTweetID(ctx)
			if err != nil || id != ds.Tweets[len(ds.Tweets)-1].ID {
				t.Errorf("MaxTweetID = %d, %v; want %d", id, err, ds.Tweets[len(ds.Tweets)-1].ID)
			}
			if got, err := db.MicroblogModel(ctx); err != nil || got != m {
				t.Errorf("MicroblogModel = %q, %v; want %q", got, err, m)
			}
			size, err := db.SizeBytes(ctx)
			if err != nil || size <= 0 {
				t.Errorf("SizeBytes = %d, %v", size, err)
			}
			t.Logf("%s: %d bytes", m, size)
			if err := s.Populate(ctx, ds); err == nil {
				t.Error("second Populate succeeded on a loaded database")
			}
		})
	}
}

func TestModelMismatch(t *testing.T) {
	t.Parallel()
	ds := tiny()
	for _, loaded := range microblog.Models {
		t.Run(string(loaded), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := freshDSN(t)
			db, err := Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			s, err := db.Microblog(ctx, loaded)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatal(err)
			}
			s.Close()
			db.Close()

			db, err = Open(ctx, dsn) // a later run against the same file
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if got, err := db.MicroblogModel(ctx); err != nil || got != loaded {
				t.Fatalf("MicroblogModel after reopen = %q, %v; want %q", got, err, loaded)
			}
			for _, other := range microblog.Models {
				s, err := db.Microblog(ctx, other)
				if other == loaded {
					if err != nil {
						t.Fatalf("Microblog(%s) on its own data: %v", other, err)
					}
					c, err := s.Counts(ctx)
					if err != nil || c.Tweets != int64(len(ds.Tweets)) {
						t.Errorf("Counts after reopen = %+v, %v", c, err)
					}
					s.Close()
					continue
				}
				if err == nil {
					s.Close()
					t.Fatalf("Microblog(%s) on a database loaded with %s succeeded", other, loaded)
				}
				if !errors.Is(err, ErrModelMismatch) || !strings.Contains(err.Error(), "holds the "+string(loaded)+" model") ||
					!strings.Contains(err.Error(), "fresh database") {
					t.Errorf("Microblog(%s) error = %v", other, err)
				}
			}
		})
	}
}

func TestEmptyDatabaseSwitchesModel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openFresh(t)
	for _, m := range []microblog.Model{microblog.Normalized, microblog.Async, microblog.Denormalized} {
		s, err := db.Microblog(ctx, m)
		if err != nil {
			t.Fatalf("Microblog(%s) on an empty database: %v", m, err)
		}
		s.Close()
	}
	s := openStore(t, db, microblog.Denormalized)
	if err := s.Populate(ctx, tiny()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Microblog(ctx, "bogus"); !errors.Is(err, adapter.ErrUnsupported) {
		t.Errorf("Microblog(bogus) = %v; want ErrUnsupported", err)
	}
}
