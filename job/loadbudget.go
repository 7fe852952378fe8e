package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/result"
	"github.com/spf13/pflag"
)

// loadBudgetHelp is --load-budget's help, declared once for every job
// (newBase) on the commands that drive a load.
const loadBudgetHelp = "hold this load generator to a budget of its own: cpu=CPUS,memory=SIZE (e.g. cpu=0.5,memory=512MiB; no disk=), a control group fieldbench moves itself into for the measured work and out of after (as root); with the cluster's node budgets and a reserve for the system it must fit the machine (docs/scale-model.md)"

// loadVerbs are the commands --load-budget belongs to.
var loadVerbs = []string{"run", "load", "sweep"}

// Series of the load's own group, every second of a run with
// --load-budget: the CPU it used against its budget, the share of the
// second's CFS periods in which it was held back, and its memory against
// its limit.
const (
	seriesLoadCPU       = "load-budget-cpu"
	seriesLoadThrottled = "load-budget-throttled"
	seriesLoadMemory    = "load-budget-memory"
)

// loadBudgetVerbs narrows --load-budget, declared by newBase for every
// command that may drive a load, to those j has (ingest has no load), so
// that list and a scenario's refusal name only real ones.
func loadBudgetVerbs(j Job) {
	o := j.Opts()
	if _, ok := o.verbs["load-budget"]; !ok {
		return
	}
	var have []string
	for _, c := range j.Commands() {
		for _, v := range loadVerbs {
			if c.Verb == v {
				have = append(have, v)
			}
		}
	}
	o.verbs["load-budget"] = have
}

// loadPlan is the load's budget as a command runs it, set on its Env by
// fitted from the job's --load-budget.
type loadPlan struct {
	budget budget.Budget
	// rate is the open-loop rate asked (the largest of the command's
	// rate options; 0 closed loop), family the workload, for the CPU
	// the rate needs (loadCost).
	rate   float64
	family string
}

// loadBudgetOf reads j's --load-budget for command verb: the zero plan
// when it has none.
func loadBudgetOf(j Job, verb string) (loadPlan, error) {
	o := j.Opts()
	if !o.Has(verb, "load-budget") || o.Get("load-budget") == "" {
		if o.Changed("load-budget") {
			return loadPlan{}, Usagef("--load-budget is empty: give cpu=CPUS,memory=SIZE, or leave it out")
		}
		return loadPlan{}, nil
	}
	b, err := budget.ParseLoad(o.Get("load-budget"))
	if err != nil {
		return loadPlan{}, Usage(fmt.Errorf("--load-budget: %w", err))
	}
	p := loadPlan{budget: b, family: j.Workload().Name}
	for _, n := range o.order {
		if _, ok := o.rates[n]; ok && inVerb(o.verbs[n], verb) {
			p.rate = math.Max(p.rate, *o.ptrs[n].(*float64))
		}
	}
	return p, nil
}

// checkLoadBudget refuses, before anything starts, a --load-budget that
// is malformed, that this machine cannot hold, or that does not fit
// beside the budgets fieldbench holds here already
// (cluster.CheckLoad, with the sums). On a load host (the re-executed
// child) only its form is checked: the parent checked the rest and holds
// the child in the group, and the child's own /sys has no control groups
// (ip netns exec mounts a sysfs of its own).
func checkLoadBudget(j Job, verb string) error {
	p, err := loadBudgetOf(j, verb)
	if err != nil || p.budget.Empty() {
		return err
	}
	if _, on := probe.CurrentLoadHost(); on {
		return nil
	}
	if err := cluster.CheckLoad(p.budget, nil); err != nil {
		return Usage(err)
	}
	return nil
}

// LoadBudget is the --load-budget of flags (zero when there is none, or
// it does not parse: the command's check refuses it), for run --cluster,
// whose CheckBudget fits it beside the nodes' before the cluster starts.
func LoadBudget(flags *pflag.FlagSet) budget.Budget {
	f := flags.Lookup("load-budget")
	if f == nil {
		return budget.Budget{}
	}
	b, _ := budget.ParseLoad(f.Value.String())
	return b
}

// The measured cost of the load generator, for loadCost: CPU got (CPUs)
// at an open-loop rate (operations a second), docs/performance.md's "Many
// clients on null://" (scripts/scale-clients.sh, 2026-11-25, this
// project's machine: 2 virtual CPUs of an AMD EPYC, nothing else
// running), one client per operation a second: microblog from
// `fieldbench run microblog --db null://` itself, wiki and ingest from
// cmd/fieldbench-scale. null:// answers without a database: a real
// driver's own CPU per operation comes on top (Redis's about 65 µs, same
// page), so these are the least a rate needs.
var measuredCost = map[string][][2]float64{
	"microblog": {{1, 0.0048}, {1000, 0.0926}, {10000, 0.132}, {100000, 0.28}},
	"wiki":      {{1, 0.0037}, {1000, 0.0876}, {10000, 0.105}, {100000, 0.19}},
	"ingest":    {{1, 0.0032}, {1000, 0.0903}, {10000, 0.15}, {100000, 0.43}},
}

// loadCost is the CPU (in CPUs) the load generator of family needs at
// rate operations a second, from measuredCost: linear between the
// measured rates, the last CPU per operation beyond them; a workload not
// measured takes microblog's (the CLI's own figures). 0 for closed loop.
func loadCost(family string, rate float64) float64 {
	if rate <= 0 {
		return 0
	}
	pts, ok := measuredCost[family]
	if !ok {
		pts = measuredCost["microblog"]
	}
	if rate <= pts[0][0] {
		return pts[0][1] * rate / pts[0][0]
	}
	for i := 1; i < len(pts); i++ {
		if rate <= pts[i][0] {
			a, b := pts[i-1], pts[i]
			return a[1] + (b[1]-a[1])*(rate-a[0])/(b[0]-a[0])
		}
	}
	last := pts[len(pts)-1]
	return last[1] * rate / last[0]
}

// sayLoadCost prints what the rate needs against the load's CPU budget,
// and warns when the budget is smaller. A warning, not a refusal: the
// figures are the harness's alone on one machine, a lower bound; a run
// under a budget too small says so itself in its load-budget-throttled
// series and its open-loop lateness.
func sayLoadCost(w io.Writer, p loadPlan) {
	if p.budget.CPU <= 0 || p.rate <= 0 {
		return
	}
	need := loadCost(p.family, p.rate)
	fmt.Fprintf(w, "load budget: %g operations a second need at least %.3f CPU of the load generator (fieldbench's own cost on null://, measured by scripts/scale-clients.sh on this project's machine, docs/performance.md; a database's driver adds its own); --load-budget gives cpu=%g\n", p.rate, need, p.budget.CPU)
	if need > p.budget.CPU {
		fmt.Fprintf(w, "fieldbench: warning: --load-budget cpu=%g is below the %.3f CPU the rate needs: the load generator will be held back and start operations late (its load-budget-throttled series and the schedule's lateness will show it); give cpu=%.2g or more\n", p.budget.CPU, need, math.Ceil(need*100)/100)
	}
}

// holdLoad moves this process into a group of the load's budget (none
// without one; on a load host the parent holds the child, and the group
// it hands the child is returned, to read) and
// returns what undoes it: the process back where it was, the group
// removed. It is called on every path that leaves (defer).
func holdLoad(p loadPlan) (release func() error, held *budget.Held, err error) {
	if p.budget.Empty() {
		return func() error { return nil }, nil, nil
	}
	if _, on := probe.CurrentLoadHost(); on {
		// The parent holds this child in the group from its start and
		// hands it the group to read (budget.LoadGroupEnv).
		if g, ok := budget.LoadGroupFromEnv(); ok {
			return func() error { return nil }, &budget.Held{Group: g}, nil
		}
		return func() error { return nil }, nil, nil
	}
	h, err := budget.Hold(budget.LoadGroup(os.Getpid()), p.budget)
	if err != nil {
		return nil, nil, Usage(fmt.Errorf("--load-budget: %w", err))
	}
	done := false
	return func() error {
		if done {
			return nil
		}
		done = true
		return h.Release()
	}, h, nil
}

// loadHeader declares the load's series in h when this process reads its
// group (on a load host, when its parent handed it the group);
// newHeader records the budget itself.
func loadHeader(h *result.Header, p loadPlan) {
	if p.budget.Empty() {
		return
	}
	if _, on := probe.CurrentLoadHost(); on {
		if _, ok := budget.LoadGroupFromEnv(); !ok {
			return
		}
	}
	if h.Series == nil {
		h.Series = map[string]result.SeriesMeta{}
	}
	if p.budget.CPU > 0 {
		h.Series[seriesLoadCPU] = result.SeriesMeta{Title: "CPU used by the load generator, against its budget", XLabel: "elapsed (s)", YLabel: "CPU (% of the load's budget)", XIsTime: true}
		h.Series[seriesLoadThrottled] = result.SeriesMeta{Title: "Load generator held back by its CPU budget", XLabel: "elapsed (s)", YLabel: "throttled (% of the interval's periods)", XIsTime: true}
	}
	if p.budget.Memory > 0 {
		h.Series[seriesLoadMemory] = result.SeriesMeta{Title: "Memory used by the load generator, against its budget", XLabel: "elapsed (s)", YLabel: "memory (% of the load's budget)", XIsTime: true}
	}
}

// sampleLoad writes the load's series every interval until ctx ends, and
// returns when it has stopped. Each sample reads the group's counters once
// and keeps only the last reading: its cost does not grow with the run.
func sampleLoad(ctx context.Context, s *Session, h *budget.Held, b budget.Budget, every time.Duration) (stop func()) {
	if h == nil || b.Empty() {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		prev, err := h.Group.Usage()
		at := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				cur, cerr := h.Group.Usage()
				if err == nil && cerr == nil {
					use := budget.Use(b, prev, cur, now.Sub(at).Seconds())
					x := now.Sub(s.Started()).Seconds()
					for _, f := range []struct {
						series string
						v      float64
					}{{seriesLoadCPU, use.CPU}, {seriesLoadThrottled, use.Throttled}, {seriesLoadMemory, use.Memory}} {
						if !math.IsNaN(f.v) {
							_ = s.Point(result.Point{Series: f.series, X: x, Y: f.v})
						}
					}
				}
				prev, err, at = cur, cerr, now
			}
		}
	}()
	return func() { cancel(); <-done }
}
