package microblog

import (
	"math"
	"sort"
)

// The saturation correction of the following weights (generator version
// 3, docs/microblog-generator.md, "Wiring").
//
// Followee v draws m_v = in_v - floor followers without replacement, in
// proportion to their weights, from the users other than v and its floor
// followers. A user can be drawn at most once by each followee, so with
// weights proportional to the targets (following count minus floor) the
// users with large targets fall short of them. The correction solves for
// weights whose expected draws meet the targets.
//
// Model: sampling m items without replacement in proportion to weights
// (the rejection sampler and the Efraimidis-Spirakis keys both do this)
// includes an item of weight x with probability about 1 - exp(-x·λ), λ
// the solution of Σ_u (1 - exp(-x_u·λ)) = m (Rosén's approximation of
// successive sampling). User u's expected following above the floor is
// then Σ_v (1 - exp(-x_u·λ_v)), and the weights are corrected by the
// fixed-point iteration x_u ← x_u · target_u / expected_u.
//
// It is computed from histograms, not per user, so that it costs no
// memory per user and the same time in every part: users are grouped by
// their target into bins (one per value below 200, then 1 % wide), the
// followees by m_v into the same bins; a user's weight is its target
// times its bin's factor. All arithmetic is IEEE basic operations with
// explicit float64 conversions (no fused multiply-add) and a local
// exponential (math.Exp's amd64 assembly uses FMA when the CPU has it),
// so every machine derives the same weights from (Users, Seed).

// degreeBins groups degrees 0..max: one bin per value below 200, then
// bins about 1 % wide. lo[b] is the smallest value of bin b.
type degreeBins struct{ lo []int64 }

func newDegreeBins(maxValue int64) degreeBins {
	lo := []int64{0}
	for x := int64(1); x <= maxValue; x += max(1, x/100) {
		lo = append(lo, x)
	}
	return degreeBins{lo: lo}
}

func (b degreeBins) len() int { return len(b.lo) }

// of is the bin of x (0 <= x <= max).
func (b degreeBins) of(x int64) int {
	if x < 200 && x < int64(len(b.lo)) {
		return int(x)
	}
	return sort.Search(len(b.lo), func(i int) bool { return b.lo[i] > x }) - 1
}

// binTotals counts values by bin: n[b] values summing to sum[b].
type binTotals struct{ n, sum []int64 }

func newBinTotals(b degreeBins) binTotals {
	return binTotals{n: make([]int64, b.len()), sum: make([]int64, b.len())}
}

func (t binTotals) add(b degreeBins, x int64) {
	i := b.of(x)
	t.n[i]++
	t.sum[i] += x
}

// The weight correction stops when every class's expected draws are
// within saturationTolerance of its target, or after saturationRounds.
const (
	saturationTolerance = 1e-3
	saturationRounds    = 100
)

// saturationFactors returns, per bin of targets, the factor f[b] such
// that a user with target t in bin b has sampling weight t·f[b]
// (f[0] = 0: no target, no weight), scaled so that the weights sum to
// about 2^50. out holds the targets (following minus floor) by bin, in
// the draws (follower count minus floor) by bin, over all users; pool is
// the fraction of the users a followee draws from (all but itself and
// its floor followers).
func saturationFactors(bins degreeBins, out, in binTotals, pool float64) (factors []float64, heavyFrom int64) {
	nb := len(out.n)
	// Classes: the bins with users, each at its mean target.
	type class struct {
		bin    int
		c      float64 // users (times pool)
		t      float64 // mean target
		tau    float64 // expected draws wanted of each user, per pool holding it
		x      float64 // weight of each user
		capped bool    // target beyond reach
		h      float64 // weight factor: x = t·h
	}
	var cls []class
	var weighted, targets, draws float64
	for b := 1; b < nb; b++ {
		if out.n[b] == 0 {
			continue
		}
		cls = append(cls, class{bin: b, c: float64(float64(out.n[b]) * pool), t: float64(out.sum[b]) / float64(out.n[b])})
		weighted += float64(out.n[b])
		targets += float64(out.sum[b])
	}
	f := make([]float64, nb)
	type drawer struct {
		d, m   float64 // followees and their mean draws
		lambda float64 // 0 until solved; +Inf: every weighted user drawn
	}
	var dr []drawer
	for b := 1; b < nb; b++ {
		if in.n[b] == 0 {
			continue
		}
		dr = append(dr, drawer{d: float64(in.n[b]), m: float64(in.sum[b]) / float64(in.n[b])})
		draws += float64(in.sum[b])
	}
	if len(cls) == 0 {
		return f, math.MaxInt64
	}
	// Each user's target, scaled to the draws there are (the two totals
	// differ a little: they are drawn independently), per followee whose
	// pool holds it.
	for i := range cls {
		cls[i].tau = float64(cls[i].t*(draws/targets)) / pool
	}
	capacity := float64(weighted * pool)
	for i := range cls {
		cls[i].x = cls[i].t
	}
	for round := 0; ; round++ {
		// λ of each followee bin, given the weights:
		// Σ_j c_j (1 - e^(-x_j λ)) = m.
		var sx float64
		for _, c := range cls {
			sx += float64(c.c * c.x)
		}
		for k := range dr {
			if dr[k].m >= capacity {
				dr[k].lambda = math.Inf(1)
				continue
			}
			dr[k].lambda = solveConcave(dr[k].m, dr[k].lambda, m0(dr[k].m, sx), func(lambda float64) (g, dg float64) {
				for _, c := range cls {
					q, e := saturate(float64(c.x * lambda))
					g += float64(c.c * q)
					dg += float64(float64(c.c*c.x) * e)
				}
				return g, dg
			})
		}
		// The weight of each class, given the λs: its users' expected
		// draws Σ_k d_k (1 - e^(-x λ_k)) meet its target. A target above
		// what the followees can give (a user is drawn at most once by
		// each) gets 64 times the weight of the users who want less than
		// half of the followees (so it is drawn first by a followee with
		// 1 draw about 98 % of the time); so does a target near it, which
		// would need more (several such users compete for the followees
		// with few draws, and their weights would grow without bound).
		var always, some, slope, others float64
		for _, k := range dr {
			if math.IsInf(k.lambda, 1) {
				always += k.d
			} else {
				some += k.d
			}
		}
		for _, c := range cls {
			if float64(2*c.tau) < always+some {
				others += float64(c.c * c.x)
			}
		}
		xcap := float64(64 * others)
		always, some = 0, 0
		for _, k := range dr {
			if math.IsInf(k.lambda, 1) {
				always += k.d
			} else {
				some += k.d
				slope += float64(k.d * k.lambda)
			}
		}
		expectedOf := func(x float64) (g, dg float64) {
			for _, k := range dr {
				if !math.IsInf(k.lambda, 1) {
					q, e := saturate(float64(x * k.lambda))
					g += float64(k.d * q)
					dg += float64(float64(k.d*k.lambda) * e)
				}
			}
			return g, dg
		}
		// Targets beyond reach get what they can; the others share the
		// rest of the draws.
		full := float64(always + float64(some*(1-1e-9)))
		var supply, capped, feasible float64
		for _, k := range dr {
			supply += float64(k.d * min(k.m, capacity))
		}
		for _, c := range cls {
			if c.tau >= full {
				capped += float64(c.c * float64(always+some))
			} else {
				feasible += float64(c.c * c.tau)
			}
		}
		share := float64(supply-capped) / feasible
		worst := 0.0
		for j, c := range cls {
			tau := float64(c.tau * share)
			switch {
			case c.tau >= full || tau >= full:
				cls[j].x, cls[j].capped = xcap, true
			case tau <= always:
				cls[j].capped = false
				cls[j].x = float64(c.x / 2) // degenerate: very few users
			default:
				cls[j].capped = false
				g, _ := expectedOf(c.x)
				worst = max(worst, math.Abs(float64(always+g)/tau-1))
				cls[j].x = min(xcap, solveConcave(tau-always, c.x, m0(tau-always, slope), expectedOf))
			}
		}
		if worst < saturationTolerance || round == saturationRounds {
			break
		}
	}
	for i := range cls {
		cls[i].h = cls[i].x / cls[i].t
	}
	// Integer weights summing to about 2^50.
	var total float64
	for _, c := range cls {
		total += float64(float64(out.sum[c.bin]) * c.h)
	}
	scale := 0x1p50 / total
	rest := 0x1p50
	for _, c := range cls {
		f[c.bin] = float64(c.h * scale)
	}
	// Heavy: the top bins while each user's weight is above 1/32 of the
	// weight of the users below it, at most maxHeavy users.
	heavyFrom = math.MaxInt64
	heavy := int64(0)
	for j := len(cls) - 1; j >= 0; j-- {
		b := cls[j].bin
		each := float64(cls[j].t * f[b])
		all := float64(float64(out.n[b]) * each)
		if heavy+out.n[b] > maxHeavy || float64(each*32) <= rest-all {
			break
		}
		heavyFrom, heavy, rest = bins.lo[b], heavy+out.n[b], rest-all
	}
	return f, heavyFrom
}

// maxHeavy bounds the users drawn apart from the cumulative table.
const maxHeavy = 64

// solveConcave solves g(y) = m for a concave, increasing g with g(0) = 0
// by Newton's method, which from any start at or above low (a point at
// or below the root) moves below the root in one step and then increases
// to it. prev is a previous solution (0: none).
func solveConcave(m, prev, low float64, g func(float64) (float64, float64)) float64 {
	y := max(prev, low)
	for range 200 {
		v, dv := g(y)
		if dv <= 0 {
			break
		}
		next := max(low, y-(v-m)/dv)
		if math.Abs(next-y) <= 1e-13*y {
			return next
		}
		y = next
	}
	return y
}

// m0 is m / slope: the root of the tangent at 0, below the root of a
// concave g with g'(0) = slope (1 - e^(-z) <= z).
func m0(m, slope float64) float64 { return m / slope }

// saturate is 1 - e^(-z) and e^(-z), for z >= 0.
func saturate(z float64) (q, e float64) {
	e = expNeg(z)
	if z < 1e-3 {
		return smallOneMinusExpNeg(z), e
	}
	return 1 - e, e
}

// expNeg is e^(-z) for z >= 0, from IEEE basic operations only (the
// same result on every machine), within a few ulp.
func expNeg(z float64) float64 {
	if z > 700 {
		return 0
	}
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
	)
	k := math.Floor(float64(z/math.Ln2) + 0.5)
	// r = -z + k·ln 2 in [-ln2/2, ln2/2], Cody-Waite.
	r := float64(float64(k*ln2Hi)-z) + float64(k*ln2Lo)
	// e^r by Taylor to degree 13 (|r| < 0.35: error below 1e-17).
	p := expTaylor[0]
	for _, c := range expTaylor[1:] {
		p = float64(p*r) + c
	}
	return p * math.Float64frombits(uint64(1023-int64(k))<<52)
}

// expTaylor are 1/k! for k = 13 down to 0 (constants, rounded once).
var expTaylor = [...]float64{
	1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800,
	1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24,
	1.0 / 6, 1.0 / 2, 1, 1,
}

// smallOneMinusExpNeg is 1 - e^(-z) for 0 <= z < 1e-3:
// z - z²/2 + z³/6 - z⁴/24 + z⁵/120 (error below z⁶/720).
func smallOneMinusExpNeg(z float64) float64 {
	p := float64(z / 5)
	p = float64(z/4) * float64(1-p)
	p = float64(z/3) * float64(1-p)
	p = float64(z/2) * float64(1-p)
	return float64(z * float64(1-p))
}
