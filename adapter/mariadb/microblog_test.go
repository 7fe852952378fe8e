package mariadb

import (
	"errors"
	"fmt"
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

// compareAll checks every user's userline and timeline against the oracle
// (for TestGalera; the oracle checks proper are adaptertest's).
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
