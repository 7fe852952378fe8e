package findmax

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

// Series of a rate search's result file.
const (
	SeriesLatency  = "findmax-latency"
	SeriesAchieved = "findmax-achieved"
)

// Supported reports why a job cannot be searched ("" when it can): a step
// is an open-loop run (--rate) of a set length, given by its --duration or,
// for a run that is a fixed amount of work, by sizing that work to the rate
// (job.Traits.SizeStep).
func Supported(j job.Job) string {
	o := j.Opts()
	switch {
	case !o.Has("run", "rate"):
		return "its run has no --rate: a step is an open-loop run"
	case !o.Has("run", "duration") && job.TraitsOf(j).SizeStep == nil:
		return "its run has neither --duration nor a work size the job can fit to a step's length"
	}
	return ""
}

// StepOptions are the run options a search sets itself at each step: the
// rate, and the duration and warm-up or the options that size the work.
func StepOptions(j job.Job) map[string]bool {
	out := map[string]bool{"rate": true}
	if size := job.TraitsOf(j).SizeStep; size != nil && !j.Opts().Has("run", "duration") {
		for k := range size(1, time.Second) {
			out[k] = true
		}
		return out
	}
	out["duration"], out["warmup"] = true, true
	return out
}

// Config is one rate search of a job whose run options are already set.
type Config struct {
	Search
	Job          job.Job
	StepDuration time.Duration
	StepWarmup   time.Duration
	// Confirm, when set, runs the workload at a fixed rate for this long
	// after the search: at the rate found, backing off one precision step
	// at a time (at most ConfirmBackoffs times) until a run holds, then
	// ConfirmOver (0.2: 20 %) above the rate that held, which should break.
	// The answer is then the rate that held for Confirm (Search.Confirm).
	Confirm         time.Duration
	ConfirmOver     float64
	ConfirmBackoffs int
	Results         string
	Stdout, Stderr  io.Writer
	Version         string
}

// stepCap bounds a step whose work is sized to the rate (no --duration):
// a database far slower than the rate would otherwise make it last many
// step lengths. Past it the step breaks.
func stepCap(d time.Duration) time.Duration { return 4*d + 5*time.Minute }

// Run searches the maximum sustainable rate of cfg.Job's run: every step is
// a run directory inside the search's own, whose result file holds the knee
// (latency percentiles and achieved rate against the offered rate, the
// objective, each step's verdict) and whose report draws it.
func Run(ctx context.Context, cfg Config) (Outcome, string, error) {
	if err := Check(cfg); err != nil {
		return Outcome{}, "", err
	}
	j := cfg.Job
	c, _ := job.Find(j, "run")
	o := j.Opts()
	size := job.TraitsOf(j).SizeStep
	timed := o.Has("run", "duration")
	name := j.Workload().Name
	dir, err := job.NewRunDir(cfg.Results, "findmax-"+name, "search", time.Now())
	if err != nil {
		return Outcome{}, "", err
	}
	// One database for every step: the embedded default is made once, in
	// the search's directory, so each step does not load its own.
	if o.Get("db") == "" {
		if err := o.Set("db", job.DefaultSQLite(dir, name)); err != nil {
			return Outcome{}, dir, err
		}
	}
	if err := o.Set("results", dir); err != nil {
		return Outcome{}, dir, err
	}
	// A phased run's first seconds are a phase of their own, not a warm-up.
	warmup := cfg.StepWarmup
	if job.TraitsOf(j).Phased {
		warmup = 0
		fmt.Fprintf(cfg.Stderr, "findmax %s: its run is a sequence of phases; every request is judged (--step-warmup does not apply)\n", name)
	}
	fmt.Fprintf(cfg.Stderr, "findmax %s: steps of %s (%s warm-up) from %g ops/s, objective %s, at least %.0f %% of the offered rate achieved\n",
		name, cfg.StepDuration, warmup, cfg.From, specs(cfg.Rules), 100*cfg.MinShare)
	// run runs the job once at rate for d (its work sized to last d when
	// the run has no duration) and judges the run after its warm-up.
	run := func(ctx context.Context, n int, rate float64, d time.Duration, what string) Step {
		st := Step{N: n, Rate: rate}
		if err := setStep(o, timed, size, rate, d, cfg.StepWarmup); err != nil {
			st.Err = err
			return st
		}
		before, _ := filepath.Glob(filepath.Join(dir, "*", "result.jsonl"))
		fmt.Fprintf(cfg.Stderr, "\n%s %d: %g ops/s offered\n", what, n, rate)
		env := &job.Env{Stdout: io.Discard, Stderr: cfg.Stderr, Version: cfg.Version}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if !timed {
			sctx, cancel = context.WithTimeout(ctx, stepCap(d))
		}
		st.Err = c.Run(sctx, env)
		cut := !timed && errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		st.Dir = newRunDir(dir, before)
		switch {
		case cut:
			st.Err = fmt.Errorf("it ran longer than %s: the database fell too far behind the rate", stepCap(d))
		case errors.Is(st.Err, job.ErrInterrupted):
			st.Err = context.Canceled
		}
		if st.Dir != "" {
			if sum, err := stepSummary(st.Dir, warmup); err == nil {
				st.Verdict = Judge(sum, rate, cfg.Rules, cfg.MinShare)
			} else if st.Err == nil {
				st.Err = fmt.Errorf("read the step's result: %v", err)
			}
		}
		if st.Err != nil {
			st.Verdict.Pass = false
			st.Verdict.Reasons = append(st.Verdict.Reasons, "the run failed: "+firstLine(st.Err.Error()))
		}
		word := "HOLDS"
		if !st.Verdict.Pass {
			word = "BREAKS: " + strings.Join(st.Verdict.Reasons, "; ")
		}
		fmt.Fprintf(cfg.Stderr, "%s %d: %g ops/s offered, %.0f achieved: %s\n", what, n, rate, st.Verdict.Achieved, word)
		return st
	}
	out := cfg.Search.Run(ctx, func(ctx context.Context, n int, rate float64) Step {
		return run(ctx, n, rate, cfg.StepDuration, "step")
	})
	var conf confirmation
	if cfg.Confirm > 0 && out.Max > 0 && !out.Interrupted {
		conf.asked = true
		conf.rate, conf.runs = cfg.Search.Confirm(ctx, out.Max, cfg.ConfirmBackoffs, func(ctx context.Context, n int, rate float64) Step {
			return run(ctx, n, rate, cfg.Confirm, "confirmation")
		})
		if n := len(conf.runs); n > 0 && errors.Is(conf.runs[n-1].Err, context.Canceled) {
			out.Interrupted, conf.runs = true, conf.runs[:n-1]
		}
		if conf.rate > 0 && !out.Interrupted {
			st := run(ctx, len(conf.runs)+1, roundRate(conf.rate*(1+cfg.ConfirmOver)), cfg.Confirm, "confirmation")
			if errors.Is(st.Err, context.Canceled) {
				out.Interrupted = true
			} else {
				conf.over = &st
			}
		}
	}
	if err := write(dir, cfg, out, conf); err != nil {
		return out, dir, err
	}
	printOutcome(cfg.Stdout, cfg, out, dir, conf)
	if out.Interrupted {
		return out, dir, job.ErrInterrupted
	}
	// A search that found no rate holding is a measurement (saved above)
	// whose answer is a failure: exit 1, so a script does not read it as
	// a maximum.
	if max, _, _ := conf.answer(out); max == 0 {
		return out, dir, ErrNoRate
	}
	return out, dir, nil
}

// Check refuses a search that cannot run, as bad input, before anything
// starts: the search's own options, and the job's run options as its first
// step will set them (a bad one is exit 2, not a step that breaks).
func Check(cfg Config) error {
	j := cfg.Job
	_, ok := job.Find(j, "run")
	if why := Supported(j); !ok || why != "" {
		return job.Usagef("findmax: %s", why)
	}
	if err := cfg.Search.Validate(); err != nil {
		return job.Usage(err)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if err := CheckRules(cfg.Rules, j.Workload().Operations); err != nil {
		return job.Usage(err)
	}
	o := j.Opts()
	if err := setStep(o, o.Has("run", "duration"), job.TraitsOf(j).SizeStep, cfg.From, cfg.StepDuration, cfg.StepWarmup); err != nil {
		return job.Usage(err)
	}
	return job.Check(j, "run")
}

// ErrNoRate is returned by Run when no rate held (the result is written).
var ErrNoRate = errors.New("findmax: no sustainable rate found (the search is saved; see its result and report)")

// validate checks the search's own options (the job's run options are
// checked by the job).
func (cfg Config) validate() error {
	switch {
	case cfg.StepDuration <= 0:
		return job.Usagef("--step-duration must be positive (got %s)", cfg.StepDuration)
	case cfg.StepWarmup < 0:
		return job.Usagef("--step-warmup must not be negative (got %s)", cfg.StepWarmup)
	case cfg.StepWarmup >= cfg.StepDuration:
		return job.Usagef("--step-warmup %s must be shorter than --step-duration %s", cfg.StepWarmup, cfg.StepDuration)
	case cfg.Confirm < 0:
		return job.Usagef("--confirm must be 0 (none) or a positive duration (got %s)", cfg.Confirm)
	case !(cfg.ConfirmOver > 0) || math.IsInf(cfg.ConfirmOver, 0):
		return job.Usagef("--confirm-over must be a positive, finite share (got %g)", cfg.ConfirmOver)
	case cfg.Confirm > 0 && cfg.StepWarmup >= cfg.Confirm:
		return job.Usagef("--confirm %s must be longer than --step-warmup %s", cfg.Confirm, cfg.StepWarmup)
	case cfg.ConfirmBackoffs < 0:
		return job.Usagef("--confirm-backoffs must be 0 or more (got %d)", cfg.ConfirmBackoffs)
	}
	return nil
}

// setStep sets the run options of one step: its rate and its duration and
// warm-up, or the work sized to last d at rate.
func setStep(o *job.Opts, timed bool, size func(float64, time.Duration) map[string]string, rate float64, d, warmup time.Duration) error {
	set := map[string]string{"rate": fmt.Sprint(rate)}
	if timed {
		set["duration"], set["warmup"] = d.String(), warmup.String()
	} else {
		for k, v := range size(rate, d) {
			set[k] = v
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := o.Set(k, set[k]); err != nil {
			return fmt.Errorf("set --%s: %w", k, err)
		}
	}
	return nil
}

// stepSummary is a step's summary without its first warmup: the intervals
// ending within warmup of the first one's start are left out (a run with a
// --warmup has marked them already; a run sized to the rate has none).
func stepSummary(dir string, warmup time.Duration) (result.Summary, error) {
	r, err := result.Read(dir)
	if err != nil {
		return result.Summary{}, err
	}
	if len(r.Intervals) > 0 {
		end := r.Intervals[0].Start + warmup.Seconds() + 0.05 // a tick's jitter
		for i := range r.Intervals {
			if r.Intervals[i].End <= end {
				r.Intervals[i].Warmup = true
			}
		}
	}
	return r.Summarize()
}

// newRunDir is the run directory a step made (the one not there before).
func newRunDir(dir string, before []string) string {
	after, _ := filepath.Glob(filepath.Join(dir, "*", "result.jsonl"))
	seen := map[string]bool{}
	for _, b := range before {
		seen[b] = true
	}
	for _, a := range after {
		if !seen[a] {
			return filepath.Dir(a)
		}
	}
	return ""
}

func specs(rules []Rule) string {
	var s []string
	for _, r := range rules {
		s = append(s, r.Spec)
	}
	return strings.Join(s, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// confirmation is what the fixed-rate runs after a search found.
type confirmation struct {
	asked bool
	runs  []Step  // at the answer, then one per back-off
	rate  float64 // the highest rate that held for --confirm; 0 when none did
	over  *Step   // --confirm-over above rate
}

// answer is the search's answer for runs of the confirmation's length
// when one was asked for, and the bracket it lies in: a back-off moves the
// bracket's top to the lowest rate that broke for that length.
func (c confirmation) answer(out Outcome) (max, lo, hi float64) {
	if !c.asked || len(c.runs) == 0 {
		return out.Max, out.Lo, out.Hi
	}
	hi = out.Hi
	for _, st := range c.runs {
		if !(st.Err == nil && st.Verdict.Pass) {
			hi = math.Min(hi, st.Rate)
		}
	}
	return c.rate, c.rate, hi
}

func printOutcome(w io.Writer, cfg Config, out Outcome, dir string, conf confirmation) {
	fmt.Fprintln(w)
	max, lo, hi := conf.answer(out)
	switch {
	case out.Max == 0:
		fmt.Fprintf(w, "no sustainable rate found: %s\n", out.Reason)
	case conf.asked && len(conf.runs) > 0 && max == 0:
		fmt.Fprintf(w, "no sustainable rate for %s found: steps of %s held up to %.0f ops/s, but no rate held for %s down to %.0f ops/s (%d back-offs; --confirm-backoffs)\n",
			cfg.Confirm, cfg.StepDuration, out.Max, cfg.Confirm, conf.runs[len(conf.runs)-1].Rate, len(conf.runs)-1)
	case math.IsInf(hi, 1):
		fmt.Fprintf(w, "maximum sustainable rate: at least %.0f ops/s (%s)\n", max, out.Reason)
	default:
		fmt.Fprintf(w, "maximum sustainable rate: %.0f ops/s (the true maximum lies in [%.0f, %.0f); %s; %d steps)\n", max, lo, hi, out.Reason, len(out.Steps))
	}
	if conf.asked && max > 0 && max < out.Max {
		fmt.Fprintf(w, "for runs of %s: steps of %s held up to %.0f ops/s, which broke for %s; %.0f held after %d back-off(s)\n",
			cfg.Confirm, cfg.StepDuration, out.Max, cfg.Confirm, max, len(conf.runs)-1)
	}
	for i, st := range conf.runs {
		expect := "should hold"
		if i > 0 {
			expect = "backed off, should hold"
		}
		fmt.Fprintf(w, "confirmation at %.0f ops/s (%s): %s, %.0f achieved%s\n", st.Rate, expect, verdictWord(st.Err == nil && st.Verdict.Pass), st.Verdict.Achieved, because(st.Verdict))
	}
	if st := conf.over; st != nil {
		fmt.Fprintf(w, "confirmation at %.0f ops/s (should break): %s, %.0f achieved%s\n", st.Rate, verdictWord(st.Err == nil && st.Verdict.Pass), st.Verdict.Achieved, because(st.Verdict))
	}
	fmt.Fprintf(w, "result: %s\nreport: %s\n", filepath.Join(dir, "result.jsonl"), filepath.Join(dir, "report.html"))
}

// write records the search: the knee chart's points, one event per step,
// the answer in the summary, and the report.
func write(dir string, cfg Config, out Outcome, conf confirmation) error {
	name := cfg.Job.Workload().Name
	h := result.Header{
		Version: cfg.Version, Workload: name, Adapter: "findmax", Machine: probe.Machine(), Started: time.Now().UTC(),
		Options: map[string]any{"command": "findmax", "slo": specs(cfg.Rules), "min_achieved": cfg.MinShare, "from": cfg.From, "max": cfg.Max,
			"precision": cfg.Precision, "step_duration": cfg.StepDuration.String(), "step_warmup": cfg.StepWarmup.String(),
			"confirm": cfg.Confirm.String(), "confirm_over": cfg.ConfirmOver, "confirm_backoffs": cfg.ConfirmBackoffs},
		Series: map[string]result.SeriesMeta{
			SeriesLatency:  {Title: "Latency against the offered rate: one line per operation and figure, the objective as a line of its own; each step's verdict is in the events", XLabel: "offered (ops/s)", YLabel: "latency (ms)"},
			SeriesAchieved: {Title: "Achieved against offered rate", XLabel: "offered (ops/s)", YLabel: "achieved (ops/s)"},
		},
	}
	w, err := result.Create(dir, h)
	if err != nil {
		return err
	}
	var errs []error
	pt := func(p result.Point) { errs = append(errs, w.Point(p)) }
	var rates []float64
	for _, st := range out.Steps {
		verdict := "holds"
		if !st.Verdict.Pass {
			verdict = "breaks"
		}
		rates = append(rates, st.Rate)
		errs = append(errs, w.Event(result.Event{At: float64(st.N), Name: "step " + verdict,
			Detail: fmt.Sprintf("step %d at %g ops/s: achieved %.0f; %s", st.N, st.Rate, st.Verdict.Achieved, strings.Join(st.Verdict.Reasons, "; "))}))
		pt(result.Point{Series: SeriesAchieved, X: st.Rate, Y: st.Verdict.Achieved, Labels: map[string]string{"line": "achieved", "verdict": verdict}})
		pt(result.Point{Series: SeriesAchieved, X: st.Rate, Y: st.Rate, Labels: map[string]string{"line": "offered"}})
		if st.Dir == "" {
			continue
		}
		r, err := result.Read(st.Dir)
		if err != nil || r.Summary == nil {
			continue
		}
		ops := make([]string, 0, len(r.Summary.Ops))
		for op := range r.Summary.Ops {
			if clientOp(op) {
				ops = append(ops, op)
			}
		}
		sort.Strings(ops)
		for _, op := range ops {
			s := r.Summary.Ops[op]
			for _, fig := range ruleFigures(cfg.Rules) {
				if v := s.Figure(fig); s.Count > 0 && !math.IsNaN(v) {
					pt(result.Point{Series: SeriesLatency, X: st.Rate, Y: v / 1000, Labels: map[string]string{"line": op + " " + fig, "verdict": verdict, "step": filepath.Base(st.Dir)}})
				}
			}
		}
	}
	if len(rates) > 0 {
		lo, hi := slicesMinMax(rates)
		for _, r := range cfg.Rules {
			label := "objective " + r.Spec
			for _, x := range []float64{lo, hi} {
				pt(result.Point{Series: SeriesLatency, X: x, Y: float64(r.Limit) / 1e6, Labels: map[string]string{"line": label}})
			}
		}
	}
	// max_sustainable_rate is the answer for runs of --confirm when
	// confirmations ran, the search's (for steps of --step-duration)
	// otherwise; search_max_rate is always the search's.
	max, lo, hi := conf.answer(out)
	extra := map[string]float64{"steps": float64(len(out.Steps)), "max_sustainable_rate": max, "bracket_low": lo, "search_max_rate": out.Max}
	if !math.IsInf(hi, 1) {
		extra["bracket_high"] = hi
	}
	errs = append(errs, w.Event(result.Event{At: float64(len(out.Steps)) + 1, Name: "findmax", Detail: out.Reason}))
	// The confirmations: fixed-rate runs at the answer (and each back-off),
	// then above the rate that held. confirm_* is the last run at or below
	// the answer: the one that held, or the lowest tried.
	runs := conf.runs
	if conf.over != nil {
		runs = append(runs[:len(runs):len(runs)], *conf.over)
	}
	for i, st := range runs {
		key := "confirm"
		if conf.over != nil && i == len(runs)-1 {
			key = "confirm_over"
		}
		held := st.Err == nil && st.Verdict.Pass
		extra[key+"_rate"], extra[key+"_achieved"], extra[key+"_held"] = st.Rate, st.Verdict.Achieved, b2f(held)
		errs = append(errs, w.Event(result.Event{At: float64(len(out.Steps)) + 2 + float64(i), Name: "confirmation " + verdictWord(held),
			Detail: fmt.Sprintf("%g ops/s for %s: achieved %.0f%s; run %s", st.Rate, cfg.Confirm, st.Verdict.Achieved, because(st.Verdict), filepath.Base(st.Dir))}))
	}
	if conf.asked {
		extra["confirm_backoffs"] = float64(max0(len(conf.runs) - 1))
	}
	errs = append(errs, w.Summary(result.Summary{Ops: map[string]result.OpSummary{}, Extra: extra, Interrupted: out.Interrupted}))
	errs = append(errs, w.Close())
	if err := errors.Join(errs...); err != nil {
		return err
	}
	run, err := result.Read(dir)
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, "report.html"), []*result.Run{run})
}

func ruleFigures(rules []Rule) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rules {
		if !seen[r.Figure] {
			seen[r.Figure] = true
			out = append(out, r.Figure)
		}
	}
	return out
}

func slicesMinMax(xs []float64) (float64, float64) {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func verdictWord(pass bool) string {
	if pass {
		return "holds"
	}
	return "breaks"
}

// because is ": reason; reason" for a verdict with reasons, "" otherwise.
func because(v Verdict) string {
	if len(v.Reasons) == 0 {
		return ""
	}
	return ": " + strings.Join(v.Reasons, "; ")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
