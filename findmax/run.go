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
	// Confirm, when set, runs two more fixed-rate runs of this length after
	// the search: at the rate found, which should hold, and ConfirmOver
	// (0.2: 20 %) above it, which should break.
	Confirm        time.Duration
	ConfirmOver    float64
	Results        string
	Stdout, Stderr io.Writer
	Version        string
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
	j := cfg.Job
	c, ok := job.Find(j, "run")
	if why := Supported(j); !ok || why != "" {
		return Outcome{}, "", job.Usagef("findmax: %s", why)
	}
	if err := cfg.Search.Validate(); err != nil {
		return Outcome{}, "", job.Usage(err)
	}
	if cfg.StepWarmup >= cfg.StepDuration {
		return Outcome{}, "", job.Usagef("--step-warmup %s must be shorter than --step-duration %s", cfg.StepWarmup, cfg.StepDuration)
	}
	if cfg.Confirm > 0 && (cfg.StepWarmup >= cfg.Confirm || !(cfg.ConfirmOver > 0)) {
		return Outcome{}, "", job.Usagef("--confirm %s must be longer than --step-warmup %s, and --confirm-over positive (got %g)", cfg.Confirm, cfg.StepWarmup, cfg.ConfirmOver)
	}
	name := j.Workload().Name
	dir, err := job.NewRunDir(cfg.Results, "findmax-"+name, "search", time.Now())
	if err != nil {
		return Outcome{}, "", err
	}
	o := j.Opts()
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
	size := job.TraitsOf(j).SizeStep
	timed := o.Has("run", "duration")
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
		set := map[string]string{"rate": fmt.Sprint(rate)}
		if timed {
			set["duration"], set["warmup"] = d.String(), cfg.StepWarmup.String()
		} else {
			for k, v := range size(rate, d) {
				set[k] = v
			}
		}
		for k, v := range set {
			if err := o.Set(k, v); err != nil {
				st.Err = fmt.Errorf("set --%s: %w", k, err)
				return st
			}
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
	var conf []Step
	if cfg.Confirm > 0 && out.Max > 0 && !out.Interrupted {
		for i, rate := range []float64{out.Max, math.Round(out.Max * (1 + cfg.ConfirmOver))} {
			st := run(ctx, i+1, rate, cfg.Confirm, "confirmation")
			if errors.Is(st.Err, context.Canceled) {
				out.Interrupted = true
				break
			}
			conf = append(conf, st)
		}
	}
	if err := write(dir, cfg, out, conf); err != nil {
		return out, dir, err
	}
	printOutcome(cfg.Stdout, out, dir, conf)
	if out.Interrupted {
		return out, dir, job.ErrInterrupted
	}
	return out, dir, nil
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

func printOutcome(w io.Writer, out Outcome, dir string, conf []Step) {
	fmt.Fprintln(w)
	switch {
	case out.Max == 0:
		fmt.Fprintf(w, "no sustainable rate found: %s\n", out.Reason)
	case math.IsInf(out.Hi, 1):
		fmt.Fprintf(w, "maximum sustainable rate: at least %.0f ops/s (%s)\n", out.Max, out.Reason)
	default:
		fmt.Fprintf(w, "maximum sustainable rate: %.0f ops/s (the true maximum lies in [%.0f, %.0f); %s; %d steps)\n", out.Max, out.Lo, out.Hi, out.Reason, len(out.Steps))
	}
	for i, st := range conf {
		expect := "should hold"
		if i > 0 {
			expect = "should break"
		}
		fmt.Fprintf(w, "confirmation at %.0f ops/s (%s): %s, %.0f achieved%s\n", st.Rate, expect, verdictWord(st.Verdict.Pass), st.Verdict.Achieved, because(st.Verdict))
	}
	fmt.Fprintf(w, "result: %s\nreport: %s\n", filepath.Join(dir, "result.jsonl"), filepath.Join(dir, "report.html"))
}

// write records the search: the knee chart's points, one event per step,
// the answer in the summary, and the report.
func write(dir string, cfg Config, out Outcome, conf []Step) error {
	name := cfg.Job.Workload().Name
	h := result.Header{
		Version: cfg.Version, Workload: name, Adapter: "findmax", Machine: probe.Machine(), Started: time.Now().UTC(),
		Options: map[string]any{"command": "findmax", "slo": specs(cfg.Rules), "min_achieved": cfg.MinShare, "from": cfg.From, "max": cfg.Max,
			"precision": cfg.Precision, "step_duration": cfg.StepDuration.String(), "step_warmup": cfg.StepWarmup.String(),
			"confirm": cfg.Confirm.String(), "confirm_over": cfg.ConfirmOver},
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
	extra := map[string]float64{"steps": float64(len(out.Steps)), "max_sustainable_rate": out.Max, "bracket_low": out.Lo}
	if !math.IsInf(out.Hi, 1) {
		extra["bracket_high"] = out.Hi
	}
	errs = append(errs, w.Event(result.Event{At: float64(len(out.Steps)) + 1, Name: "findmax", Detail: out.Reason}))
	// The confirmations: fixed-rate runs at the answer and above it.
	for i, st := range conf {
		key := "confirm"
		if i > 0 {
			key = "confirm_over"
		}
		extra[key+"_rate"], extra[key+"_achieved"], extra[key+"_held"] = st.Rate, st.Verdict.Achieved, b2f(st.Verdict.Pass)
		errs = append(errs, w.Event(result.Event{At: float64(len(out.Steps)) + 2 + float64(i), Name: "confirmation " + verdictWord(st.Verdict.Pass),
			Detail: fmt.Sprintf("%g ops/s for %s: achieved %.0f%s; run %s", st.Rate, cfg.Confirm, st.Verdict.Achieved, because(st.Verdict), filepath.Base(st.Dir))}))
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
