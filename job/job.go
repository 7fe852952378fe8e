// Package job runs workloads: one Job per workload, with its options
// declared once (Opts), its commands (generate, load, run, sweep, op) and
// the skeleton every measured run shares (measure: run directory,
// database, header, common start, the Session with its result file,
// recorder, progress, summary and report, then the verdict); a job's run
// says only what it drives and checks (a plan). The CLI builds its
// workload commands from this registry, and experiments call jobs directly
// with an Observer; neither re-enters the other. Workloads stay below this
// package: they know their data and operations, not runners, recorders or
// files.
package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload"
)

// Job is one workload's commands over its options. New returns a fresh job
// for every command line or scenario step: its options are its own fields.
type Job interface {
	// Workload is the workload the job drives (name, operations, models).
	Workload() workload.Meta
	// Opts declares every option of every command of the job, once.
	Opts() *Opts
	// Commands are what the job offers, in help order.
	Commands() []Command
}

// Command is one thing a job does (a verb of the CLI: generate, load, run,
// sweep, op) with its help text. Subs are op's operations.
type Command struct {
	Verb                 string
	Short, Long, Example string
	Subs                 []Command
	// Run does it. The job's options are set before it is called.
	Run func(ctx context.Context, env *Env) error
	// Measured commands write a result file and may run inside an
	// experiment or on a started cluster (--cluster).
	Measured bool
}

// Env is what a command gets from whoever runs it (the CLI or an
// experiment): where to talk, and who watches.
type Env struct {
	Stdout, Stderr io.Writer
	// Version is fieldbench's version, written into result files.
	Version string
	// Observer watches a measured run (an experiment's timeline, probes,
	// stability tracking and audit). Never nil: NopObserver by default.
	Observer Observer
	// Cluster describes the cluster fieldbench started for the run, nil
	// otherwise; it is recorded in the result file.
	Cluster *result.ClusterInfo
	// Outputs are the standard files and live metrics a measured run
	// makes beside its result file.
	Outputs Outputs
	// load is the command's --load-budget, set by Find's command
	// (fitted): measure and runLoad hold the load to it.
	load loadPlan
}

// Outputs are what a measured run writes for other tools.
type Outputs struct {
	// HDRLog writes hdr/<operation>.hlog in the run directory: the
	// standard HdrHistogram interval log, one histogram a second.
	HDRLog bool
	// CSV and JSON write summary.csv and summary.json in the run directory.
	CSV, JSON bool
	// Live, when set, is given every interval as it is written (a metrics
	// endpoint).
	Live LiveSink
}

// LiveSink sees a run's intervals as they are written.
type LiveSink interface {
	Start(workload, adapter string)
	Interval(iv result.Interval)
}

func (e *Env) observer() Observer {
	if e.Observer == nil {
		return NopObserver{}
	}
	return e.Observer
}

// Observer watches one measured run. It is how experiments hook into a run
// without the run knowing about experiments. What a workload offers beyond
// it an observer takes by implementing that workload's optional interface
// (PostAuditor for the microblog's posts and audit, RequestSetWatcher for
// the wiki's request sets): the generic seam knows no workload.
type Observer interface {
	// Header adds the observer's own fields and series before the result
	// file is created.
	Header(h *result.Header)
	// Started is called once the session exists: the observer may write
	// events and points into it while the load runs.
	Started(ctx context.Context, s *Session)
	// Ended is called when the load stopped; it stops the observer's own
	// goroutines and returns a failed action's error.
	Ended() error
}

// NopObserver watches nothing: the observer of a plain run.
type NopObserver struct{}

func (NopObserver) Header(*result.Header)             {}
func (NopObserver) Started(context.Context, *Session) {}
func (NopObserver) Ended() error                      { return nil }

// WatchRuns makes env's observer also note the directory of every run it
// sees start (the runs a command records in the run history once it ends,
// `--history`), and returns the list it fills.
func WatchRuns(env *Env) *[]string {
	dirs := &[]string{}
	env.Observer = dirWatcher{Observer: env.observer(), dirs: dirs}
	return dirs
}

// dirWatcher is an observer that notes run directories.
type dirWatcher struct {
	Observer
	dirs *[]string
}

func (d dirWatcher) Started(ctx context.Context, s *Session) {
	*d.dirs = append(*d.dirs, s.Dir())
	d.Observer.Started(ctx, s)
}

var (
	mu       sync.RWMutex
	registry = map[string]func() Job{}
)

// Register adds a workload's job constructor. It panics on a duplicate name:
// a programming error found at start-up.
func Register(name string, newJob func() Job) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("job: duplicate registration of " + name)
	}
	registry[name] = newJob
}

// New returns a fresh job for the workload called name.
func New(name string) (Job, error) {
	mu.RLock()
	defer mu.RUnlock()
	mk, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (known: %v)", name, namesLocked())
	}
	j := mk()
	loadBudgetVerbs(j)
	return j, nil
}

// Names lists the registered jobs, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// RunChecker is a job that can check its run options without running:
// a rate search (findmax) asks it before its first step, so a bad option is
// refused before any directory is made or server contacted.
type RunChecker interface {
	CheckRun() error
}

// CheckRun checks j's run options as set: the sizing rule (Fit), then
// the job's own checks when it has them.
func CheckRun(j Job) error {
	if err := Fit(j, "run"); err != nil {
		return err
	}
	if c, ok := j.(RunChecker); ok {
		return c.CheckRun()
	}
	return nil
}

// SweepChecker is a job whose sweep can check its options without
// running (RunChecker's sweep).
type SweepChecker interface {
	CheckSweep() error
}

// Check checks command verb of j with its options as set, before anything
// starts: the one check that the CLI makes before it runs a workload
// command (and before a --cluster or metrics server starts for it) and an
// experiment before it makes its directory, --dry-run included. It refuses
// a --db given empty (leaving --db out is the embedded SQLite; an empty
// one is a mistake, often an unset variable), a --db whose form its
// adapter refuses (adapter.CheckDSN, connecting to nothing), what the
// command's own check refuses (RunChecker, SweepChecker), and what the
// sizing rule refuses (Fit).
func Check(j Job, verb string) error {
	o := j.Opts()
	if o.Has(verb, "db") {
		switch db := o.Get("db"); {
		case db == "" && o.Changed("db"):
			return Usagef("--db is empty: give a DSN (e.g. sqlite:///tmp/fb.db), or leave --db out for a new SQLite file in the run directory")
		case db != "":
			if err := adapter.CheckDSN(db); err != nil {
				return err
			}
		}
	}
	// The sizing rule first: its message (the estimate against the
	// machine) is the one to read when a command's own check would
	// refuse the same size too.
	if err := Fit(j, verb); err != nil {
		return err
	}
	if err := checkCommand(j, verb); err != nil {
		return err
	}
	return checkLoadBudget(j, verb)
}

// Find returns the command of j for verb ("run", or "op"), whose Run (and
// its operations') applies the sizing rule first (Fit): every caller of a
// command (the CLI, experiments, findmax) finds it here.
func Find(j Job, verb string) (Command, bool) {
	for _, c := range j.Commands() {
		if c.Verb == verb {
			return fitted(j, c), true
		}
	}
	return Command{}, false
}

// Traits are what an experiment may do with a job's run beyond running it.
type Traits struct {
	// SetsOption names the option that bounds a run of request sets (a
	// join experiment sets it to its max_sets and ends the sets once the
	// cluster is stable again); "" when the run has no request sets.
	SetsOption string
	// StepLoad lists the options a scalability step passes to the job's
	// load command (with reset) before running, so every step has its own
	// dataset; nil when steps share the dataset.
	StepLoad []string
	// Stoppable: the run is driven for a duration and ends early on
	// Session.StopLoad (an experiment's stop action).
	Stoppable bool
	// Audit: the run offers its posts and its store to an observer that
	// is a PostAuditor, so the durability audit can read them back.
	Audit bool
	// SizeStep is for a run that is a fixed amount of work (request sets,
	// records, phases) with an open-loop --rate but no --duration: it
	// returns the run options (as the command line writes them) whose work
	// lasts about d at rate, so a rate search (findmax) can give each step
	// a length. It reads the job's other options (threads, batch, scale...)
	// as they are set. nil for a run that has a --duration.
	SizeStep func(rate float64, d time.Duration) map[string]string
	// Phased: the run is a sequence of phases of different operations
	// (trajectory: writes, then each query type), so leaving out its first
	// seconds as warm-up would leave out a phase: a rate search judges
	// every request of its steps.
	Phased bool
}

// workFor is how many units of work (requests, batches) an open-loop run at
// rate does in d: at least min, so a short step is still a valid run.
func workFor(rate float64, d time.Duration, min int64) int64 {
	return max(int64(math.Ceil(rate*d.Seconds())), min)
}

// Traited is a job with Traits.
type Traited interface{ Traits() Traits }

// TraitsOf returns j's traits (none for a job without).
func TraitsOf(j Job) Traits {
	if t, ok := j.(Traited); ok {
		return t.Traits()
	}
	return Traits{}
}

// base is what every job has: its workload's name and its options.
type base struct {
	name string
	opts *Opts
	// loadBudget is --load-budget, declared here once for every job.
	loadBudget *string
}

func newBase(name string) base {
	b := base{name: name, opts: NewOpts(), loadBudget: new(string)}
	b.opts.String(b.loadBudget, "load-budget", "", loadBudgetHelp, loadVerbs...)
	return b
}

// Workload is the registered workload's self-description.
func (b base) Workload() workload.Meta { return workloadMeta(b.name) }

// Opts are the job's options.
func (b base) Opts() *Opts { return b.opts }

// workloadMeta is the registered workload's self-description.
func workloadMeta(name string) workload.Meta {
	w, err := workload.Get(name)
	if err != nil {
		return workload.Meta{Name: name}
	}
	return w.Meta()
}
