package adaptertest

import (
	"errors"
	"strings"
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
