package adaptertest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// MicroblogPartRefusals checks the refusals of microblog.PartLoader that
// the suite's checkMicroblogParts does not reach: with part 0 of 2 of
// TinyMicroblog loaded in the denormalized model into fresh, a part of a
// load in another number of parts, a part of another model (an error
// wrapping mismatch) and Populate are refused; then part 1 of 2 completes
// the dataset, which must read as the whole of it (so the refusals wrote
// nothing that shows). loadedWhole, a fresh database loaded with Populate,
// must refuse every part with ErrPartLoaded.
func MicroblogPartRefusals(t *testing.T, fresh, loadedWhole MicroblogDB, mismatch error) {
	t.Helper()
	ctx := checkContext(t)
	pl, ok := fresh.(microblog.PartLoader)
	if !ok {
		t.Fatalf("%T is no microblog.PartLoader", fresh)
	}
	ds := TinyMicroblog()
	m := microblog.Denormalized
	half := func(i, n int) microblog.Part {
		return microblog.Part{I: i, N: n, First: int64(i*ds.Users/n) + 1, Last: int64((i + 1) * ds.Users / n)}
	}
	if err := pl.PopulatePart(ctx, m, ds, half(0, 2)); err != nil {
		t.Fatalf("PopulatePart(0/2): %v", err)
	}
	cases := []struct {
		name  string
		model microblog.Model
		part  microblog.Part
		is    error  // the error must wrap this, when set
		text  string // the message must hold this, when set
	}{
		{"again", m, half(0, 2), microblog.ErrPartLoaded, ""},
		{"another number of parts", m, half(1, 3), nil, "another number of parts"},
		{"another model", microblog.Normalized, half(1, 2), mismatch, ""},
	}
	for _, tc := range cases {
		err := pl.PopulatePart(ctx, tc.model, ds, tc.part)
		switch {
		case err == nil:
			t.Errorf("%s: PopulatePart(%s, %s) succeeded; want it refused", tc.name, tc.model, tc.part)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s: PopulatePart(%s, %s) = %v; want an error wrapping %v", tc.name, tc.model, tc.part, err, tc.is)
		case tc.text != "" && !strings.Contains(err.Error(), tc.text):
			t.Errorf("%s: PopulatePart(%s, %s) = %v; want it to say %q", tc.name, tc.model, tc.part, err, tc.text)
		case tc.is != microblog.ErrPartLoaded && errors.Is(err, microblog.ErrPartLoaded):
			t.Errorf("%s: PopulatePart(%s, %s) = %v; want no ErrPartLoaded (the part is not there)", tc.name, tc.model, tc.part, err)
		}
	}
	if err := populate(ctx, fresh, m, ds); err == nil {
		t.Errorf("Populate with part 0/2 loaded succeeded; want it refused")
	}
	if err := pl.PopulatePart(ctx, m, ds, half(1, 2)); err != nil {
		t.Fatalf("PopulatePart(1/2): %v", err)
	}
	s := OpenMicroblog(t, fresh, m)
	whole := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	if c, err := s.Counts(ctx); err != nil || c != whole {
		t.Errorf("Counts after both parts = %+v, %v; want %+v", c, err, whole)
	}
	CompareMicroblog(t, s, microblog.NewOracle(ds), ds.Users, "after both parts", microblog.Limit, 1)

	if err := populate(ctx, loadedWhole, m, ds); err != nil {
		t.Fatalf("Populate: %v", err)
	}
	for _, p := range []microblog.Part{half(0, 2), half(1, 3)} {
		if err := loadedWhole.(microblog.PartLoader).PopulatePart(ctx, m, ds, p); !errors.Is(err, microblog.ErrPartLoaded) {
			t.Errorf("PopulatePart(%s) after Populate = %v; want ErrPartLoaded", p, err)
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
