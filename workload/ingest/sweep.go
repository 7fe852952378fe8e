package ingest

import (
	"context"
	"fmt"

	"github.com/fieldbench/fieldbench/stats"
)

// OnError says what a sweep does after a failed run.
type OnError string

const (
	// OnErrorContinue records the failure and goes on: the study's MongoDB
	// failing at high loads is a result, and later loads may still tell
	// where (or whether) it recovers.
	OnErrorContinue OnError = "continue"
	// OnErrorStop records the failure, then ends the sweep.
	OnErrorStop OnError = "stop"
)

// ParseOnError validates an --on-error value.
func ParseOnError(s string) (OnError, error) {
	switch OnError(s) {
	case OnErrorContinue, OnErrorStop:
		return OnError(s), nil
	}
	return "", fmt.Errorf("--on-error must be continue or stop (got %q)", s)
}

// SweepConfig is a load sweep: for each load From, From+Step, ..., To
// records per source, Runs runs of Run (with Records set to the load), the
// first WarmupRuns of them left out of the statistics.
type SweepConfig struct {
	Run              RunConfig // Records is set per load
	From, To, Step   int64
	Runs, WarmupRuns int
	OnError          OnError
}

// Validate reports the first bad setting in words a user understands.
func (c SweepConfig) Validate() error {
	switch {
	case c.From < 1:
		return fmt.Errorf("--from must be at least 1 record per source (got %d)", c.From)
	case c.From > c.To:
		return fmt.Errorf("--from (%d) must not be greater than --to (%d)", c.From, c.To)
	case c.To > MaxRecords:
		return fmt.Errorf("--to must be at most %d records per source (got %d)", MaxRecords, c.To)
	case c.Step < 1:
		return fmt.Errorf("--step must be at least 1 (got %d)", c.Step)
	case c.WarmupRuns < 0:
		return fmt.Errorf("--warmup-runs must not be negative (got %d)", c.WarmupRuns)
	case c.Runs <= c.WarmupRuns:
		return fmt.Errorf("--runs (%d) must be greater than --warmup-runs (%d): at least one run per load must be measured", c.Runs, c.WarmupRuns)
	}
	if _, err := ParseOnError(string(c.OnError)); err != nil {
		return err
	}
	r := c.Run
	r.Records = c.From
	return r.Validate()
}

// Loads are the records per source of every point, in order.
func (c SweepConfig) Loads() []int64 {
	var out []int64
	for n := c.From; n <= c.To && n > 0; n += c.Step {
		out = append(out, n)
	}
	return out
}

// Measured is how many runs per load enter the statistics.
func (c SweepConfig) Measured() int { return c.Runs - c.WarmupRuns }

// PointStats summarizes the runs of one load. Warm-up runs and failed runs
// are left out of the sample; failures are counted.
type PointStats struct {
	Records int64 // per source: the load
	Runs    int   // runs done at this load, warm-up and failed included
	// N is the sample: measured (non-warm-up) runs that succeeded.
	N int
	// Mean and SD (n-1) of the sample's throughput, records/s; Lo and Hi
	// the 95 % Student-t confidence interval (t with N-1 degrees of
	// freedom). With N = 1 the interval is undefined: SD is 0, Lo = Hi =
	// Mean and CIDefined is false. With N = 0 all are 0.
	Mean, SD, Lo, Hi float64
	CIDefined        bool
	Failed           int    // measured runs that failed
	WarmupFailed     int    // warm-up runs that failed
	Cause            string // the first failure's cause, "" when none
	// Partial: the sweep stopped (interrupt, --on-error stop) before this
	// load's planned runs were done.
	Partial bool
}

// Summarize computes a load's statistics from its runs.
func Summarize(records int64, runs []RunResult) PointStats {
	p := PointStats{Records: records, Runs: len(runs)}
	var xs []float64
	for _, r := range runs {
		switch {
		case r.Interrupted:
			continue
		case r.Failed():
			if r.Warmup {
				p.WarmupFailed++
			} else {
				p.Failed++
			}
			if p.Cause == "" {
				p.Cause = r.Cause()
			}
		case !r.Warmup:
			xs = append(xs, r.Throughput)
		}
	}
	p.N = len(xs)
	switch p.N {
	case 0:
	case 1:
		p.Mean, p.Lo, p.Hi = xs[0], xs[0], xs[0]
	default:
		ci, err := stats.MeanCI(xs, Level)
		if err == nil {
			p.Mean, p.SD, p.Lo, p.Hi, p.CIDefined = ci.Mean, ci.SD, ci.Lo, ci.Hi, true
		}
	}
	return p
}

// SweepHooks are called as the sweep goes, so every run and point is saved
// the moment it exists. An error from a hook (e.g. the result file cannot be
// written) ends the sweep with that error.
type SweepHooks struct {
	// BeforeRun is called before each run's reset (progress display).
	BeforeRun func(records int64, run int)
	// Run receives every finished run, failed ones included (not
	// interrupted ones: they measured nothing).
	Run func(RunResult) error
	// Point receives each load's statistics once its runs are done, and a
	// partial load's when the sweep stops inside it.
	Point func(PointStats) error
	// Reset, when set, replaces the store's Reset before each run: the
	// shards of a sweep spread over machines meet there, and one of them
	// resets the store once all have finished the previous run.
	Reset func(ctx context.Context, records int64, run int) error
}

// SweepOutcome tells how a sweep ended.
type SweepOutcome struct {
	Points      []PointStats
	Runs        int // runs done (interrupted ones not counted)
	Failed      int // failed runs, warm-up included
	Interrupted bool
	// StoppedBy is the failed run that ended the sweep under
	// --on-error stop (nil otherwise).
	StoppedBy *RunResult
}

// Sweep runs every load of cfg against store: before each run it resets
// the store, so each run starts from the database's initial state as in the
// study, then runs it. It returns early when ctx is cancelled (Interrupted)
// or a run fails under OnErrorStop; a failing run never makes it return an
// error. recs[i] records source i's batches across all runs.
func Sweep(ctx context.Context, store Store, cfg SweepConfig, recs []BatchRecorder, hooks SweepHooks) (SweepOutcome, error) {
	var out SweepOutcome
	if err := cfg.Validate(); err != nil {
		return out, err
	}
	for _, load := range cfg.Loads() {
		var runs []RunResult
		var stop bool
		for k := 1; k <= cfg.Runs && !stop; k++ {
			if ctx.Err() != nil {
				out.Interrupted = true
				break
			}
			if hooks.BeforeRun != nil {
				hooks.BeforeRun(load, k)
			}
			rc := cfg.Run
			rc.Records = load
			reset := store.Reset
			if hooks.Reset != nil {
				reset = func(ctx context.Context) error { return hooks.Reset(ctx, load, k) }
			}
			res := resetAndRun(ctx, store, reset, rc, recs)
			res.Run, res.Warmup = k, k <= cfg.WarmupRuns
			if res.Interrupted {
				out.Interrupted = true
				break
			}
			runs = append(runs, res)
			out.Runs++
			if res.Failed() {
				out.Failed++
			}
			if hooks.Run != nil {
				if err := hooks.Run(res); err != nil {
					return out, err
				}
			}
			if res.Failed() && cfg.OnError == OnErrorStop {
				out.StoppedBy = &res
				stop = true
			}
		}
		p := Summarize(load, runs)
		p.Partial = len(runs) < cfg.Runs
		if len(runs) > 0 && (p.N > 0 || p.Failed > 0 || p.WarmupFailed > 0) {
			out.Points = append(out.Points, p)
			if hooks.Point != nil {
				if err := hooks.Point(p); err != nil {
					return out, err
				}
			}
		}
		if out.Interrupted || out.StoppedBy != nil {
			break
		}
	}
	return out, nil
}

func resetAndRun(ctx context.Context, store Store, reset func(context.Context) error, rc RunConfig, recs []BatchRecorder) RunResult {
	if err := reset(ctx); err != nil {
		res := RunResult{Records: rc.Records, Err: fmt.Errorf("reset before the run: %w", err)}
		res.Interrupted = ctx.Err() != nil

		return res
	}
	return Run(ctx, store, rc, recs)
}
