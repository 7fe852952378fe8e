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
// is an open-loop run of a set length.
func Supported(j job.Job) string {
	o := j.Opts()
	for _, name := range []string{"rate", "duration"} {
		if !o.Has("run", name) {
			return fmt.Sprintf("its run has no --%s: a step is an open-loop run of a fixed duration", name)
		}
	}
	return ""
}

// Config is one rate search of a job whose run options are already set.
type Config struct {
	Search
	Job            job.Job
	StepDuration   time.Duration
	StepWarmup     time.Duration
	Results        string
	Stdout, Stderr io.Writer
	Version        string
}

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
	for k, v := range map[string]string{"duration": cfg.StepDuration.String(), "warmup": cfg.StepWarmup.String(), "results": dir} {
		if err := o.Set(k, v); err != nil {
			return Outcome{}, dir, err
		}
	}
	fmt.Fprintf(cfg.Stderr, "findmax %s: steps of %s (%s warm-up) from %g ops/s, objective %s, at least %.0f %% of the offered rate achieved\n",
		name, cfg.StepDuration, cfg.StepWarmup, cfg.From, specs(cfg.Rules), 100*cfg.MinShare)
	step := func(ctx context.Context, n int, rate float64) Step {
		st := Step{N: n, Rate: rate}
		if err := o.Set("rate", fmt.Sprint(rate)); err != nil {
			st.Err = err
			return st
		}
		before, _ := filepath.Glob(filepath.Join(dir, "*", "result.jsonl"))
		fmt.Fprintf(cfg.Stderr, "\nstep %d: %g ops/s offered\n", n, rate)
		env := &job.Env{Stdout: io.Discard, Stderr: cfg.Stderr, Version: cfg.Version}
		st.Err = c.Run(ctx, env)
		st.Dir = newRunDir(dir, before)
		if errors.Is(st.Err, job.ErrInterrupted) {
			st.Err = context.Canceled
		}
		if st.Dir != "" {
			if r, err := result.Read(st.Dir); err == nil && r.Summary != nil {
				st.Verdict = Judge(*r.Summary, rate, cfg.Rules, cfg.MinShare)
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
		fmt.Fprintf(cfg.Stderr, "step %d: %g ops/s offered, %.0f achieved: %s\n", n, rate, st.Verdict.Achieved, word)
		return st
	}
	out := cfg.Search.Run(ctx, step)
	if err := write(dir, cfg, out); err != nil {
		return out, dir, err
	}
	printOutcome(cfg.Stdout, out, dir)
	if out.Interrupted {
		return out, dir, job.ErrInterrupted
	}
	return out, dir, nil
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

func printOutcome(w io.Writer, out Outcome, dir string) {
	fmt.Fprintln(w)
	switch {
	case out.Max == 0:
		fmt.Fprintf(w, "no sustainable rate found: %s\n", out.Reason)
	case math.IsInf(out.Hi, 1):
		fmt.Fprintf(w, "maximum sustainable rate: at least %.0f ops/s (%s)\n", out.Max, out.Reason)
	default:
		fmt.Fprintf(w, "maximum sustainable rate: %.0f ops/s (the true maximum lies in [%.0f, %.0f); %s; %d steps)\n", out.Max, out.Lo, out.Hi, out.Reason, len(out.Steps))
	}
	fmt.Fprintf(w, "result: %s\nreport: %s\n", filepath.Join(dir, "result.jsonl"), filepath.Join(dir, "report.html"))
}

// write records the search: the knee chart's points, one event per step,
// the answer in the summary, and the report.
func write(dir string, cfg Config, out Outcome) error {
	name := cfg.Job.Workload().Name
	h := result.Header{
		Version: cfg.Version, Workload: name, Adapter: "findmax", Machine: probe.Machine(), Started: time.Now().UTC(),
		Options: map[string]any{"command": "findmax", "slo": specs(cfg.Rules), "min_achieved": cfg.MinShare, "from": cfg.From, "max": cfg.Max,
			"precision": cfg.Precision, "step_duration": cfg.StepDuration.String(), "step_warmup": cfg.StepWarmup.String()},
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
