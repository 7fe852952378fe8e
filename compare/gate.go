package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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

// Violations are the rows that break a gate: worse than its limit, and
// significant (a change within the noise never fails a build).
func Violations(rows []Row, gates []Gate) []string {
	var out []string
	for _, g := range gates {
		for _, r := range rows {
			if r.Figure != g.Figure || (g.Op != "" && r.Op != g.Op) || !r.Significant || math.IsNaN(r.Change) {
				continue
			}
			worse := r.Change
			if HigherIsBetter(r.Figure) {
				worse = -r.Change
			}
			if worse > g.Limit {
				out = append(out, fmt.Sprintf("%s: %s %s changed %+.1f%% (limit %s)", g.Spec, r.Op, r.Figure, 100*r.Change, g.Spec))
			}
		}
	}
	return out
}
