// Package experiment scripts a measured run over time: a scenario names the
// cluster to start, the workload to drive and a timeline of actions (add,
// remove, kill or restart nodes; stop the load) fired at given times or when
// a condition holds (baseline reached, data settled, cluster stable again).
// It also holds what the experiments check afterwards: the durability audit
// of acknowledged writes. Running the workloads themselves is the CLI's
// work; this package stays free of drivers and flags.
package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	pathpkg "path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/scenarios"
	"gopkg.in/yaml.v3"

	"github.com/fieldbench/fieldbench/analysis/score"
)

// Scenario is one experiment, as written in a YAML file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Study names the seed study the scenario reproduces (for the report).
	Study string `yaml:"study"`
	// Cluster is started before the load and torn down after; nil runs
	// against DSN, or the workload's embedded default (SQLite).
	Cluster *ClusterSpec `yaml:"cluster"`
	// DSN is an existing database to use instead of a started cluster.
	DSN      string       `yaml:"dsn"`
	Workload WorkloadSpec `yaml:"workload"`
	// Steps, when given, run the workload once per step on a growing
	// cluster: each step's node count and its workload options override the
	// scenario's. With wiki this is the scalability experiment (each step
	// reloads the articles it asks for and gets a score); with the other
	// workloads it is a series of runs (e.g. the trajectory study's 1-4
	// nodes and three dataset sizes).
	Steps []Step `yaml:"steps"`
	// Stability says how request-set workloads detect a stable cluster.
	Stability Stability `yaml:"stability"`
	Timeline  []Action  `yaml:"timeline"`
	// ProbeEvery is the per-node resource probe interval (0: 5 s; "off"
	// is written as a negative duration, -1s).
	ProbeEvery Duration `yaml:"probe_every"`
	// Audit reads back every acknowledged write after the load (microblog).
	Audit bool `yaml:"audit"`
	// Convergence measures time-to-visible on every node after the load.
	Convergence *Convergence `yaml:"convergence"`
	// Path is the file the scenario came from (not in the YAML).
	Path string `yaml:"-"`
	// BuiltIn says Path was not on disk and the scenario is the copy
	// built into fieldbench (Open).
	BuiltIn bool `yaml:"-"`
	// doc is the parsed YAML, to name the line of each problem.
	doc *yaml.Node
	// budgetsHere is why this machine cannot hold the cluster's budgets
	// (no root, a controller missing: budget.ErrUnavailable), found by
	// the checks but not refused by them: NeedBudgets refuses it unless
	// the caller drops the budgets (--no-budgets).
	budgetsHere error
}

// NeedBudgets is the refusal of a scenario whose node budgets this
// machine cannot hold, as bad input with the way out; nil when it has
// none or they can be held. A budget that does not fit, or names a node
// the cluster will not have, is refused by the checks themselves.
func (sc *Scenario) NeedBudgets() error {
	if sc.budgetsHere == nil {
		return nil
	}
	return fmt.Errorf("%s: cluster.budget: %w (or run it with --no-budgets: its nodes then share this machine's cores, and a study's claims about how figures change with node count are not judged)", sc.Path, sc.budgetsHere)
}

// DropBudgets runs the scenario without its node budgets (--no-budgets)
// and returns what it dropped ("" when it had none).
func (sc *Scenario) DropBudgets() string {
	if sc.Cluster == nil || (sc.Cluster.Budget == "" && len(sc.Cluster.Budgets) == 0) {
		return ""
	}
	dropped := sc.Cluster.Budget
	if o, err := sc.Cluster.UpOptions(); err == nil && !o.Budget.Empty() {
		dropped = o.Budget.String()
	}
	sc.Cluster.Budget, sc.Cluster.Budgets, sc.budgetsHere = "", nil, nil
	return dropped
}

// ClusterSpec is the cluster to start, or with engine external the
// cluster the user runs (the keys after Options are for it alone).
type ClusterSpec struct {
	Engine  string            `yaml:"engine"`
	Nodes   int               `yaml:"nodes"`
	Options map[string]string `yaml:"options"`
	// Network is where the nodes live (cluster up --network): loopback
	// (the default) or hosts, each node a host of its own on a virtual
	// network and the load run from a load host on it (docs/network.md).
	// The network faults (partition, limit, delay, loss) need hosts.
	Network string `yaml:"network"`
	// Budget sizes every node (cluster up --budget): "cpu=0.5,memory=1GiB"
	// (docs/scale-model.md); Budgets sizes some nodes by name, over it.
	Budget  string            `yaml:"budget"`
	Budgets map[string]string `yaml:"budgets"`

	// Database is what an external cluster runs (redis, cassandra).
	Database string `yaml:"database"`
	// DSN is the adapter's DSN for an external cluster (default: built
	// from the members' addresses).
	DSN string `yaml:"dsn"`
	// Members are an external cluster's nodes; spares join on add.
	Members []MemberSpec `yaml:"members"`
	// Commands are the node actions of an external cluster as command
	// templates (cluster.Template), by action.
	Commands map[string]string `yaml:"commands"`
	// Shell runs the commands with sh -c, values single-quoted.
	Shell          bool     `yaml:"shell"`
	CommandTimeout Duration `yaml:"command_timeout"`
	JoinTimeout    Duration `yaml:"join_timeout"`
}

// MemberSpec is one node of an external cluster.
type MemberSpec struct {
	Name  string `yaml:"name"`
	Host  string `yaml:"host"`
	Port  int    `yaml:"port"`
	Spare bool   `yaml:"spare"`
}

// Options are the cluster's for cluster.Up: node count, engine options,
// network and budgets.
func (c *ClusterSpec) UpOptions() (cluster.Options, error) {
	var specs []string
	if c.Budget != "" {
		specs = append(specs, c.Budget)
	}
	for _, name := range sortedOptKeys(c.Budgets) {
		specs = append(specs, name+":"+c.Budgets[name])
	}
	plan, err := budget.ParsePlan(specs)
	return cluster.Options{Nodes: c.Nodes, Extra: c.Options, Network: c.Network, Budget: plan}, err
}

// External reports whether the cluster is one fieldbench did not start.
func (c *ClusterSpec) External() bool { return c != nil && c.Engine == cluster.EngineExternal }

// ExternalSpec is the cluster package's description of an external
// cluster.
func (c *ClusterSpec) ExternalSpec() cluster.ExternalSpec {
	s := cluster.ExternalSpec{Database: c.Database, DSN: c.DSN, Commands: c.Commands, Shell: c.Shell,
		CommandTimeout: c.CommandTimeout.D(), JoinTimeout: c.JoinTimeout.D()}
	for _, m := range c.Members {
		s.Members = append(s.Members, cluster.ExternalMember{Name: m.Name, Host: m.Host, Port: m.Port, Spare: m.Spare})
	}
	return s
}

// WorkloadSpec is the workload and its options: the flags of
// `fieldbench run NAME` without dashes (e.g. clients: 50, duration: 200s).
type WorkloadSpec struct {
	Name string `yaml:"name"`
	// Command is run (default) or sweep (ingest's load sweep).
	Command string         `yaml:"command"`
	Options map[string]any `yaml:"options"`
}

// Step is one step of a scalability experiment.
type Step struct {
	Nodes   int            `yaml:"nodes"`
	Options map[string]any `yaml:"options"`
}

// Stability configures stable-phase detection over request sets (seed 002).
type Stability struct {
	// WarmupSets are the first request sets, excluded from every figure.
	WarmupSets int `yaml:"warmup_sets"`
	// BaselineSets are the request sets after warm-up that form the stable
	// phase before any node joins; the "baseline" condition fires after them.
	BaselineSets int `yaml:"baseline_sets"`
	// Window is how many consecutive request sets the stability test
	// judges together (the study's 5).
	Window int `yaml:"window"`
	// Detector names the detector that drives the `stable` condition, the
	// end of the run and the score shown first: score.DetectorMeanDelta
	// (the default: a stationary cluster passes it) or score.DetectorStudy
	// (the study's rule: every delta below the median baseline delta).
	// Both verdicts are always computed and reported.
	Detector string `yaml:"detector"`
	// MaxSets bounds the run: it stops after this many request sets even if
	// the cluster never stabilizes (recorded as such).
	MaxSets int `yaml:"max_sets"`
	// AfterStable is how many request sets run after stability is detected,
	// so Av2 rests on more than the detection window.
	AfterStable int `yaml:"after_stable"`
}

// Convergence configures the time-to-visible measurement.
type Convergence struct {
	Rounds  int               `yaml:"rounds"`
	Poll    Duration          `yaml:"poll"`
	Timeout Duration          `yaml:"timeout"`
	Options map[string]string `yaml:"options"`
}

// Action is one timeline entry: what to do, and when.
type Action struct {
	// At fires the action this long after the load started.
	At Duration `yaml:"at"`
	// When fires it once a condition has happened (see Conditions), After
	// later and after Sets more request sets.
	When  string   `yaml:"when"`
	After Duration `yaml:"after"`
	Sets  int      `yaml:"sets"`
	// Do is the action (see Actions).
	Do string `yaml:"do"`
	// Nodes names the nodes to kill, restart or remove; Count picks that
	// many instead (for add: how many to add; for kill: the last running
	// nodes, never the first, which clients were given as contact point).
	Nodes []string `yaml:"nodes"`
	Count int      `yaml:"count"`
	Note  string   `yaml:"note"`
	// From is partition's other side: the hosts (nodes, or the load host
	// load1) that Nodes are cut off from. Empty: every other host. Two
	// groups of nodes apart, or the clients cut off from a minority of
	// the nodes only (nodes: [redis1], from: [load1]), are partitions
	// with From. For limit, From is the other group: the limit holds
	// between the hosts of Nodes and those of From only (two data
	// centres), and Nodes may name the load host too.
	From []string `yaml:"from"`
	// Rate is limit's bandwidth of each node's link, both ways (with
	// From: of each host's traffic to the other group, each way), in tc's
	// units (10mbit, 1mbps).
	Rate string `yaml:"rate"`
	// Link is how a limit with From is made: "per-host" (the default:
	// each host's traffic to the other group is shaped on its own, so the
	// group's hosts together get the rate times their number) or
	// "shared" (one link between the two groups, the rate their total:
	// two data centres joined by a WAN link; vnet.LinkSites).
	Link string `yaml:"link"`
	// Delay is delay's added latency per packet; Loss is loss's share of
	// packets dropped ("5%"). Both need the netem qdisc.
	Delay Duration `yaml:"delay"`
	Loss  string   `yaml:"loss"`
}

// Actions a timeline can fire.
var Actions = []string{"add", "remove", "kill", "stop-node", "restart", "stop", "mark",
	"partition", "heal", "limit", "unlimit", "pause", "resume", "delay", "loss"}

// Conditions a timeline can wait for.
var Conditions = []string{"start", "baseline", "joined", "settled", "stable", "restarted"}

// Duration is a time.Duration written as "100s" or "1m30s" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string. A value that is none is a
// yaml.TypeError, so that decoding goes on and the scenario's other
// problems are found too (Parse); the field is left unparsed
// (unparsedDuration) until Parse gives it a stand-in.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		*d = unparsedDuration
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s: want a duration like 100s or 2m", n.Line, notADuration)}}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		*d = unparsedDuration
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q %s like 100s or 2m", n.Line, s, notADuration)}}
	}
	*d = Duration(v)
	return nil
}

// notADuration is in the message of every duration that does not parse
// (what Parse tells from the decoder's other errors).
const notADuration = "is not a duration"

// unparsedDuration marks a Duration whose value did not parse.
const unparsedDuration = Duration(math.MinInt64)

// standIns gives every duration that did not parse a stand-in, so that
// the checks judge the rest of the scenario without a second message about
// it: a timeline action's at and delay stand for a given time (1 ns), the
// others for one left out (0: the default).
func (sc *Scenario) standIns() {
	fix := func(d *Duration, v Duration) {
		if *d == unparsedDuration {
			*d = v
		}
	}
	for i := range sc.Timeline {
		a := &sc.Timeline[i]
		fix(&a.At, 1)
		fix(&a.Delay, 1)
		fix(&a.After, 0)
	}
	fix(&sc.ProbeEvery, 0)
	if c := sc.Cluster; c != nil {
		fix(&c.CommandTimeout, 0)
		fix(&c.JoinTimeout, 0)
	}
	if c := sc.Convergence; c != nil {
		fix(&c.Poll, 0)
		fix(&c.Timeout, 0)
	}
}

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Load reads and validates a scenario file on disk.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	defer f.Close()
	return read(path, f)
}

// Open is Load, except that a relative path under scenarios/ which is not
// on disk is read from the copy of the repository's scenarios built into
// fieldbench (package scenarios; Scenario.BuiltIn says so): `experiment
// scenarios/wiki/elasticity-redis.yaml` and `study` run from an installed
// binary or the container image as from the repository's root. A file on
// disk always wins, so an edited scenario runs as edited.
func Open(path string) (*Scenario, error) {
	sc, err := Load(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return sc, err
	}
	name, ok := scenarios.Lookup(path)
	if !ok {
		return nil, notBuiltIn(path, err)
	}
	f, ferr := scenarios.FS().Open(name)
	if ferr != nil {
		return nil, fmt.Errorf("read scenario: %w", ferr)
	}
	defer f.Close()
	sc, err = read(path, f)
	if err != nil {
		return nil, err
	}
	sc.BuiltIn = true
	return sc, nil
}

// notBuiltIn is err, the error of a path under scenarios/ that is neither
// on disk nor built in, with the built-in scenarios beside it named: a
// mistyped name is told what it could have been. Other paths' errors are
// returned as they are.
func notBuiltIn(path string, err error) error {
	rel, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(path)), scenarios.Dir+"/")
	if !ok || filepath.IsAbs(path) {
		return err
	}
	dir, _ := pathpkg.Split(rel)
	var near, dirs []string
	for _, n := range scenarios.Names() {
		d, f := pathpkg.Split(n)
		if d == dir {
			near = append(near, f)
		}
		if len(dirs) == 0 || dirs[len(dirs)-1] != d {
			dirs = append(dirs, d)
		}
	}
	if len(near) == 0 {
		return fmt.Errorf("%w (nor is it built into fieldbench, whose scenarios are in %s/ %s)", err, scenarios.Dir, strings.Join(dirs, ", "))
	}
	return fmt.Errorf("%w (nor is it built into fieldbench, whose %s/%s holds %s)", err, scenarios.Dir, dir, strings.Join(near, ", "))
}

// read reads and validates the scenario in f, named path.
func read(path string, f fs.File) (*Scenario, error) {
	// A file past the limit is refused with its real size, unread.
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxScenarioBytes {
		return nil, fmt.Errorf("%s: %w", path, tooBig(st.Size()))
	}
	// One byte past the limit is enough for Parse to refuse what is not a
	// regular file; a 200 MB stream is never read whole.
	b, err := io.ReadAll(io.LimitReader(f, MaxScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	sc, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc.Path = path
	return sc, nil
}

// tooBig is the error of a scenario file of size bytes.
func tooBig(size int64) error {
	return fmt.Errorf("the scenario is %d bytes (%.1f MiB); at most %d (1 MiB) are read: a scenario is a page of settings, not data", size, float64(size)/(1<<20), MaxScenarioBytes)
}

// Limits on a scenario: it is a page of settings, not data. A 200 MB file
// or half a million timeline entries was accepted and would have been
// held, validated and scheduled whole.
const (
	MaxScenarioBytes = 1 << 20
	MaxEntries       = 10000 // timeline actions, and steps
)

// Parse decodes a scenario strictly (an unknown key is an error: a typo must
// not silently change an experiment; so is a second YAML document, which
// would be ignored) and validates it.
func Parse(b []byte) (*Scenario, error) {
	if len(b) > MaxScenarioBytes {
		// Only MaxScenarioBytes+1 bytes of a stream were read: its size
		// is not known, only that it is too big.
		return nil, fmt.Errorf("the scenario is more than %d bytes (1 MiB), the most read: a scenario is a page of settings, not data", MaxScenarioBytes)
	}
	var sc Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// Durations that do not parse are problems like the checks' (they
	// hid every other one); the decoder's other errors (an unknown key,
	// a list for a number) come alone, as the scenario's shape is not
	// known.
	var durs []error
	if err := dec.Decode(&sc); errors.Is(err, io.EOF) {
		return nil, errors.New("the scenario is empty (no YAML document in it): see scenarios/ for examples")
	} else if te := (*yaml.TypeError)(nil); errors.As(err, &te) && onlyDurations(te) {
		for _, e := range te.Errors {
			durs = append(durs, errors.New(e))
		}
		sc.standIns()
	} else if err != nil {
		return nil, fmt.Errorf("not a valid scenario: %w", err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("not a valid scenario: after the first document: %w", err)
	default:
		return nil, fmt.Errorf("the file holds a second YAML document (from line %d, after '---'): a scenario is one document; put each scenario in its own file", max(next.Line, 1))
	}
	if len(sc.Timeline) > MaxEntries || len(sc.Steps) > MaxEntries {
		return nil, fmt.Errorf("the scenario has %d timeline actions and %d steps; at most %d of each", len(sc.Timeline), len(sc.Steps), MaxEntries)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err == nil {
		sc.doc = &doc
	}
	sc.defaults()
	if err := errors.Join(append(durs, sc.Validate())...); err != nil {
		return nil, err
	}
	return &sc, nil
}

// onlyDurations reports whether every error of te is a duration's.
func onlyDurations(te *yaml.TypeError) bool {
	for _, e := range te.Errors {
		if !strings.Contains(e, notADuration) {
			return false
		}
	}
	return len(te.Errors) > 0
}

func (sc *Scenario) defaults() {
	if sc.Workload.Command == "" {
		sc.Workload.Command = "run"
	}
	if c := sc.Cluster; c.External() && c.Nodes == 0 {
		for _, m := range c.Members {
			if !m.Spare {
				c.Nodes++
			}
		}
	}
	if sc.ProbeEvery == 0 {
		sc.ProbeEvery = Duration(5 * time.Second)
	}
	st := &sc.Stability
	if st.Window == 0 {
		st.Window = 5
	}
	if st.BaselineSets == 0 {
		st.BaselineSets = DefaultBaselineSets
	}
	if st.Detector == "" {
		st.Detector = score.DefaultDetector
	}
	if st.MaxSets == 0 {
		st.MaxSets = 200
	}
	if st.AfterStable == 0 {
		st.AfterStable = 5
	}
	if c := sc.Convergence; c != nil {
		if c.Rounds == 0 {
			c.Rounds = 100
		}
		if c.Poll == 0 {
			c.Poll = Duration(time.Millisecond)
		}
		if c.Timeout == 0 {
			c.Timeout = Duration(10 * time.Second)
		}
	}
	for i := range sc.Timeline {
		if sc.Timeline[i].Do == "add" && sc.Timeline[i].Count == 0 {
			sc.Timeline[i].Count = 1
		}
	}
}

// Workloads an experiment can drive: every registered job, or none.
func Workloads() []string { return append(job.Names(), "none") }

// DefaultBaselineSets is the stable phase's length when a scenario does not
// give one: with 20 sets (19 delta times) the baseline varies from run to
// run of a stationary cluster by 28 % (the median delta, relative SD) and
// the mean-delta bound by 21 %, against 39 % and 30 % with 10 sets
// (TestBaselineVariability in package score; docs/elasticity.md).
const DefaultBaselineSets = 20

// Validate reports every problem of the scenario at once, each with the
// line of the scenario file it is on: the scenario's own keys, the workload
// options (checked by the workload's job, as its flags would be), the
// engine, the nodes the timeline names and its times. Nothing starts before
// all of it holds.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	sc.budgetsHere = nil
	sc.checkKeys(bad)
	sc.checkCluster(bad)
	sc.checkDSN(bad)
	sc.checkJob(bad)
	// Prefix each problem with its line (from the path it starts with).
	for i, e := range errs {
		if line := sc.lineOf(e.Error()); line > 0 {
			errs[i] = fmt.Errorf("line %d: %w", line, e)
		}
	}
	return errors.Join(errs...)
}

// checkKeys checks the scenario's own keys.
func (sc *Scenario) checkKeys(bad func(string, ...any)) {
	if strings.TrimSpace(sc.Name) == "" {
		bad("name: required (it names the run directory)")
	} else if err := job.CheckRunDirName(runDirName, sc.Name); err != nil {
		// The one rule for names that become paths (Run's job.NewRunDir
		// asks it again): "../../../pwned" wrote beside --results.
		bad("name: %v", err)
	}
	if !contains(Workloads(), sc.Workload.Name) {
		bad("workload.name: %q is not one of %s", sc.Workload.Name, strings.Join(Workloads(), ", "))
	}
	switch sc.Workload.Command {
	case "", "run", "sweep": // whether the workload has it: checkJob
	default:
		bad("workload.command: %q is not run or sweep", sc.Workload.Command)
	}
	tr := sc.traits()
	if sc.Cluster != nil && sc.DSN != "" {
		bad("cluster and dsn exclude each other: start a cluster, or use an existing database")
	}
	if c := sc.Cluster; c != nil {
		if c.Engine == "" {
			bad("cluster.engine: required")
		}
		switch {
		case c.Network != "" && !contains(cluster.Networks, c.Network):
			bad("cluster.network: %q is not one of %s", c.Network, strings.Join(cluster.Networks, ", "))
		case c.Network == cluster.NetworkHosts && c.External():
			bad("cluster.network: hosts is for a cluster fieldbench starts, not an external one")
		}
		if c.Nodes < 1 && !c.External() {
			bad("cluster.nodes: at least 1 (got %d)", c.Nodes)
		}
	}
	grows, restarts := false, false
	for i, a := range sc.Timeline {
		where := fmt.Sprintf("timeline[%d]", i)
		if !contains(Actions, a.Do) {
			bad("%s.do: %q is not one of %s", where, a.Do, strings.Join(Actions, ", "))
		}
		switch {
		case a.At < 0:
			bad("%s.at: %s: the time after the load starts at which the action fires cannot be negative", where, a.At.D())
		case a.When == "" && a.At <= 0 && a.Do != "mark":
			bad("%s: needs at (a time after the load starts) or when (a condition)", where)
		case a.When != "" && a.At > 0:
			bad("%s: at and when exclude each other", where)
		case a.When != "" && !contains(Conditions, a.When):
			bad("%s.when: %q is not one of %s", where, a.When, strings.Join(Conditions, ", "))
		}
		if a.Sets < 0 || a.Count < 0 || a.After < 0 {
			bad("%s: sets, count and after cannot be negative", where)
		}
		if a.Sets > 0 && tr.SetsOption == "" {
			bad("%s.sets: workload %s runs no request sets", where, sc.Workload.Name)
		}
		if a.Do == "stop" && tr.SetsOption == "" && !tr.Stoppable {
			bad("%s: stop ends request sets or a run for a duration, neither of which workload %s does; it ends on its own", where, sc.Workload.Name)
		}
		switch a.Do {
		case "add", "remove", "kill", "stop-node", "restart":
			if sc.Cluster == nil {
				bad("%s: %s needs a cluster started by the scenario or an external one", where, a.Do)
			}
		}
		sc.checkFault(where, a, bad)
		switch a.Do {
		case "kill", "stop-node", "restart", "remove":
			if len(a.Nodes) == 0 && a.Count == 0 {
				bad("%s: %s needs nodes (names) or count", where, a.Do)
			}
			if len(a.Nodes) > 0 && a.Count > 0 {
				bad("%s: nodes and count exclude each other", where)
			}
		case "add":
			grows = true
			if len(a.Nodes) > 0 {
				bad("%s: add takes count, not nodes (new nodes are named by the engine)", where)
			}
		}
		if (a.When == "baseline" || a.When == "stable") && tr.SetsOption == "" {
			bad("%s.when: %s is detected from request sets, which workload %s does not run", where, a.When, sc.Workload.Name)
		}
		if a.When == "restarted" && !restarts {
			bad("%s.when: restarted needs an earlier restart action", where)
		}
		if a.Do == "restart" {
			restarts = true
		}
		if (a.When == "joined" || a.When == "settled") && !grows {
			bad("%s.when: %s needs an earlier add action", where, a.When)
		}
	}
	if len(sc.Steps) > 0 {
		if sc.Cluster == nil {
			bad("steps: a scalability experiment needs a cluster")
		}
		if sc.Workload.Name == "none" {
			bad("steps: need a workload")
		}
		if len(sc.Timeline) > 0 {
			bad("steps and timeline exclude each other")
		}
		prev := 0
		if sc.Cluster != nil {
			prev = sc.Cluster.Nodes
		}
		for i, s := range sc.Steps {
			if s.Nodes < prev || s.Nodes < 1 {
				bad("steps[%d].nodes: %d: node counts must not shrink (start at cluster.nodes %d)", i, s.Nodes, prev)
			}
			prev = s.Nodes
		}
	}
	sc.checkStability(bad)
	if !score.KnownDetector(sc.Stability.Detector) {
		bad("stability.detector: %q is not one of %s", sc.Stability.Detector, strings.Join(score.Detectors, ", "))
	}
	if sc.Audit && !tr.Audit {
		bad("audit: the durability audit reads back microblog posts; workload is %s", sc.Workload.Name)
	}
	if c := sc.Convergence; c != nil {
		if sc.Cluster == nil {
			bad("convergence: needs a cluster started by the scenario or an external one (nodes are read directly)")
		}
		if c.Rounds < 1 || c.Poll <= 0 || c.Timeout <= c.Poll {
			bad("convergence: rounds >= 1, poll > 0, timeout > poll")
		}
	}
	if sc.Workload.Name == "none" && sc.Convergence == nil {
		bad("workload none: only a convergence measurement runs without a workload; add convergence")
	}
}

// checkStability checks the stability keys, each by its name and with the
// value written (a default filled in is named as such): the message had
// been a Go struct of the values after defaults.
func (sc *Scenario) checkStability(bad func(string, ...any)) {
	st := sc.Stability
	if st.WarmupSets < 0 {
		bad("stability.warmup_sets: %d: want 0 or more", st.WarmupSets)
	}
	if st.BaselineSets < 2 {
		bad("stability.baseline_sets: %d: want at least 2 (the baseline is the median of their delta times)", st.BaselineSets)
	}
	if st.Window < 1 {
		bad("stability.window: %d: want at least 1", st.Window)
	}
	if st.AfterStable < 0 {
		bad("stability.after_stable: %d: want 0 or more", st.AfterStable)
	}
	if st.WarmupSets >= 0 && st.BaselineSets >= 2 && st.MaxSets < st.WarmupSets+st.BaselineSets {
		given := func(key string, v int) string {
			if !sc.has("stability." + key) {
				return fmt.Sprintf("%s %d (the default)", key, v)
			}
			return fmt.Sprintf("%s %d", key, v)
		}
		bad("stability.max_sets: %d: want at least warmup_sets + baseline_sets (%s + %s), or the run ends before its baseline",
			st.MaxSets, given("warmup_sets", st.WarmupSets), given("baseline_sets", st.BaselineSets))
	}
}

// StableAfter finds, with the same computation `fieldbench scores` makes
// from the result file (score.ComputeElasticity with this detector and
// window), the request set at which the cluster is stable again after a
// join: −1 while it is not. ys and ends are the time and end moment of
// every set so far, warm-up sets first; joinAt and settledAt are seconds
// on the same clock as ends (settledAt NaN or negative when unknown). The
// detail says what was found, for the `stable` event.
func (st Stability) StableAfter(ys, ends []float64, joinAt, settledAt float64) (int, string) {
	if len(ys) <= st.WarmupSets || len(ends) != len(ys) {
		return -1, ""
	}
	if settledAt < 0 {
		settledAt = math.NaN()
	}
	sets := make([]score.Set, 0, len(ys)-st.WarmupSets)
	for i := st.WarmupSets; i < len(ys); i++ {
		sets = append(sets, score.Set{X: ends[i], Y: ys[i]})
	}
	e, err := score.ComputeElasticity(score.ElasticityInput{Sets: sets, Join: joinAt, Settled: settledAt,
		Rt1: math.NaN(), Rt2: math.NaN(), Window: st.Window, Detector: st.Detector})
	if err != nil || !e.Stable {
		return -1, ""
	}
	var others []string
	for _, v := range e.Verdicts {
		if v.Detector == e.Detector {
			continue
		}
		if v.Stable {
			others = append(others, fmt.Sprintf("%s: stable at request set %d", v.Detector, v.StableIndex+st.WarmupSets+1))
		} else {
			others = append(others, v.Detector+": not yet")
		}
	}
	k := e.StableIndex + st.WarmupSets
	detail := fmt.Sprintf("at request set %d by %s", k+1, st.Criterion(e))
	if len(others) > 0 {
		detail += " (" + strings.Join(others, "; ") + ")"
	}
	return k, detail
}

// Criterion says in words what the detector asked of the window, with
// the thresholds e found.
func (st Stability) Criterion(e score.Elasticity) string {
	if e.Detector == score.DetectorStudy {
		return fmt.Sprintf("the study's rule: %d delta times below %.4fs", e.Window, e.Baseline)
	}
	capped := fmt.Sprintf("each capped at %.4fs", e.MeanDelta.Cap)
	if math.IsInf(e.MeanDelta.Cap, 1) {
		capped = "uncapped"
	}
	return fmt.Sprintf("mean-delta: the mean of %d delta times (%s) within %.4fs and their slope within ±%.4fs per set", e.Window, capped, e.MeanDelta.Bound, e.MeanDelta.SlopeBound)
}

// HeaderOptions are the settings to record in the result header of a run
// with request sets, so that `fieldbench scores` recomputes the score
// with the detector and window the experiment used (score.OptionsOf).
func (st Stability) HeaderOptions() map[string]any {
	return map[string]any{score.OptionDetector: st.Detector, score.OptionWindow: st.Window}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CommandLine writes workload options as the flags of the equivalent
// `fieldbench run NAME` command, sorted so a scenario always shows the same
// line. It is for people to read: experiments run jobs directly.
func CommandLine(opts map[string]any) []string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("--%s=%v", k, opts[k]))
	}
	return out
}

// Merge returns base with over's keys replacing base's.
func Merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
