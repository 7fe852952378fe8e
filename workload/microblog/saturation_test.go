package microblog

import (
	"math"
	"testing"

	"github.com/fieldbench/fieldbench/workload/distrib"
)

// TestExpNeg: the local exponential agrees with math.Exp.
func TestExpNeg(t *testing.T) {
	t.Parallel()
	for z := 0.0; z < 700; z = z*1.01 + 1e-9 {
		want := math.Exp(-z)
		if got := expNeg(z); math.Abs(got-want) > 4e-16*want {
			t.Fatalf("expNeg(%g) = %g, want %g", z, got, want)
		}
		q, _ := saturate(z)
		if want := -math.Expm1(-z); math.Abs(q-want) > 1e-12*want {
			t.Fatalf("1 - e^-%g = %g, want %g", z, q, want)
		}
	}
}

// TestDegreeBins: every value falls in the bin whose range holds it.
func TestDegreeBins(t *testing.T) {
	t.Parallel()
	b := newDegreeBins(100_000)
	for x := int64(0); x <= 100_000; x++ {
		i := b.of(x)
		if b.lo[i] > x || (i+1 < b.len() && b.lo[i+1] <= x) {
			t.Fatalf("of(%d) = %d: [%d, ...)", x, i, b.lo[i])
		}
	}
	if b.len() > 1000 {
		t.Errorf("%d bins for 100,000 values", b.len())
	}
}

// TestSaturationMeetsTargets: each user's following count, 8 plus its
// draws, is on average its target (the power-law draw) however large:
// the mean following of the users with the largest targets is within
// 10 % of their mean target.
func TestSaturationMeetsTargets(t *testing.T) {
	t.Parallel()
	o := GenOptions{Users: 5000, Seed: 3}
	d := gen(t, o)
	// The targets, drawn as newPartGen draws them.
	pp := defaultParams
	law, err := distrib.NewPowerLaw(pp.followingAlpha, pp.followingMin, o.Users-1)
	if err != nil {
		t.Fatal(err)
	}
	slot := newFeistel(uint64(o.Users), streamKey(o.Seed, streamOutSlot))
	key := streamKey(o.Seed, streamOutU)
	following := make([]int, o.Users+1)
	for _, f := range d.Follows {
		following[f.Follower]++
	}
	var hiT, hiF, midT, midF float64
	for u := 1; u <= o.Users; u++ {
		i := uint64(u - 1)
		target := float64(law.Quantile((float64(slot.at(i)) + unit(mix64(key^i))) / float64(o.Users)))
		switch {
		case target >= 200:
			hiT += target
			hiF += float64(following[u])
		case target >= 30:
			midT += target
			midF += float64(following[u])
		}
	}
	for _, c := range []struct {
		name   string
		tg, fl float64
	}{{"targets >= 200", hiT, hiF}, {"targets 30..199", midT, midF}} {
		if r := c.fl / c.tg; r < 0.9 || r > 1.1 {
			t.Errorf("users with %s: following %.0f for targets %.0f (ratio %.3f), want within 10 %%", c.name, c.fl, c.tg, r)
		}
	}
}
