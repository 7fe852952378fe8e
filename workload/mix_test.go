package workload_test

import (
	"math/rand/v2"
	"strings"
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

// Each refusal says what is wrong with the weight: 1e308 is a number, not
// negative, but past the bound (issue 31: it was called "not a non-negative
// number").
func TestParseMixMessages(t *testing.T) {
	t.Parallel()
	ops := []string{"post", "userline", "timeline"}
	for spec, want := range map[string]string{
		"post=1e308,timeline=1": "more than 1e+09: weights are relative",
		"post=1e400":            "must be a finite number",
		"post=NaN":              "must be a finite number",
		"post=Inf":              "must be a finite number",
		"post=-2":               "must not be negative",
		"post=x":                "must be a finite number",
	} {
		_, err := workload.ParseMix(spec, ops)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMix(%q) = %v, want an error saying %q", spec, err, want)
		}
	}
}
