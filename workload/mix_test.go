package workload_test

import (
	"math/rand/v2"
	"testing"

	"github.com/fieldbench/fieldbench/workload"
)

func TestParseMix(t *testing.T) {
	t.Parallel()
	ops := []string{"post", "userline", "timeline"}
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"post=1,userline=1,timeline=1", true},
		{"post=0.5, timeline=2", true},
		{"post", false},
		{"post=x", false},
		{"post=-1", false},
		{"follow=1", false},
		{"post=1,post=2", false},
		{"post=0", false},
		{"", false},
	} {
		if _, err := workload.ParseMix(tc.spec, ops); (err == nil) != tc.ok {
			t.Errorf("ParseMix(%q) error = %v", tc.spec, err)
		}
	}
}

func TestMixPickFollowsWeights(t *testing.T) {
	t.Parallel()
	m, err := workload.ParseMix("a=1,c=3", []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := [3]int{}
	for i := 0; i < 40000; i++ {
		n[m.Pick(r)]++
	}
	if n[1] != 0 || n[0] < 9500 || n[0] > 10500 || n[2] < 29500 || n[2] > 30500 {
		t.Fatalf("picks %v, want ~10000/0/30000", n)
	}
}
