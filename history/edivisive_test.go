package history

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// shifted is n values around each level in turn, with uniform noise of
// ±spread (deterministic for seed).
func shifted(seed uint64, n int, spread float64, levels ...float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []float64
	for _, l := range levels {
		for range n {
			out = append(out, l+spread*(2*rng.Float64()-1))
		}
	}
	return out
}

func indexes(cps []ChangePoint) []int {
	out := make([]int, len(cps))
	for i, c := range cps {
		out[i] = c.Index
	}
	return out
}

// Series with known shifts: each is found where it is, in both
// directions, with the right magnitude and the runs on each side, by both
// methods; noise alone and one outlier give none.
func TestKnownShifts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		xs     []float64
		want   []int
		change []float64 // after/before - 1 of each, ±0.03
		sides  [][2]int  // runs before and after each
	}{
		{"flat", shifted(1, 40, 2, 100), nil, nil, nil},
		{"a regression of +30 %", shifted(2, 15, 2, 100, 130), []int{15}, []float64{0.30}, [][2]int{{15, 15}}},
		{"an improvement of -20 %", shifted(3, 12, 3, 500, 400), []int{12}, []float64{-0.20}, [][2]int{{12, 12}}},
		{"up then back", shifted(4, 10, 1, 50, 65, 50), []int{10, 20}, []float64{0.30, -0.23}, [][2]int{{10, 10}, {10, 10}}},
		{"three steps over windows", shifted(5, 30, 2, 100, 120, 90, 110), []int{30, 60, 90}, []float64{0.20, -0.25, 0.22}, [][2]int{{30, 30}, {30, 30}, {30, 30}}},
		{"an outlier is no change", append(append(shifted(6, 20, 1, 100), 400), shifted(7, 20, 1, 100)...), nil, nil, nil},
		{"the newest run regressed", append(shifted(8, 25, 1, 100), 150), []int{25}, []float64{0.50}, [][2]int{{25, 1}}},
	} {
		for _, method := range []string{MethodTTest, MethodPermutation} {
			if method == MethodPermutation && tc.name == "the newest run regressed" {
				continue // one value cannot be told from noise by shuffling
			}
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				cps, err := Detect(tc.xs, Options{Method: method, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				if got := indexes(cps); !slices.Equal(got, tc.want) {
					t.Fatalf("change points at %v, want %v", got, tc.want)
				}
				for i, c := range cps {
					if math.Abs(c.Change()-tc.change[i]) > 0.03 {
						t.Errorf("change %d: %+.3f, want %+.2f", i, c.Change(), tc.change[i])
					}
					if c.NBefore != tc.sides[i][0] || c.NAfter != tc.sides[i][1] {
						t.Errorf("change %d: %d runs before and %d after, want %v", i, c.NBefore, c.NAfter, tc.sides[i])
					}
					if !(c.P <= 0.001) {
						t.Errorf("change %d: p = %g", i, c.P)
					}
					if c.Magnitude() < math.Abs(c.Change()) {
						t.Errorf("change %d: magnitude %g below |change| %g", i, c.Magnitude(), math.Abs(c.Change()))
					}
				}
			})
		}
	}
}

// The magnitude floor drops small changes, keeps large ones.
func TestMagnitudeFloor(t *testing.T) {
	t.Parallel()
	xs := shifted(10, 20, 0.2, 100, 103, 140)
	all, err := Detect(xs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := indexes(all); !slices.Equal(got, []int{20, 40}) {
		t.Fatalf("without a floor: %v", got)
	}
	big, err := Detect(xs, Options{Magnitude: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if got := indexes(big); !slices.Equal(got, []int{40}) {
		t.Fatalf("with a 10 %% floor: %v, want the +35 %% change alone", got)
	}
}

// Detect gives what Apache Otava 0.8.0's compute_change_points gave on
// the same series (testdata/otava_fixtures.json, or FB_OTAVA_FIXTURES, written by
// testdata/otava_fixtures.py with Otava installed): the same change
// points, with the same mean before each. (The p-value and the mean
// after are Otava's last computed ones, which may be of a stretch since
// merged; Detect's are of the final stretches: edivisive.go.)
func TestAgreesWithOtava(t *testing.T) {
	t.Parallel()
	path := "testdata/otava_fixtures.json"
	if p := os.Getenv("FB_OTAVA_FIXTURES"); p != "" { // otava_fixtures.py --random N
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Otava string
		Cases []struct {
			Name      string
			Values    []float64
			Window    int
			PValue    float64
			Magnitude float64
			Change    []struct {
				Index         int
				PValue        float64
				Before, After float64
			} `json:"change_points"`
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range f.Cases {
		cps, err := Detect(c.Values, Options{Window: c.Window, PValue: c.PValue, Magnitude: c.Magnitude})
		if err != nil {
			t.Fatal(err)
		}
		var want []int
		for _, w := range c.Change {
			want = append(want, w.Index)
		}
		if got := indexes(cps); !slices.Equal(got, want) {
			t.Errorf("%s (window %d, p %g, magnitude %g): change points %v, Otava %s: %v", c.Name, c.Window, c.PValue, c.Magnitude, got, f.Otava, want)
			continue
		}
		for i, w := range c.Change {
			g := cps[i]
			// Where Otava's mean after is of the final stretch too, its
			// p-value is of the same test: scipy's and Go's must agree.
			fresh := near(g.After, w.After, 1e-9)
			if !near(g.Before, w.Before, 1e-9) || fresh && !near(g.P, w.PValue, 1e-6) {
				t.Errorf("%s: change at %d: p %g, means %g → %g; Otava: p %g, %g → %g", c.Name, w.Index, g.P, g.Before, g.After, w.PValue, w.Before, w.After)
			}
		}
	}
}

// near compares relatively, or absolutely near 0.
func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// Bad settings and values are refused.
func TestDetectRefuses(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Method: "bogus"}, {PValue: 2}, {Window: 1}, {Magnitude: -1}} {
		if _, err := Detect([]float64{1, 2, 3}, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := Detect([]float64{1, math.NaN()}, Options{}); err == nil {
		t.Error("NaN accepted")
	}
}
