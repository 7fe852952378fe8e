package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Mix is a weighted choice among operations, parsed from "a=1,b=2".
type Mix struct {
	ops  []string
	cum  []float64 // cumulative weights
	text string
}

// MaxMixWeight bounds one operation's weight in a mix.
const MaxMixWeight = 1e9

// ParseMix parses spec against the known operations. Weights are
// non-negative numbers, at least one positive; an operation left out has
// weight 0.
func ParseMix(spec string, known []string) (Mix, error) {
	weights := map[string]float64{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return Mix{}, fmt.Errorf("malformed --mix %q: %q is not name=weight", spec, part)
		}
		name = strings.TrimSpace(name)
		if !contains(known, name) {
			return Mix{}, fmt.Errorf("malformed --mix %q: unknown operation %q (known: %s)", spec, name, strings.Join(known, ", "))
		}
		if _, dup := weights[name]; dup {
			return Mix{}, fmt.Errorf("malformed --mix %q: %s given twice", spec, name)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange), f != f, math.IsInf(f, 0):
			return Mix{}, fmt.Errorf("malformed --mix %q: weight of %s must be a finite number (got %q)", spec, name, strings.TrimSpace(w))
		case f < 0:
			return Mix{}, fmt.Errorf("malformed --mix %q: weight of %s must not be negative (got %q)", spec, name, strings.TrimSpace(w))
		case f > MaxMixWeight:
			// Weights are relative: a huge one is a typo, and a sum of
			// them could overflow to +Inf.
			return Mix{}, fmt.Errorf("malformed --mix %q: weight of %s is %s, more than %g: weights are relative (post=1,timeline=4 is post=1e6,timeline=4e6)", spec, name, strings.TrimSpace(w), float64(MaxMixWeight))
		}
		weights[name] = f
	}
	m := Mix{text: spec}
	total := 0.0
	for _, op := range known {
		total += weights[op]
		m.ops = append(m.ops, op)
		m.cum = append(m.cum, total)
	}
	if total <= 0 {
		return Mix{}, fmt.Errorf("malformed --mix %q: no operation has a positive weight", spec)
	}
	return m, nil
}

// Pick returns the index (in the known operations) of a weighted random choice.
func (m Mix) Pick(r *rand.Rand) int {
	x := r.Float64() * m.cum[len(m.cum)-1]
	for i, c := range m.cum {
		if x < c {
			return i
		}
	}
	return len(m.cum) - 1
}

// String is the spec as given.
func (m Mix) String() string { return m.text }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
