package study

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/experiment"
	"github.com/fieldbench/fieldbench/scenarios"
)

// CompleteFile is what an experiment writes last, once every run of it is
// saved (experiment.Run's conclusion): an experiment directory holding it
// is a complete result, unless experiment.InterruptedFile is beside it (an
// interrupted experiment writes the report of what it measured too).
const CompleteFile = experiment.ReportFile

// Config is how the caller (the CLI) runs a plan.
type Config struct {
	// Results is the study's directory: each step runs in Results/<step>.
	Results string
	// Scenarios is the directory the steps' scenario files are relative to;
	// "" is the repository's scenarios/ where a file is on disk, else the
	// copy built into fieldbench (experiment.Open).
	Scenarios      string
	Stdout, Stderr io.Writer
	Version        string
	// StartCluster starts a scenario's cluster (experiment.Config's).
	StartCluster experiment.ClusterStarter
	// now is the clock (tests); time.Now when nil.
	now func() time.Time
}

// StepDir is the directory step s runs in.
func StepDir(results string, s Step) string { return filepath.Join(results, s.Name) }

// Complete returns the newest complete experiment directory of a step's
// directory ("" when none): one whose experiment concluded (CompleteFile
// without experiment.InterruptedFile). An interrupted or failed attempt
// leaves a directory without a concluded report, which is kept (what it
// measured stays readable) but does not count.
func Complete(stepDir string) (string, error) {
	entries, err := os.ReadDir(stepDir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var done []string
	for _, e := range entries {
		if !e.IsDir() || !strings.Contains(e.Name(), "-experiment-") {
			continue
		}
		_, rep := os.Stat(filepath.Join(stepDir, e.Name(), CompleteFile))
		_, cut := os.Stat(filepath.Join(stepDir, e.Name(), experiment.InterruptedFile))
		if rep == nil && errors.Is(cut, fs.ErrNotExist) {
			done = append(done, e.Name())
		}
	}
	if len(done) == 0 {
		return "", nil
	}
	sort.Strings(done) // names begin with the start time
	return filepath.Join(stepDir, done[len(done)-1]), nil
}

// scenario loads a step's scenario with the plan's options applied: from
// dir when one is given (the user's --scenarios, which wins: nothing else
// is read), else from scenarios/ on disk or, where a file is not there,
// the copy built into fieldbench (experiment.Open), so a study runs from
// an installed binary or the container image.
func (p Plan) scenario(dir string, s Step) (*experiment.Scenario, error) {
	load, path := experiment.Load, s.Scenario
	switch {
	case filepath.IsAbs(path):
	case dir == "":
		load, path = experiment.Open, filepath.Join(scenarios.Dir, path)
	default:
		path = filepath.Join(dir, path)
	}
	sc, err := load(path)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.Name, err)
	}
	if len(s.Options) > 0 {
		sc.Workload.Options = experiment.Merge(sc.Workload.Options, s.Options)
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("step %s with the %s size's options: %w", s.Name, p.Size, err)
		}
	}
	if p.NoBudgets {
		sc.DropBudgets()
	} else if err := sc.NeedBudgets(); err != nil {
		return nil, fmt.Errorf("step %s: %w", s.Name, err)
	}
	return sc, nil
}

// Check loads every step's scenario: a missing or invalid file is found
// before the first step starts a cluster. A scenarios directory given
// ("" is the default, see scenario) must exist.
func (p Plan) Check(scenarios string) error {
	if scenarios != "" {
		if _, err := os.Stat(scenarios); err != nil {
			return fmt.Errorf("scenarios directory: %w (--scenarios names a directory holding the scenario files; without it fieldbench uses ./scenarios or its built-in copy)", err)
		}
	}
	var errs []error
	for _, s := range p.Steps {
		if _, err := p.scenario(scenarios, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WritePlan lists the steps, the file each runs (marked when it is the
// copy built into fieldbench) and which are already complete in results.
func (p Plan) WritePlan(w io.Writer, results, scenarios string) error {
	fmt.Fprintf(w, "study %s, size %s: %d step(s), results in %s\n", p.Study, p.Size, len(p.Steps), results)
	for i, s := range p.Steps {
		state := "to run"
		done, err := Complete(StepDir(results, s))
		if err != nil {
			return err
		}
		if done != "" {
			state = "complete: " + done
		}
		opts := ""
		if len(s.Options) > 0 {
			opts = " " + strings.Join(experiment.CommandLine(s.Options), " ")
		}
		file := filepath.Join(scenarios, s.Scenario)
		if sc, err := p.scenario(scenarios, s); err == nil {
			file = sc.Path
			if sc.BuiltIn {
				file += " [built in]"
			}
		}
		fmt.Fprintf(w, "  %d/%d %-26s %s%s (%s)\n      %s\n", i+1, len(p.Steps), s.Name, file, opts, state, s.Why)
	}
	return nil
}

// StepError is a step that failed; the plan went on with the next.
type StepError struct {
	Step string
	Err  error
}

func (e StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e StepError) Unwrap() error { return e.Err }

// Run runs the plan's steps in order, skipping those already complete in
// cfg.Results. A failed step is reported and the next one runs (the
// report says the failed step's values were not measured); an interrupt
// stops at once, leaving the completed steps as they are, and is
// returned as the context's error joined to the step's.
func Run(ctx context.Context, p Plan, cfg Config) error {
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	if err := p.Check(cfg.Scenarios); err != nil {
		return err
	}
	t0 := now()
	var failed []error
	for i, s := range p.Steps {
		dir := StepDir(cfg.Results, s)
		done, err := Complete(dir)
		if err != nil {
			return err
		}
		head := fmt.Sprintf("[%d/%d %s, %s elapsed]", i+1, len(p.Steps), s.Name, now().Sub(t0).Round(time.Second))
		if done != "" {
			fmt.Fprintf(cfg.Stderr, "%s already complete in %s: skipped\n", head, done)
			continue
		}
		sc, err := p.scenario(cfg.Scenarios, s)
		if err != nil {
			return err
		}
		from := sc.Path
		if sc.BuiltIn {
			from += " (the copy built into fieldbench: not on disk here)"
		}
		fmt.Fprintf(cfg.Stderr, "%s running %s: %s\n", head, from, s.Why)
		ts := now()
		err = experiment.Run(ctx, sc, experiment.Config{
			Results: dir, Stdout: cfg.Stdout, Stderr: cfg.Stderr, Version: cfg.Version, StartCluster: cfg.StartCluster,
		})
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), StepError{s.Name, err})
		}
		took := now().Sub(ts).Round(time.Second)
		if err != nil {
			fmt.Fprintf(cfg.Stderr, "[%d/%d %s] failed after %s: %v\n", i+1, len(p.Steps), s.Name, took, err)
			failed = append(failed, StepError{s.Name, err})
			continue
		}
		fmt.Fprintf(cfg.Stderr, "[%d/%d %s] done in %s\n", i+1, len(p.Steps), s.Name, took)
	}
	fmt.Fprintf(cfg.Stderr, "study %s: %d step(s) in %s\n", p.Study, len(p.Steps), now().Sub(t0).Round(time.Second))
	return errors.Join(failed...)
}
