package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func openTemp(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "fb.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func openStore(t *testing.T, db *DB, m microblog.Model) microblog.Store {
	t.Helper()
	s, err := db.Microblog(t.Context(), m)
	if err != nil {
		t.Fatalf("Microblog(%s): %v", m, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRegistered(t *testing.T) {
	a, err := adapter.ForDSN("sqlite:///tmp/x.db")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "sqlite" || !slices.Equal(a.Families(), []string{"ingest", "microblog", "trajectory", "wiki"}) || a.Describe() == "" {
		t.Errorf("adapter %q families %v describe %q", a.Name(), a.Families(), a.Describe())
	}
	db, err := a.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, ok := db.(microblog.Backend); !ok {
		t.Error("DB does not implement microblog.Backend")
	}
	if _, ok := db.(adapter.Sizer); !ok {
		t.Error("DB does not implement adapter.Sizer")
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
			db := openTemp(t)
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
			dsn := "sqlite://" + filepath.Join(t.TempDir(), "fb.db")
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
	db := openTemp(t)
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

func TestBadDSN(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dsn, want string }{
		{"sqlite://" + filepath.Join(dir, "missing", "fb.db"), "does not exist"},
		{"sqlite://" + filepath.Join(file, "fb.db"), "not a directory"},
		{"sqlite://" + dir, "is a directory"},
		{"sqlite://", "no file path"},
		{"postgres://localhost/x", "must start with sqlite://"},
		{"sqlite://:memory:", "in-memory"},
		{"sqlite://" + filepath.Join(dir, "x.db") + "?mode=ro", "not supported"},
	} {
		db, err := Open(t.Context(), c.dsn)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", c.dsn)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v; want it to mention %q", c.dsn, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the missing directory: %v", err)
	}
}

func TestRelativeDSN(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := Open(t.Context(), "sqlite://rel.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want := filepath.Join(dir, "rel.db"); db.Path() != want {
		t.Errorf("Path = %q, want %q", db.Path(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "rel.db")); err != nil {
		t.Errorf("database file not created: %v", err)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openTemp(t)
	info, err := db.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "sqlite" || !strings.HasPrefix(info.Version, "3.") {
		t.Errorf("Info = %q %q", info.Name, info.Version)
	}
	for k, want := range map[string]string{"journal_mode": "wal", "synchronous": "NORMAL", "path": db.Path()} {
		if info.Config[k] != want {
			t.Errorf("Config[%s] = %q, want %q", k, info.Config[k], want)
		}
	}
	if info.Config["page_size"] == "" {
		t.Error("no page_size in Config")
	}
	if _, ok := info.Config["microblog_model"]; ok {
		t.Error("empty database reports a microblog model")
	}
	s := openStore(t, db, microblog.Normalized)
	if err := s.Populate(ctx, tiny()); err != nil {
		t.Fatal(err)
	}
	info, err = db.Info(ctx)
	if err != nil || info.Config["microblog_model"] != "normalized" {
		t.Errorf("Info after populate: model %q, %v", info.Config["microblog_model"], err)
	}
}

// BenchmarkPopulate loads the study-sized dataset (400 users) per model.
func BenchmarkPopulate(b *testing.B) {
	ds, err := microblog.Generate(microblog.GenOptions{Users: 400, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range microblog.Models {
		b.Run(string(m), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				db, err := Open(b.Context(), fmt.Sprintf("sqlite://%s/%d.db", b.TempDir(), i))
				if err != nil {
					b.Fatal(err)
				}
				s, err := db.Microblog(b.Context(), m)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Populate(b.Context(), ds); err != nil {
					b.Fatal(err)
				}
				s.Close()
				db.Close()
			}
		})
	}
}
