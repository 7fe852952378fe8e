package findmax

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// Rule is one latency objective: a figure of one operation (or of every
// operation when Op is empty) must stay below Limit.
type Rule struct {
	Op, Figure string
	Limit      time.Duration
	Spec       string
}

// figures a rule may name.
var figures = []string{"mean", "p50", "p90", "p99", "p99.9", "max"}

// ParseSLO reads objectives like "p99<50ms", "p99.9:post<200ms,mean<5ms".
func ParseSLO(spec string) ([]Rule, error) {
	var out []Rule
	for _, raw := range strings.Split(spec, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		lhs, rhs, ok := strings.Cut(s, "<")
		if !ok {
			return nil, fmt.Errorf("--slo %q: want FIGURE[:OP]<DURATION, e.g. p99<50ms", s)
		}
		fig, op, _ := strings.Cut(strings.TrimSpace(lhs), ":")
		known := false
		for _, f := range figures {
			known = known || f == fig
		}
		if !known {
			return nil, fmt.Errorf("--slo %q: unknown figure %q (known: %s)", s, fig, strings.Join(figures, ", "))
		}
		d, err := time.ParseDuration(strings.TrimSpace(rhs))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--slo %q: %q is not a positive duration like 50ms", s, strings.TrimSpace(rhs))
		}
		out = append(out, Rule{Op: op, Figure: fig, Limit: d, Spec: s})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--slo is required, e.g. --slo 'p99<50ms'")
	}
	return out, nil
}

// CheckRules refuses a rule naming an operation the workload's clients do
// not send (ops is its Meta().Operations): Judge holds client operations
// only, so such a rule either breaks every step ("no bogus operation
// measured", and the search advises a lower rate) or, for a measured
// non-client operation like async-lag, is silently never judged. Checked
// before anything runs, so a typo costs no step.
func CheckRules(rules []Rule, ops []string) error {
	for _, r := range rules {
		if r.Op != "" && !slices.Contains(ops, r.Op) {
			return fmt.Errorf("--slo %q: the workload's clients send no operation %q (they send: %s)", r.Spec, r.Op, strings.Join(ops, ", "))
		}
	}
	return nil
}

// clientOp reports whether op is one the clients send (a "-lag" operation,
// such as microblog's async-lag, is measured beside them, not offered).
func clientOp(op string) bool { return !strings.HasSuffix(op, "-lag") }

// Verdict is one step's judgement against the objectives.
type Verdict struct {
	Pass bool
	// Close: a figure within 10 % of its limit, or the achieved share
	// within 2 points of its minimum: the step is worth repeating.
	Close    bool
	Achieved float64 // client operations per second
	Reasons  []string
}

// Judge holds a run's summary against the rules and the minimum share of
// the offered rate that must be achieved.
func Judge(sum result.Summary, offered float64, rules []Rule, minShare float64) Verdict {
	v := Verdict{Pass: true}
	for op, o := range sum.Ops {
		if clientOp(op) {
			v.Achieved += o.OpsPerSec // successful operations only
		}
	}
	share := v.Achieved / offered
	if share < minShare {
		v.Pass = false
		v.Reasons = append(v.Reasons, fmt.Sprintf("achieved %.0f of %.0f ops/s (%.1f %% < %.0f %%)", v.Achieved, offered, 100*share, 100*minShare))
	}
	if math.Abs(share-minShare) < 0.02 {
		v.Close = true
	}
	for _, r := range rules {
		for op, o := range sum.Ops {
			if !clientOp(op) || (r.Op != "" && r.Op != op) || o.Count == 0 {
				continue
			}
			got := o.Figure(r.Figure)
			limit := float64(r.Limit.Microseconds())
			if got >= limit {
				v.Pass = false
				v.Reasons = append(v.Reasons, fmt.Sprintf("%s %s %s ≥ %s", op, r.Figure, fmtUS(got), r.Limit))
			}
			if math.Abs(got-limit) < 0.1*limit {
				v.Close = true
			}
		}
		if _, ok := sum.Ops[r.Op]; r.Op != "" && !ok {
			v.Pass = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("no %s operation measured", r.Op))
		}
	}
	return v
}

func fmtUS(us float64) string {
	return strconv.FormatFloat(us/1000, 'f', 1, 64) + "ms"
}
