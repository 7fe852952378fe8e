package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// openTemp opens a new database file, closed when the test ends.
func openTemp(t *testing.T) *DB {
	t.Helper()
	return adaptertest.Open(t, Open, tempDSN(t))
}

// tempDSN names a new database file in the test's directory.
func tempDSN(t *testing.T) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "fb.db")
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

// TestSizeBytes checks that every model's loaded database has a size
// (counts, model and the oracle are adaptertest's).
func TestSizeBytes(t *testing.T) {
	t.Parallel()
	adaptertest.MicroblogSizes(t, openTemp)
}

// TestModelMismatch reopens a loaded file, as a later run does: it keeps
// its model and refuses the others with microblog.ErrModelMismatch.
func TestModelMismatch(t *testing.T) {
	t.Parallel()
	adaptertest.ModelMismatch(t, tempDSN, Open, microblog.ErrModelMismatch)
}

// TestEmptyDatabaseSwitchesModel checks that only data pins the model: an
// empty file opens any.
func TestEmptyDatabaseSwitchesModel(t *testing.T) {
	t.Parallel()
	adaptertest.SwitchesModelWhenEmpty(t, openTemp(t), microblog.ErrModelMismatch)
}

// TestPartsFromTwoClients loads microblog parts through two handles on one
// file, as two processes on one machine do: two writer connections, so
// SQLite's file lock, not the writer pool, orders their parts. Parts that
// do not fit are refused.
func TestPartsFromTwoClients(t *testing.T) {
	t.Parallel()
	dsn := tempDSN(t)
	adaptertest.MicroblogPartsTwoClients(t, adaptertest.Open(t, Open, dsn), adaptertest.Open(t, Open, dsn), microblog.ErrModelMismatch)
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
	s := adaptertest.OpenMicroblog(t, db, microblog.Normalized)
	if err := s.Populate(ctx, adaptertest.TinyMicroblog()); err != nil {
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

// TestPartRefusals: parts that cannot join the load are refused before
// they write, and a database loaded whole refuses every part.
func TestPartRefusals(t *testing.T) {
	t.Parallel()
	adaptertest.MicroblogPartRefusals(t, openTemp(t), openTemp(t), microblog.ErrModelMismatch)
}

// TestOpenTogether opens one new file from several pools at once, as
// shard processes loading their parts do: each switches the file to WAL,
// and the one SQLite refuses at once (waiting could deadlock) tries again
// instead of failing the open.
func TestOpenTogether(t *testing.T) {
	for round := range 20 {
		dsn := "sqlite://" + filepath.Join(t.TempDir(), fmt.Sprintf("together%d.db", round))
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := Open(t.Context(), dsn)
				if err == nil {
					err = db.Close()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
