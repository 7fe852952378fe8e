package mariadb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

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

func sameTweets(got, want []microblog.Tweet) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d tweets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Author != w.Author || g.Time.UnixMicro() != w.Time.UnixMicro() || g.Body != w.Body || g.Time.Location() != time.UTC {
			return fmt.Errorf("tweet %d: got {id %d author %d time %d body %q}, want {id %d author %d time %d body %q}",
				i, g.ID, g.Author, g.Time.UnixMicro(), g.Body, w.ID, w.Author, w.Time.UnixMicro(), w.Body)
		}
	}
	return nil
}

func compareAll(t *testing.T, s microblog.Store, o *microblog.Oracle, users int) {
	t.Helper()
	bad := 0
	for u := int64(1); u <= int64(users); u++ {
		for _, limit := range []int{microblog.Limit, 1} {
			ul, err := s.Userline(t.Context(), u, limit)
			if err != nil {
				t.Fatalf("Userline(%d): %v", u, err)
			}
			if err := sameTweets(ul, o.Userline(u, limit)); err != nil {
				t.Errorf("Userline(%d, %d): %v", u, limit, err)
				bad++
			}
			tl, err := s.Timeline(t.Context(), u, limit)
			if err != nil {
				t.Fatalf("Timeline(%d): %v", u, err)
			}
			if err := sameTweets(tl, o.Timeline(u, limit)); err != nil {
				t.Errorf("Timeline(%d, %d): %v", u, limit, err)
				bad++
			}
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

// TestMicroblogOracle loads a generated dataset in every model, compares
// every userline and timeline with the brute-force oracle, posts
// concurrently (tied times, readers and the materializer alongside) and
// compares again.
func TestMicroblogOracle(t *testing.T) {
	t.Parallel()
	const users = 120
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ds, err := microblog.Generate(microblog.GenOptions{Users: users, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			db := openFresh(t)
			s := openStore(t, db, m)
			if c, err := s.Counts(ctx); err != nil || c != (microblog.Counts{}) {
				t.Fatalf("Counts of an empty database = %+v, %v", c, err)
			}
			if got, err := db.MicroblogModel(ctx); err != nil || got != "" {
				t.Fatalf("MicroblogModel before Populate = %q, %v", got, err)
			}
			start := time.Now()
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatalf("Populate: %v", err)
			}
			t.Logf("populate %d users, %d follows, %d tweets: %v", ds.Users, len(ds.Follows), len(ds.Tweets), time.Since(start))
			if got, err := db.MicroblogModel(ctx); err != nil || got != m {
				t.Fatalf("MicroblogModel after Populate = %q, %v", got, err)
			}
			want := microblog.Counts{Users: users, Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
			if c, err := s.Counts(ctx); err != nil || c != want {
				t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
			}
			if err := s.Populate(ctx, ds); err == nil {
				t.Fatal("second Populate succeeded")
			}
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
					Time:   base.Add(time.Duration(i/3) * time.Microsecond), // three share each microsecond
					Body:   microblog.RandomBody(r),
				}
			}
			for i := 0; i < 30; i += 3 {
				tweets[i+1].Author = tweets[i].Author // same author, same time
			}
			var wg sync.WaitGroup
			errs := make(chan error, posts+100)
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
			for c := range 4 {
				wg.Go(func() {
					for i := range 50 {
						if _, err := s.Timeline(ctx, int64(1+(c*50+i)%users), microblog.Limit); err != nil {
							errs <- err
						}
					}
				})
			}
			if m == microblog.Async {
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
			if got, err := s.MaxTweetID(ctx); err != nil || got != maxID+posts {
				t.Errorf("MaxTweetID after posts = %d, %v; want %d", got, err, maxID+posts)
			}
			if err := s.Post(ctx, tweets[0]); err == nil {
				t.Error("Post of an existing tweet id succeeded")
			}
		})
	}
}

func TestMicroblogModelMismatch(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	// An empty database switches model freely.
	openStore(t, db, microblog.Async)
	s := openStore(t, db, microblog.Denormalized)
	ds, _ := microblog.Generate(microblog.GenOptions{Users: 20, Seed: 1})
	if err := s.Populate(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Microblog(t.Context(), microblog.Normalized); !errors.Is(err, ErrModelMismatch) {
		t.Fatalf("Microblog(normalized) on denormalized data: %v, want ErrModelMismatch", err)
	}
	if _, err := db.Microblog(t.Context(), "graph"); err == nil {
		t.Fatal("unknown model accepted")
	}
	openStore(t, db, microblog.Denormalized) // the same model reopens
}
