package adaptertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The checks below are the microblog model rules every adapter that keeps
// its data between runs shares: the suite's Run gets a fresh database per
// check and so cannot see them. Adapters call them from their own tests
// with what differs between them (open function, error value).

// MicroblogDB is a database of the microblog family, as the model checks
// open, load, close and reopen it.
type MicroblogDB interface {
	adapter.DB
	microblog.Backend
}

// OpenMicroblog returns model m's store of b, closed when the test ends;
// an adapter's own tests use it where the model must open (no skip on
// adapter.ErrUnsupported, unlike the suite).
func OpenMicroblog(t testing.TB, b microblog.Backend, m microblog.Model) microblog.Store {
	t.Helper()
	s, err := b.Microblog(t.Context(), m)
	if err != nil {
		t.Fatalf("Microblog(%s): %v", m, err)
	}
	closeOnCleanup(t, "microblog", s)
	return s
}

// ModelMismatch loads TinyMicroblog with each model into a fresh database,
// closes it and opens it again, as a later run against the same database
// does. The reopened database must report the loaded model, open that model
// with its data, and refuse every other model with an error that wraps
// mismatch and tells the user to use a fresh database: reading one model's
// tables through another would give wrong answers, not errors.
//
// fresh returns the DSN of a new, empty database; open is the adapter's
// Open. Each model is a parallel subtest in its own database.
func ModelMismatch[D MicroblogDB](t *testing.T, fresh func(*testing.T) string, open func(context.Context, string) (D, error), mismatch error) {
	t.Helper()
	ds := TinyMicroblog()
	for _, loaded := range microblog.Models {
		t.Run(string(loaded), func(t *testing.T) {
			t.Parallel()
			dsn := fresh(t)
			if err := loadAndClose(t.Context(), open, dsn, loaded, ds); err != nil {
				t.Fatalf("load the %s model: %v", loaded, err)
			}
			db := Open(t, open, dsn) // a later run against the same database
			checkReopened(t, db, loaded, int64(len(ds.Tweets)), mismatch)
		})
	}
}

// loadAndClose opens the database at dsn, loads ds into model m and closes
// everything again, so that what follows sees only what the database kept.
func loadAndClose[D MicroblogDB](ctx context.Context, open func(context.Context, string) (D, error), dsn string, m microblog.Model, ds *microblog.Dataset) error {
	db, err := open(ctx, dsn)
	if err != nil {
		return err
	}
	return errors.Join(populate(ctx, db, m, ds), db.Close())
}

// populate loads ds into model m of b and closes the store.
func populate(ctx context.Context, b microblog.Backend, m microblog.Model, ds *microblog.Dataset) error {
	s, err := b.Microblog(ctx, m)
	if err != nil {
		return err
	}
	return errors.Join(s.Populate(ctx, ds), s.Close())
}

// checkReopened checks a reopened database that holds tweets tweets loaded
// with model loaded: it reports and opens that model, and refuses the others
// with mismatch and a message that names the loaded model and the way out.
func checkReopened(t *testing.T, db MicroblogDB, loaded microblog.Model, tweets int64, mismatch error) {
	t.Helper()
	ctx := t.Context()
	if got, err := db.MicroblogModel(ctx); err != nil || got != loaded {
		t.Fatalf("MicroblogModel after reopen = %q, %v; want %q", got, err, loaded)
	}
	for _, other := range microblog.Models {
		if other == loaded {
			checkOwnModel(t, db, loaded, tweets)
			continue
		}
		err := refused(t, db, other, mismatch)
		if err != nil && (!strings.Contains(err.Error(), "holds the "+string(loaded)+" model") ||
			!strings.Contains(err.Error(), "fresh database")) {
			t.Errorf("Microblog(%s) on a database loaded with %s: error %q names neither the loaded model nor a fresh database", other, loaded, err)
		}
	}
}

// checkOwnModel checks that the reopened database opens the model it was
// loaded with and still counts its tweets; the store is closed at once, as
// a run would, before the other models are tried.
func checkOwnModel(t *testing.T, b microblog.Backend, m microblog.Model, tweets int64) {
	t.Helper()
	ctx := t.Context()
	s, err := b.Microblog(ctx, m)
	if err != nil {
		t.Fatalf("Microblog(%s) on its own data: %v", m, err)
	}
	if c, err := s.Counts(ctx); err != nil || c.Tweets != tweets {
		t.Errorf("Counts after reopen = %+v, %v; want %d tweets", c, err, tweets)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close %s store: %v", m, err)
	}
}

// refused checks that b refuses model m with an error wrapping want, and
// returns that error for further checks (nil when b opened m).
func refused(t testing.TB, b microblog.Backend, m microblog.Model, want error) error {
	t.Helper()
	s, err := b.Microblog(t.Context(), m)
	if err == nil {
		if cerr := s.Close(); cerr != nil {
			t.Errorf("close %s store: %v", m, cerr)
		}
		t.Errorf("Microblog(%s) on a loaded database succeeded; want an error wrapping %q", m, want)
		return nil
	}
	if !errors.Is(err, want) {
		t.Errorf("Microblog(%s) = %v; want an error wrapping %q", m, err, want)
	}
	return err
}

// SwitchesModelWhenEmpty checks that an empty database opens any model in
// turn (a run that stopped before loading leaves nothing to protect), and
// that once loaded it refuses another model with mismatch and an unknown
// one with adapter.ErrUnsupported but still opens its own. b must be empty.
func SwitchesModelWhenEmpty(t testing.TB, b microblog.Backend, mismatch error) {
	t.Helper()
	ctx := t.Context()
	for _, m := range []microblog.Model{microblog.Normalized, microblog.Async, microblog.Denormalized} {
		s, err := b.Microblog(ctx, m)
		if err != nil {
			t.Fatalf("Microblog(%s) on an empty database: %v", m, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close %s store: %v", m, err)
		}
	}
	if err := OpenMicroblog(t, b, microblog.Denormalized).Populate(ctx, TinyMicroblog()); err != nil {
		t.Fatalf("Populate: %v", err)
	}
	refused(t, b, microblog.Normalized, mismatch)
	refused(t, b, "bogus", adapter.ErrUnsupported)
	OpenMicroblog(t, b, microblog.Denormalized) // the loaded model opens again
}

// SizedMicroblogDB is a microblog database that reports its size on disk.
type SizedMicroblogDB interface {
	microblog.Backend
	adapter.Sizer
}

// MicroblogSizes loads a generated dataset into each model of a fresh
// database (from fresh, one per model, as parallel subtests) and checks
// that the database then reports a size: the study compares disk use, so a
// zero or an error would hide a model's cost.
func MicroblogSizes[D SizedMicroblogDB](t *testing.T, fresh func(*testing.T) D) {
	t.Helper()
	ds, err := microblog.Generate(microblog.GenOptions{Users: 120, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			db := fresh(t)
			if err := OpenMicroblog(t, db, m).Populate(t.Context(), ds); err != nil {
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
