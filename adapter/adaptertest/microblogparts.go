package adaptertest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// CheckMicroblogPartRefusals loads part 0 of 3 of TinyMicroblog (user 1)
// in the normalized model into db, an empty database whose adapter loads
// in parts, then tries parts that must be refused before they write
// anything: the same part again (ErrPartLoaded), a part of a load in
// another number of parts (an error that says so, not ErrPartLoaded: the
// users are not there) and a part in another model (an error wrapping
// mismatch, the adapter's model-mismatch error). After each, the database
// still holds part 0's tweets only and does not read as whole. It is not
// part of Run: checkMicroblogParts covers the loads that succeed.
func CheckMicroblogPartRefusals(t *testing.T, db adapter.DB, mismatch error) {
	ctx := checkContext(t)
	pl, ok := db.(microblog.PartLoader)
	if !ok {
		t.Fatalf("%T is not a microblog.PartLoader", db)
	}
	ds := TinyMicroblog()
	first := microblog.Part{I: 0, N: 3, First: 1, Last: 1}
	if err := pl.PopulatePart(ctx, microblog.Normalized, ds, first); err != nil {
		t.Fatalf("PopulatePart(%s): %v", first, err)
	}
	want := microblog.Counts{Tweets: ds.PartSize(first).Tweets}
	if want.Tweets == 0 {
		t.Fatalf("part %s of TinyMicroblog holds no tweet: the check would not see a refused part's writes", first)
	}
	tests := []struct {
		name  string
		model microblog.Model
		part  microblog.Part
		check func(err error) bool
	}{
		{"same part again", microblog.Normalized, first,
			func(err error) bool { return errors.Is(err, microblog.ErrPartLoaded) }},
		{"another number of parts", microblog.Normalized, microblog.Part{I: 1, N: 2, First: 3, Last: 5},
			func(err error) bool {
				return err != nil && !errors.Is(err, microblog.ErrPartLoaded) && strings.Contains(err.Error(), "another number of parts")
			}},
		{"another model", microblog.Denormalized, microblog.Part{I: 1, N: 3, First: 2, Last: 3},
			func(err error) bool { return errors.Is(err, mismatch) }},
	}
	b := db.(microblog.Backend)
	for _, tt := range tests {
		err := pl.PopulatePart(ctx, tt.model, ds, tt.part)
		if !tt.check(err) {
			t.Errorf("%s: PopulatePart(%s, part %s) = %v", tt.name, tt.model, tt.part, err)
		}
		if have, err := b.MicroblogModel(ctx); err != nil || have != microblog.Normalized {
			t.Fatalf("%s: MicroblogModel = %q, %v; want %q", tt.name, have, err, microblog.Normalized)
		}
		if c, err := OpenMicroblog(t, b, microblog.Normalized).Counts(ctx); err != nil || c != want {
			t.Errorf("%s: Counts after the refused part = %+v, %v; want %+v (part %s's tweets, not whole)", tt.name, c, err, want, first)
		}
	}
}

// PartsDB is a database that loads the microblog dataset in parts.
type PartsDB interface {
	MicroblogDB
	microblog.PartLoader
}

// MicroblogPartsTwoClients checks what the suite's parts check (one
// handle, one number of parts, one model) cannot see. a and b are two
// handles on one fresh database, as two processes of a sharded load hold:
// each loads a part at the same time as the other. Then parts that do not
// fit are refused and write nothing: one of another number of parts whose
// users are partly there (an error that says so, not ErrPartLoaded), one
// of another model (an error wrapping mismatch), and one whose users are
// all there (ErrPartLoaded). The last part makes the database read as the
// whole dataset.
func MicroblogPartsTwoClients[D PartsDB](t *testing.T, a, b D, mismatch error) {
	t.Helper()
	ctx := checkContext(t)
	ds, err := microblog.Generate(microblog.GenOptions{Users: microblogUsers, Seed: microblogSeed})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	const m, other = microblog.Denormalized, microblog.Normalized
	third := int64(ds.Users / 3)
	p0 := microblog.Part{I: 0, N: 3, First: 1, Last: third}
	p1 := microblog.Part{I: 1, N: 3, First: third + 1, Last: 2 * third}
	p2 := microblog.Part{I: 2, N: 3, First: 2*third + 1, Last: int64(ds.Users)}
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = a.PopulatePart(ctx, m, ds, p0) })
	wg.Go(func() { errB = b.PopulatePart(ctx, m, ds, p1) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("PopulatePart(%s) and PopulatePart(%s) from two clients at once: %v; %v", p0, p1, errA, errB)
	}
	s := OpenMicroblog(t, a, m)
	before, err := s.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts after two parts: %v", err)
	}
	for _, tc := range []struct {
		name  string
		model microblog.Model
		part  microblog.Part
		check func(error) bool
		want  string
	}{
		{"another number of parts", m, microblog.Part{I: 1, N: 2, First: int64(ds.Users/2) + 1, Last: int64(ds.Users)},
			func(err error) bool {
				return err != nil && !errors.Is(err, microblog.ErrPartLoaded) && strings.Contains(err.Error(), "another number of parts")
			}, `an error saying "another number of parts", not ErrPartLoaded`},
		{"another model", other, p2, func(err error) bool { return errors.Is(err, mismatch) }, "an error wrapping " + mismatch.Error()},
		{"users all there", m, microblog.Part{I: 0, N: 4, First: 1, Last: int64(ds.Users / 4)},
			func(err error) bool { return errors.Is(err, microblog.ErrPartLoaded) }, "ErrPartLoaded"},
	} {
		for i, db := range []D{a, b} {
			err := db.PopulatePart(ctx, tc.model, ds, tc.part)
			if !tc.check(err) {
				t.Errorf("%s: PopulatePart(%s, %s) from client %d = %v; want %s", tc.name, tc.model, tc.part, i, err, tc.want)
			}
			if c, err := s.Counts(ctx); err != nil || c != before {
				t.Errorf("%s: Counts after the refused part = %+v, %v; want %+v as before it", tc.name, c, err, before)
			}
		}
	}
	if err := b.PopulatePart(ctx, m, ds, p2); err != nil {
		t.Fatalf("PopulatePart(%s): %v", p2, err)
	}
	whole := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	if c, err := s.Counts(ctx); err != nil || c != whole {
		t.Errorf("Counts after every part = %+v, %v; want %+v", c, err, whole)
	}
	for i, db := range []D{a, b} {
		if have, err := db.MicroblogModel(ctx); err != nil || have != m {
			t.Errorf("MicroblogModel from client %d after every part = %q, %v; want %q", i, have, err, m)
		}
	}
	CompareMicroblog(t, s, microblog.NewOracle(ds), ds.Users, "after the parts from two clients", microblog.Limit, 1)
}
