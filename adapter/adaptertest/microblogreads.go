package adaptertest

import (
	"testing"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// BodyReads loads TinyMicroblog with the normalized model into b (a fresh
// database) and reads every user's userline and timeline both ways a
// microblog.BodyReader offers — one multi-key request, then one read per
// tweet — checking each against the oracle: the two ways must give the
// same answers, bodies included, or a comparison of their latencies
// compares different work.
func BodyReads(t *testing.T, b microblog.Backend) {
	t.Helper()
	ds := TinyMicroblog()
	s := OpenMicroblog(t, b, microblog.Normalized)
	if err := s.Populate(t.Context(), ds); err != nil {
		t.Fatalf("Populate: %v", err)
	}
	br, ok := s.(microblog.BodyReader)
	if !ok {
		t.Fatalf("the normalized store %T does not implement microblog.BodyReader", s)
	}
	o := microblog.NewOracle(ds)
	for _, r := range []microblog.BodyReads{microblog.BodyReadsIn, microblog.BodyReadsSeparate} {
		br.SetBodyReads(r)
		bodies := 0
		for u := int64(1); u <= int64(ds.Users); u++ {
			for _, line := range []struct {
				name string
				read func() ([]microblog.Tweet, error)
				want []microblog.Tweet
			}{
				{"userline", func() ([]microblog.Tweet, error) { return s.Userline(t.Context(), u, microblog.Limit) }, o.Userline(u, microblog.Limit)},
				{"timeline", func() ([]microblog.Tweet, error) { return s.Timeline(t.Context(), u, microblog.Limit) }, o.Timeline(u, microblog.Limit)},
			} {
				got, err := line.read()
				if err != nil {
					t.Fatalf("%s reads: %s of user %d: %v", r, line.name, u, err)
				}
				if len(got) != len(line.want) {
					t.Fatalf("%s reads: %s of user %d has %d tweets, want %d", r, line.name, u, len(got), len(line.want))
				}
				for i := range got {
					g, w := got[i], line.want[i]
					if g.ID != w.ID || g.Author != w.Author || g.Body != w.Body || !g.Time.Equal(w.Time) {
						t.Fatalf("%s reads: %s of user %d, tweet %d: got %+v, want %+v", r, line.name, u, i, g, w)
					}
					bodies++
				}
			}
		}
		if bodies == 0 {
			t.Fatalf("%s reads: no tweet read at all (the tiny dataset should give some)", r)
		}
		t.Logf("%s reads: %d tweets read with their bodies", r, bodies)
	}
}
