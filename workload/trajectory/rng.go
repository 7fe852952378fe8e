package trajectory

import "math/bits"

// Streams separate the random draws of each part of the generator, so a
// change in one part leaves the others' draws untouched.
const (
	streamCity   = 0x7472_6a63_6974_7921 // "trjcity!"
	streamUser   = 0x7472_6a75_7365_7273 // "trjusers"
	streamPlan   = 0x7472_6a70_6c61_6e73 // "trjplans"
	streamNight  = 0x7472_6a6e_6967_6874 // "trjnight"
	streamRecord = 0x7472_6a72_6563_6f72 // "trjrecor"
	streamQuery  = 0x7472_6a71_7565_7279 // "trjquery"
	streamPerm   = 0x7472_6a70_6572_6d75 // "trjpermu"
)

// mix64 is SplitMix64's finalizer: a fast bijective hash of 64 bits.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hash3 hashes a seed, a stream and a key into a 64-bit value. Every random
// choice of the generator is derived from such a hash of what it is about
// (a user, a user-day, a record), never from a shared sequence: that is what
// lets any record be produced from its index alone.
func hash3(seed, stream, key uint64) uint64 {
	return mix64(mix64(seed^stream) ^ (key * 0x9e3779b97f4a7c15))
}

// rng is a SplitMix64 generator. It uses integer arithmetic only, so the
// same seed gives the same data on every platform.
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng { return &rng{s: seed} }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// int63n is uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias is
// below 2^-40 for the n used here, irrelevant for synthetic data).
func (r *rng) int63n(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

func (r *rng) intn(n int) int { return int(r.int63n(int64(n))) }

// chance is true with probability permille/1000.
func (r *rng) chance(permille int) bool { return r.intn(1000) < permille }

// between is uniform in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// gaussish is roughly normal with mean 0 and standard deviation s: the sum
// of three uniform draws in [-s, s].
func (r *rng) gaussish(s int64) int64 {
	return r.int63n(2*s+1) + r.int63n(2*s+1) + r.int63n(2*s+1) - 3*s
}

// around is mean ± spread, triangular (the sum of two uniform draws), for
// clock times in minutes.
func (r *rng) around(mean, spread int) int {
	return mean + (r.intn(spread+1) + r.intn(spread+1) - spread)
}
