package postgres

import (
	"errors"
	"fmt"
	"strings"
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

// compareAll checks every user's userline and timeline against the oracle
// (for TestReadFromReplicas; the oracle checks proper are adaptertest's).
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

// TestSizeBytes checks that every model's loaded database has a size
// (counts, model and the oracle are adaptertest's).
func TestSizeBytes(t *testing.T) {
	t.Parallel()
	ds, err := microblog.Generate(microblog.GenOptions{Users: 120, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			db := openFresh(t)
			if err := openStore(t, db, m).Populate(t.Context(), ds); err != nil {
				t.Fatal(err)
			}
			size, err := db.SizeBytes(t.Context())
			if err != nil || size <= 0 {
				t.Errorf("SizeBytes = %d, %v", size, err)
			}
			t.Logf("%s: %d bytes", m, size)
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
