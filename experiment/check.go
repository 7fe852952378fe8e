package experiment

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/job"

	"gopkg.in/yaml.v3"
)

// reserved workload options are the experiment's to set.
var reserved = map[string]string{
	"db":      "the experiment sets it: use dsn or cluster",
	"results": "the experiment sets it: use experiment --results",
}

// checkJob checks the workload options of the scenario and of every step
// with the workload's job, as its flags would be checked, and the timeline's
// times against the load's duration.
func (sc *Scenario) checkJob(bad func(string, ...any)) {
	name := sc.Workload.Name
	if name == "none" || !contains(Workloads(), name) {
		return
	}
	verb := sc.Workload.Command
	// check applies opts (only: the keys written at path) and makes the
	// command's check; it returns the job and that check's refusal.
	check := func(path string, opts map[string]any, only map[string]any) (job.Job, string) {
		clean := map[string]any{}
		for k, v := range opts {
			if why, ok := reserved[k]; ok {
				if _, mine := only[k]; mine {
					bad("%s.%s: %s", path, k, why)
				}
				continue
			}
			clean[k] = v
		}
		j, _, err := prepareJob(name, verb, sc.runOptions(clean))
		if err != nil {
			for _, e := range unjoin(err) {
				msg := e.Error()
				// Report each key once: where it was written.
				key := strings.TrimPrefix(strings.SplitN(msg, ":", 2)[0], "workload.options.")
				if _, mine := only[key]; mine || only == nil {
					bad("%s", strings.Replace(msg, "workload.options", path, 1))
				}
			}
			return nil, ""
		}
		// The command's own check, as the real run makes it (job.Check:
		// the CLI's too), on the database the run will use when it is
		// known before anything starts.
		if db := sc.knownDSN(); db != "" && adapter.CheckDSN(db) == nil {
			if err := j.Opts().Set("db", db); err != nil {
				bad("%s: %v", path, err)
			}
		}
		if err := job.Check(j, verb); err != nil {
			return j, err.Error()
		}
		return j, ""
	}
	// report puts a refusal of the command's check on the key it names
	// when that key was written at path (its line), else on path.
	report := func(path, msg string, only map[string]any) {
		if key := optionIn(msg, only); key != "" {
			bad("%s.%s: %s", path, key, msg)
			return
		}
		bad("%s: %s", path, msg)
	}
	j, msg := check("workload.options", sc.Workload.Options, sc.Workload.Options)
	if msg != "" {
		report("workload.options", msg, sc.Workload.Options)
	}
	for i, st := range sc.Steps {
		// A step refused as the workload's options are is said once.
		path := fmt.Sprintf("steps[%d].options", i)
		if _, smsg := check(path, Merge(sc.Workload.Options, st.Options), st.Options); smsg != "" && smsg != msg {
			report(path, smsg, st.Options)
		}
	}
	if j == nil || !j.Opts().Has(verb, "duration") {
		return
	}
	d, err := time.ParseDuration(j.Opts().Get("duration"))
	if err != nil || d <= 0 {
		return
	}
	for i, a := range sc.Timeline {
		if a.At.D() >= d {
			bad("timeline[%d].at: %s is not before the end of the load (duration %s): it would never fire", i, a.At.D(), d)
		}
	}
}

// optionIn is the option of opts that a check's message names ("--KEY",
// or KEY first: "clients must be at least 1"), "" when none: the key whose
// line the problem gets. The longest name wins (--retry-backoff over
// --retries).
func optionIn(msg string, opts map[string]any) string {
	best := ""
	for k := range opts {
		if (strings.Contains(msg, "--"+k) || strings.HasPrefix(msg, k+" ")) && len(k) > len(best) {
			best = k
		}
	}
	return best
}

// knownDSN is the database the scenario's workload will use when it is
// known before anything starts: dsn, or an external cluster's. A cluster
// fieldbench starts has its DSN once it runs; without either the run's
// embedded SQLite is used ("").
func (sc *Scenario) knownDSN() string {
	if c := sc.Cluster; c.External() {
		return c.DSN
	}
	return sc.DSN
}

// checkDSN checks the scenario's DSNs with their adapters
// (adapter.CheckDSN, connecting to nothing), as the run would before its
// first connection: after the experiment's directory exists.
func (sc *Scenario) checkDSN(bad func(string, ...any)) {
	if sc.DSN != "" {
		if err := adapter.CheckDSN(sc.DSN); err != nil {
			bad("dsn: %w", err)
		}
	}
	if c := sc.Cluster; c.External() && c.DSN != "" {
		if err := adapter.CheckDSN(c.DSN); err != nil {
			bad("cluster.dsn: %w", err)
		}
	}
}

// checkCluster checks the engine and the nodes the timeline names.
func (sc *Scenario) checkCluster(bad func(string, ...any)) {
	c := sc.Cluster
	if c == nil || c.Engine == "" {
		return
	}
	if c.External() {
		sc.checkExternal(bad)
		return
	}
	for key, set := range map[string]bool{"database": c.Database != "", "dsn": c.DSN != "", "members": len(c.Members) > 0,
		"commands": len(c.Commands) > 0, "shell": c.Shell, "command_timeout": c.CommandTimeout != 0, "join_timeout": c.JoinTimeout != 0} {
		if set {
			bad("cluster.%s: only for engine %s (a cluster fieldbench did not start)", key, cluster.EngineExternal)
		}
	}
	e, err := cluster.Get(c.Engine)
	if err != nil {
		bad("cluster.engine: %v", err)
		return
	}
	// The node count and options as `cluster up` checks them before it
	// starts anything (cluster.CheckNodes, cluster.CheckOptions), so that
	// --dry-run refuses an `rf: bogus` the real run would, not only after
	// the run's directory exists.
	if err := cluster.CheckNodes(c.Engine, c.Nodes, c.Options); err != nil && c.Nodes >= 1 {
		bad("cluster.nodes: %v", err)
	}
	if err := cluster.CheckOptions(c.Engine, cluster.Options{Nodes: c.Nodes, Extra: c.Options, Network: c.Network}); err != nil {
		bad("cluster.options: %v", err)
	}
	adds := 0
	for _, a := range sc.Timeline {
		if a.Do == "add" {
			adds += a.Count
		}
	}
	for _, st := range sc.Steps {
		adds = max(adds, st.Nodes-c.Nodes)
	}
	// The nodes' budgets are summed with the load's (--load-budget in the
	// workload's or a step's options, the largest), as `run --cluster
	// --load-budget` sums them.
	load, err := sc.loadBudget()
	if err != nil {
		bad("%v", err)
	}
	opts, err := c.UpOptions()
	opts.Load = load
	if err != nil {
		bad("cluster.budget: %v", err)
	} else if err := cluster.CheckBudget(c.Engine, opts, adds); errors.Is(err, budget.ErrUnavailable) {
		// Not this scenario's fault but this machine's: NeedBudgets
		// refuses it unless the budgets are dropped.
		sc.budgetsHere = err
	} else if err != nil {
		bad("cluster.budget: %v", err)
	}
	for i, a := range sc.Timeline {
		for k, n := range a.Nodes {
			if n == loadHostName && a.hostsMayIncludeLoad() {
				continue
			}
			if err := cluster.KnownNode(e, c.Nodes, c.Options, adds, n); err != nil {
				bad("timeline[%d].nodes[%d]: %v", i, k, err)
			}
		}
		for k, n := range a.From {
			if n == loadHostName {
				continue
			}
			if err := cluster.KnownNode(e, c.Nodes, c.Options, adds, n); err != nil {
				bad("timeline[%d].from[%d]: %v (or %s, the load host)", i, k, err, loadHostName)
			}
		}
	}
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	var ue job.UsageError
	if errors.As(err, &ue) {
		return unjoin(ue.Err)
	}
	return []error{err}
}

// pathRE reads the path a problem starts with: timeline[2].nodes[0],
// workload.options.clients, cluster.engine.
var pathRE = regexp.MustCompile(`^([a-z_]+(?:\[\d+\])?(?:\.[a-z_\-]+(?:\[\d+\])?)*)`)

// lineOf is the line of the deepest part of msg's leading path that the
// scenario file has (0 when unknown).
func (sc *Scenario) lineOf(msg string) int {
	if sc.doc == nil || len(sc.doc.Content) == 0 {
		return 0
	}
	m := pathRE.FindString(msg)
	if m == "" {
		return 0
	}
	var segs []string
	for _, part := range strings.Split(m, ".") {
		name, idx, ok := strings.Cut(part, "[")
		segs = append(segs, name)
		if ok {
			segs = append(segs, strings.TrimSuffix(idx, "]"))
		}
	}
	n := sc.doc.Content[0]
	line := 0
	for _, s := range segs {
		next := child(n, s)
		if next == nil {
			break
		}
		n, line = next, next.Line
	}
	return line
}

// has reports whether the scenario file holds the key at path (a path
// as lineOf reads it, e.g. stability.max_sets), not a default.
func (sc *Scenario) has(path string) bool {
	if sc.doc == nil || len(sc.doc.Content) == 0 {
		return false
	}
	n := sc.doc.Content[0]
	for _, part := range strings.Split(path, ".") {
		name, idx, ok := strings.Cut(part, "[")
		if n = child(n, name); n == nil {
			return false
		}
		if ok {
			if n = child(n, strings.TrimSuffix(idx, "]")); n == nil {
				return false
			}
		}
	}
	return true
}

// child is the value of key s in a mapping, or item s of a sequence.
func child(n *yaml.Node, s string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == s {
				v := n.Content[i+1]
				if v.Kind == yaml.ScalarNode {
					return v
				}
				// A key whose value spans lines: the key's line.
				c := *v
				c.Line = n.Content[i].Line
				return &c
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// traits are the scenario workload's job traits (none for "none" or an
// unknown workload, which checkKeys reports).
func (sc *Scenario) traits() job.Traits {
	j, err := job.New(sc.Workload.Name)
	if err != nil {
		return job.Traits{}
	}
	return job.TraitsOf(j)
}

// checkExternal checks an external cluster: its members and commands
// (cluster.ExternalSpec.Problems: every action the timeline fires has a
// command, every placeholder is known and has a value), the nodes the
// timeline names, and what fieldbench cannot do without starting the
// servers itself.
func (sc *Scenario) checkExternal(bad func(string, ...any)) {
	c := sc.Cluster
	used := map[string]bool{}
	adds := 0
	for _, a := range sc.Timeline {
		used[a.Do] = true
		if a.Do == "add" {
			adds += a.Count
		}
	}
	for _, st := range sc.Steps {
		if st.Nodes > c.Nodes {
			used["add"] = true
			adds = max(adds, st.Nodes-c.Nodes)
		}
	}
	for _, err := range c.ExternalSpec().Problems(used, adds) {
		bad("cluster.%v", err)
	}
	if len(c.Options) > 0 {
		bad("cluster.options: engine options are for the clusters fieldbench starts; an external cluster is configured by its owner")
	}
	members, names := 0, map[string]bool{}
	for _, m := range c.Members {
		names[m.Name] = true
		if !m.Spare {
			members++
		}
	}
	if c.Nodes != members && members > 0 {
		bad("cluster.nodes: %d, but the members list %d node(s) that are not spares (leave nodes out with engine external)", c.Nodes, members)
	}
	for i, a := range sc.Timeline {
		for k, n := range a.Nodes {
			if !names[n] {
				bad("timeline[%d].nodes[%d]: %q is not a member of the external cluster (name it in cluster.members; spare: true if the timeline adds it)", i, k, n)
			}
		}
	}
}

// loadBudget is the largest load generator budget the scenario asks
// (--load-budget in the workload's options or a step's): each resource's
// largest, since the steps run one after another.
func (sc *Scenario) loadBudget() (budget.Budget, error) {
	var out budget.Budget
	add := func(where string, opts map[string]any) error {
		v, ok := opts["load-budget"]
		if !ok {
			return nil
		}
		b, err := budget.ParseLoad(fmt.Sprint(v))
		if err != nil {
			return fmt.Errorf("%s.load-budget: %w", where, err)
		}
		out.CPU, out.Memory = max(out.CPU, b.CPU), max(out.Memory, b.Memory)
		return nil
	}
	if err := add("workload.options", sc.Workload.Options); err != nil {
		return budget.Budget{}, err
	}
	for i, st := range sc.Steps {
		if err := add(fmt.Sprintf("steps[%d].options", i), st.Options); err != nil {
			return budget.Budget{}, err
		}
	}
	return out, nil
}
