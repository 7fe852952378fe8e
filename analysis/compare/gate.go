package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// Gate is one --fail-on rule: a figure (of one operation, or of all) may
// not get worse by more than Limit (a fraction: 0.10 for 10 %) with
// significance.
type Gate struct {
	Op, Figure string
	Limit      float64
	Spec       string
}

// ParseGates reads rules like "p99+10%", "mean:post+5%", "throughput-3%":
// a figure, optionally ":operation", and the worsening allowed, whose sign
// must be the figure's bad direction (+ for latency, - for throughput).
func ParseGates(spec string) ([]Gate, error) {
	var out []Gate
	for _, raw := range strings.Split(spec, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		i := strings.IndexAny(s, "+-")
		if i <= 0 || !strings.HasSuffix(s, "%") {
			return nil, fmt.Errorf("--fail-on %q: want FIGURE[:OP]+N%% or FIGURE[:OP]-N%%, e.g. p99+10%% or throughput-5%%", s)
		}
		fig, op, _ := strings.Cut(s[:i], ":")
		known := false
		for _, f := range Figures {
			known = known || f == fig
		}
		if !known {
			return nil, fmt.Errorf("--fail-on %q: unknown figure %q (known: %s)", s, fig, strings.Join(Figures, ", "))
		}
		pct, err := strconv.ParseFloat(s[i+1:len(s)-1], 64)
		if err != nil || pct < 0 || math.IsInf(pct, 0) || math.IsNaN(pct) {
			return nil, fmt.Errorf("--fail-on %q: %q is not a percentage", s, s[i+1:len(s)-1])
		}
		sign := s[i]
		if HigherIsBetter(fig) && sign != '-' || !HigherIsBetter(fig) && sign != '+' {
			want := "+ (a latency that grows)"
			if HigherIsBetter(fig) {
				want = "- (a throughput that falls)"
			}
			return nil, fmt.Errorf("--fail-on %q: %s gets worse with %s", s, fig, want)
		}
		out = append(out, Gate{Op: op, Figure: fig, Limit: pct / 100, Spec: s})
	}
	return out, nil
}

// CheckGates refuses a gate that names an operation measured in neither
// run: it could never fire, and a CI gate that cannot fire passes every
// build silently (a typo, or an operation renamed since the gate was
// written).
func CheckGates(gates []Gate, base, new *result.Run) error {
	have := map[string]bool{}
	for _, r := range []*result.Run{base, new} {
		for op := range Measured(r) {
			have[op] = true
		}
	}
	for _, g := range gates {
		if g.Op != "" && !have[g.Op] {
			known := make([]string, 0, len(have))
			for op := range have {
				known = append(known, op)
			}
			sort.Strings(known)
			return fmt.Errorf("--fail-on %q: operation %q is in neither %s nor %s (their operations: %s)",
				g.Spec, g.Op, base.Dir, new.Dir, strings.Join(known, ", "))
		}
	}
	return nil
}

// Measured is the set of operations a run completed at least once, by its
// summary or, for a run without one, its intervals.
func Measured(r *result.Run) map[string]bool {
	out := map[string]bool{}
	for op, o := range summaryOf(r).Ops {
		if o.Count > 0 {
			out[op] = true
		}
	}
	for _, iv := range r.Intervals {
		for op, o := range iv.Ops {
			if o.Count > 0 {
				out[op] = true
			}
		}
	}
	return out
}

// Unevaluated says, for each gate, the rows it covers that got no
// verdict though both runs measured the operation: too short (fewer than
// MinSeconds measured seconds in a run) or without a ratio. Such a gate
// was not evaluated — it would pass any change, however large — so a
// caller must not report it as passed. Rows of an operation only one run
// has are left out: that is a difference of the runs, not a gate's.
// base and new name the runs in the words.
func Unevaluated(rows []Row, gates []Gate, base, new string) []string {
	var out []string
	for _, g := range gates {
		for _, r := range rows {
			if r.Figure != g.Figure || (g.Op != "" && r.Op != g.Op) || !math.IsNaN(r.Shift) || math.IsNaN(r.Change) {
				continue
			}
			why := r.Note
			var short []string
			for _, s := range []struct {
				name string
				n    int
			}{{base, r.NBase}, {new, r.NNew}} {
				if s.n < MinSeconds {
					short = append(short, fmt.Sprintf("%s has %d measured seconds", s.name, s.n))
				}
			}
			if len(short) > 0 {
				why = fmt.Sprintf("%s; the test needs %d in each run", strings.Join(short, " and "), MinSeconds)
			}
			out = append(out, fmt.Sprintf("%s: %s %s: %s", g.Spec, r.Op, r.Figure, why))
		}
	}
	return out
}

// Violations are the rows that break a gate: a per-second shift worse than
// its limit, and significant (a change within the noise never fails a
// build; one stalled second, which moves the whole-run percentile but not
// the per-second series, never does either).
func Violations(rows []Row, gates []Gate) []string {
	var out []string
	for _, g := range gates {
		for _, r := range rows {
			if r.Figure != g.Figure || (g.Op != "" && r.Op != g.Op) || !r.Significant || math.IsNaN(r.Shift) {
				continue
			}
			worse := r.Shift
			if HigherIsBetter(r.Figure) {
				worse = -r.Shift
			}
			if worse > g.Limit {
				out = append(out, fmt.Sprintf("%s: %s %s changed %+.1f%% per second [%+.1f%%, %+.1f%%] (whole run %+.1f%%; limit %s)",
					g.Spec, r.Op, r.Figure, 100*r.Shift, 100*r.Lo, 100*r.Hi, 100*r.Change, g.Spec))
			}
		}
	}
	return out
}
