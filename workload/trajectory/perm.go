package trajectory

import "math/bits"

// Permutation is a seeded pseudo-random bijection of [0, n) computed per
// index (a 4-round Feistel network with cycle walking), so random-order
// writes need no shuffled list of every index: memory stays constant
// whatever the dataset size.
type Permutation struct {
	n    int64
	half uint   // bits per Feistel half
	mask uint64 // (1 << half) - 1
	keys [4]uint64
}

// NewPermutation returns the permutation of [0, n) for seed (n >= 1).
func NewPermutation(n int64, seed int64) *Permutation {
	b := uint(bits.Len64(uint64(max(n-1, 1))))
	half := max((b+1)/2, 1)
	p := &Permutation{n: n, half: half, mask: 1<<half - 1}
	for i := range p.keys {
		p.keys[i] = hash3(uint64(seed), streamPerm, uint64(i))
	}
	return p
}

// Len is n.
func (p *Permutation) Len() int64 { return p.n }

// At is the image of i, 0 <= i < n. The Feistel domain has at most 4n
// values, so cycle walking takes about two rounds on average.
func (p *Permutation) At(i int64) int64 {
	x := uint64(i)
	for {
		x = p.encrypt(x)
		if x < uint64(p.n) {
			return int64(x)
		}
	}
}

func (p *Permutation) encrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix64(r^k)&p.mask)
	}
	return l<<p.half | r
}
