// Package findmax searches the maximum sustainable throughput of a workload
// under a latency objective: open-loop steps at offered rates, a coarse
// ramp (doubling) until a step breaks the objective, then a bisection
// between the last rate that held and the first that broke, each step with
// its own warm-up, a step whose verdict is close decided by the best of
// three runs. The answer is
// the highest rate that held, with the bracket the search narrowed it to.
// A database that fails at some rate is a result, as in the ingest study.
package findmax

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/fieldbench/fieldbench/runner"
)

// Search is how the rate is searched.
type Search struct {
	From, Max float64 // first rate tried; the ramp stops at Max
	// Precision ends the bisection when hi/lo - 1 is below it (0.05: the
	// answer is known within 5 %).
	Precision float64
	MaxSteps  int
	// RepeatClose decides a close verdict (held or broken) by the best of
	// three runs at the same rate: a second run, and a third when the two
	// disagree.
	RepeatClose bool
	Rules       []Rule
	MinShare    float64 // of the offered rate that must be achieved
}

// MaxRate bounds --from-rate and --max-rate: the runner's bound on every
// --rate (runner.MaxRate, the most an open-loop schedule of whole
// nanoseconds can honour), so that a step findmax would try is one that
// 'run' accepts. A billion operations a second is far beyond what one
// client machine offers; a rate past it is a typing slip.
const MaxRate = runner.MaxRate

// Validate checks the search's bounds.
func (s Search) Validate() error {
	switch {
	case !(s.From > 0) || s.From > MaxRate:
		return fmt.Errorf("--from-rate must be a positive rate up to %g ops/s (got %g)", float64(MaxRate), s.From)
	case !(s.Max >= s.From) || s.Max > MaxRate:
		return fmt.Errorf("--max-rate must be at least --from-rate and at most %g ops/s (got %g, --from-rate %g)", float64(MaxRate), s.Max, s.From)
	case !(s.Precision > 0 && s.Precision < 1):
		return fmt.Errorf("--precision must be between 0 and 1 (got %g)", s.Precision)
	case s.MaxSteps < 2:
		return fmt.Errorf("--max-steps must be at least 2 (got %d)", s.MaxSteps)
	case !(s.MinShare > 0 && s.MinShare <= 1):
		return fmt.Errorf("--min-achieved must be in (0, 1] (got %g)", s.MinShare)
	}
	return nil
}

// Step is one measured step.
type Step struct {
	N       int
	Rate    float64
	Verdict Verdict
	Dir     string // its run directory ("" when the run failed to start)
	Err     error  // the run failed: the step broke the objective
}

// Runner runs one step at rate and judges it.
type Runner func(ctx context.Context, n int, rate float64) Step

// Outcome is what the search found.
type Outcome struct {
	Steps []Step
	// Max is the highest rate that held (0 when even From broke); Lo and
	// Hi bracket the true maximum (Hi is +Inf when Max held everywhere).
	Max, Lo, Hi float64
	Reason      string // why the search ended
	Interrupted bool
}

// Run searches. It stops by itself: after MaxSteps steps at most.
func (s Search) Run(ctx context.Context, run Runner) Outcome {
	var out Outcome
	out.Hi = math.Inf(1)
	// step runs one rate. A close verdict, held or broken, is not taken on
	// one run: a second run at the same rate confirms it, and when the two
	// disagree a third decides (best of three). Repeating only close
	// passes, or only close breaks, would bias the answer one way: a
	// passing stall (a GC pause, a neighbour's burst) that breaks a step
	// by a few percent would close the bracket under the true maximum.
	step := func(rate float64) bool {
		st := run(ctx, len(out.Steps)+1, rate)
		out.Steps = append(out.Steps, st)
		pass := st.Err == nil && st.Verdict.Pass
		if !st.Verdict.Close || !s.RepeatClose || st.Err != nil {
			return pass
		}
		held, broke := 0, 0
		count := func(p bool) {
			if p {
				held++
			} else {
				broke++
			}
		}
		count(pass)
		for held < 2 && broke < 2 && len(out.Steps) < s.MaxSteps && ctx.Err() == nil {
			again := run(ctx, len(out.Steps)+1, rate)
			out.Steps = append(out.Steps, again)
			count(again.Err == nil && again.Verdict.Pass)
		}
		// Out of steps or interrupted before two agree: hold only on a
		// majority that held (a tie counts as broken).
		return held > broke
	}
	interrupted := func() bool {
		if ctx.Err() != nil || errors.Is(lastErr(out), context.Canceled) {
			out.Interrupted, out.Reason = true, "interrupted"
			return true
		}
		return false
	}
	// The ramp.
	for rate := s.From; ; rate = math.Min(rate*2, s.Max) {
		ok := step(rate)
		if interrupted() {
			return out
		}
		if !ok {
			out.Hi = rate
			break
		}
		out.Max, out.Lo = rate, rate
		if rate >= s.Max {
			out.Reason = fmt.Sprintf("held up to --max-rate %g", s.Max)
			return out
		}
		if len(out.Steps) >= s.MaxSteps {
			out.Reason = "--max-steps reached during the ramp"
			return out
		}
	}
	if out.Max == 0 {
		out.Reason = fmt.Sprintf("broke the objective at the first rate tried (%g): try a lower --from-rate", s.From)
		return out
	}
	// The bisection.
	for out.Hi/out.Lo-1 > s.Precision {
		if len(out.Steps) >= s.MaxSteps {
			out.Reason = "--max-steps reached"
			return out
		}
		mid := (out.Lo + out.Hi) / 2
		ok := step(mid)
		if interrupted() {
			return out
		}
		if ok {
			out.Max, out.Lo = mid, mid
		} else {
			out.Hi = mid
		}
	}
	out.Reason = fmt.Sprintf("bracket within %.0f %%", 100*s.Precision)
	return out
}

func lastErr(o Outcome) error {
	if len(o.Steps) == 0 {
		return nil
	}
	return o.Steps[len(o.Steps)-1].Err
}

// Confirm runs the search's answer once more for a confirmation's length
// (run is that longer run) and, when it does not hold, backs off: one
// --precision step lower at a time (rate / (1 + Precision)), at most
// backoffs times, until a run holds. It returns the runs in order and the
// highest rate that held for their length, 0 when none did.
//
// Why: at the knee a queue builds slowly, and a short step ends before it
// has grown past the objective. Measured on a quiet machine, the rate that
// held for 10 s steps broke a 30 s run in 5 of 6 rounds (docs/findmax.md),
// so a search's answer holds for its step's length and may not for the
// run one cares about. Backing off by the search's own precision keeps the
// answer known to that precision, now for the longer run.
func (s Search) Confirm(ctx context.Context, max float64, backoffs int, run Runner) (float64, []Step) {
	var steps []Step
	rate := max
	for k := 0; k <= backoffs && rate > 0 && ctx.Err() == nil; k++ {
		st := run(ctx, len(steps)+1, rate)
		steps = append(steps, st)
		if errors.Is(st.Err, context.Canceled) {
			break
		}
		if st.Err == nil && st.Verdict.Pass {
			return rate, steps
		}
		rate = roundRate(rate / (1 + s.Precision))
	}
	return 0, steps
}

// roundRate rounds a backed-off rate the way a person would type it: to
// whole operations per second from 100 up, to a tenth below.
func roundRate(r float64) float64 {
	if r >= 100 {
		return math.Round(r)
	}
	return math.Round(r*10) / 10
}
