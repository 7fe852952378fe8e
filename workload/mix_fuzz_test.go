package workload_test

import (
	"math/rand/v2"
	"testing"

	"github.com/fieldbench/fieldbench/workload"
)

// FuzzParseMix feeds --mix any text: an error, or a mix whose every pick is
// one of the known operations with a positive weight.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"post=10,userline=20,timeline=70", "post=1", " post = 0.5 , timeline=1e9 ", "post=0",
		"post=NaN", "post=-1", "post=1,post=2", "x=1", "post", ",,,", "post=1e400", "post=0x10", "timeline=+Inf"} {
		f.Add(s)
	}
	ops := []string{"post", "userline", "timeline"}
	f.Fuzz(func(t *testing.T, spec string) {
		m, err := workload.ParseMix(spec, ops)
		if err != nil {
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 100 {
			if i := m.Pick(r); i < 0 || i >= len(ops) {
				t.Fatalf("mix %q picked %d", spec, i)
			}
		}
	})
}
