package adaptertest

import (
	"errors"
	"strings"
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
