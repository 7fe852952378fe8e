// Package study holds the figures and findings of the four published
// studies fieldbench reproduces, as data: one YAML file per study in
// published/, embedded in the binary. Each file lists the values the paper
// states (in a table, in its text, in its figure captions or in its slides)
// with the conditions they were measured under, and the qualitative claims
// the paper makes with the databases they rank. docs/studies.md describes
// the schema and what each file holds. The files that follow study.go run
// a study and report it beside these figures (plan.go says how).
//
// The values are the papers' own numbers, never fieldbench's; where a paper
// contradicts itself or its slides, each version is an entry of its own and
// a note says so.
package study

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

//go:embed published/*.yaml
var published embed.FS

// Study is one published evaluation and everything this package records of
// it.
type Study struct {
	Name       string            `yaml:"study"`      // fieldbench's workload name: microblog, wiki, ingest, trajectory
	Seed       string            `yaml:"seed"`       // the paper's file in the project's seeds
	Companions []string          `yaml:"companions"` // other seed files of the same study (slides)
	Title      string            `yaml:"title"`
	Authors    string            `yaml:"authors"`
	Year       int               `yaml:"year"`
	Workload   string            `yaml:"workload"`  // fieldbench's workload
	Databases  []string          `yaml:"databases"` // fieldbench adapter names of the systems the study measured
	Versions   map[string]string `yaml:"versions"`
	Datasets   []Dataset         `yaml:"datasets"`
	// Conditions shared by every value; DatabaseConditions add to them per
	// database, and a value's own Conditions add to both (Effective).
	Conditions         Conditions            `yaml:"conditions"`
	DatabaseConditions map[string]Conditions `yaml:"database_conditions"`
	Notes              []string              `yaml:"notes"`
	Values             []Value               `yaml:"values"`
	Claims             []Claim               `yaml:"claims"`
}

// Dataset is a dataset the study names; Conditions.Dataset refers to it.
type Dataset struct {
	Name    string           `yaml:"name"`
	Records int64            `yaml:"records"` // rows, articles, tweets… (0: not stated)
	Size    string           `yaml:"size"`    // as the paper states it ("28 GB")
	Source  Source           `yaml:"source"`
	Note    string           `yaml:"note"`
	Counts  map[string]int64 `yaml:"counts"` // further counts (users, follows)
}

// Source is where in the paper a value or claim is stated. At least one
// field is set.
type Source struct {
	Table   string `yaml:"table"`
	Figure  string `yaml:"figure"`
	Section string `yaml:"section"`
	Slide   string `yaml:"slide"` // a slide's title in the companion deck
}

// String names the source as a reader would look it up.
func (s Source) String() string {
	var parts []string
	if s.Table != "" {
		parts = append(parts, "Table "+s.Table)
	}
	if s.Figure != "" {
		parts = append(parts, "Figure "+s.Figure)
	}
	if s.Section != "" {
		parts = append(parts, "Section "+s.Section)
	}
	if s.Slide != "" {
		parts = append(parts, "slide “"+s.Slide+"”")
	}
	return strings.Join(parts, ", ")
}

// Empty reports whether no field is set.
func (s Source) Empty() bool { return s == Source{} }

// Conditions are what a value was measured under. Zero fields are unknown
// or inherited (Effective).
type Conditions struct {
	Nodes             int               `yaml:"nodes"`       // database nodes (before a transition)
	NodesAfter        int               `yaml:"nodes_after"` // after a join, a crash or a doubling
	ReplicationFactor int               `yaml:"replication_factor"`
	Consistency       string            `yaml:"consistency"`
	Dataset           string            `yaml:"dataset"` // a Dataset's name
	Records           int64             `yaml:"records"` // records in the database for this value
	Clients           int               `yaml:"clients"` // concurrent clients or threads
	LoadMachines      int               `yaml:"load_machines"`
	Sources           int               `yaml:"sources"`            // ingest: concurrent sources
	RecordsPerSource  int64             `yaml:"records_per_source"` // ingest: the load
	Requests          int               `yaml:"requests"`           // wiki: requests per request set
	ReadsPercent      int               `yaml:"reads_percent"`
	Access            string            `yaml:"access"` // sequential or random
	Model             string            `yaml:"model"`  // microblog data model
	DurationS         int               `yaml:"duration_s"`
	Runs              int               `yaml:"runs"`        // measured runs averaged
	WarmupRuns        int               `yaml:"warmup_runs"` // runs discarded first
	Datacenters       int               `yaml:"datacenters"`
	Machine           string            `yaml:"machine"`
	Event             string            `yaml:"event"` // what happened during the run (crash, join)
	Settings          map[string]string `yaml:"settings"`
}

// Empty reports whether nothing is known.
func (c Conditions) Empty() bool {
	return c.Nodes == 0 && c.NodesAfter == 0 && c.ReplicationFactor == 0 && c.Consistency == "" &&
		c.Dataset == "" && c.Records == 0 && c.Clients == 0 && c.LoadMachines == 0 && c.Sources == 0 &&
		c.RecordsPerSource == 0 && c.Requests == 0 && c.ReadsPercent == 0 && c.Access == "" && c.Model == "" &&
		c.DurationS == 0 && c.Runs == 0 && c.WarmupRuns == 0 && c.Datacenters == 0 && c.Machine == "" &&
		c.Event == "" && len(c.Settings) == 0
}

// over returns c with every field o sets replaced by o's.
func (c Conditions) over(o Conditions) Conditions {
	setI := func(d *int, v int) {
		if v != 0 {
			*d = v
		}
	}
	setI64 := func(d *int64, v int64) {
		if v != 0 {
			*d = v
		}
	}
	setS := func(d *string, v string) {
		if v != "" {
			*d = v
		}
	}
	setI(&c.Nodes, o.Nodes)
	setI(&c.NodesAfter, o.NodesAfter)
	setI(&c.ReplicationFactor, o.ReplicationFactor)
	setS(&c.Consistency, o.Consistency)
	setS(&c.Dataset, o.Dataset)
	setI64(&c.Records, o.Records)
	setI(&c.Clients, o.Clients)
	setI(&c.LoadMachines, o.LoadMachines)
	setI(&c.Sources, o.Sources)
	setI64(&c.RecordsPerSource, o.RecordsPerSource)
	setI(&c.Requests, o.Requests)
	setI(&c.ReadsPercent, o.ReadsPercent)
	setS(&c.Access, o.Access)
	setS(&c.Model, o.Model)
	setI(&c.DurationS, o.DurationS)
	setI(&c.Runs, o.Runs)
	setI(&c.WarmupRuns, o.WarmupRuns)
	setI(&c.Datacenters, o.Datacenters)
	setS(&c.Machine, o.Machine)
	setS(&c.Event, o.Event)
	if len(o.Settings) > 0 {
		m := make(map[string]string, len(c.Settings)+len(o.Settings))
		for k, v := range c.Settings {
			m[k] = v
		}
		for k, v := range o.Settings {
			m[k] = v
		}
		c.Settings = m
	}
	return c
}

// Value is one number the paper publishes.
type Value struct {
	ID        string   `yaml:"id"`
	Source    Source   `yaml:"source"`
	Metric    string   `yaml:"metric"`    // one of Metrics
	Operation string   `yaml:"operation"` // fieldbench's operation name, where the value is of one
	Database  string   `yaml:"database"`  // a name of Study.Databases, EveryDatabase or UnstatedDatabase
	Versus    string   `yaml:"versus"`    // the database a ratio compares against
	Unit      string   `yaml:"unit"`      // one of Units
	Value     float64  `yaml:"value"`
	SD        *float64 `yaml:"sd"`   // standard deviation, as published
	CI95      *float64 `yaml:"ci95"` // half-width of the 95 % confidence interval, as published
	Min       *float64 `yaml:"min"`
	Max       *float64 `yaml:"max"`
	Approx    bool     `yaml:"approx"` // the paper gives it as approximate, or it is read off a plot: Note says which
	// Bound is set when the paper gives the number as a bound, one of
	// Bounds ("up to five times": up-to): the report prints the paper's
	// words rather than a bare figure or "≈".
	Bound      string     `yaml:"bound"`
	Note       string     `yaml:"note"`
	Conditions Conditions `yaml:"conditions"`
}

// Claim is one qualitative finding of the paper, in this package's words.
type Claim struct {
	ID         string     `yaml:"id"`
	Source     Source     `yaml:"source"`
	About      string     `yaml:"about"` // one of Metrics, or a broader subject of Subjects
	Claim      string     `yaml:"claim"`
	Databases  []string   `yaml:"databases"` // the databases it is about
	Ranks      []string   `yaml:"ranks"`     // best first, when the claim orders databases
	Values     []string   `yaml:"values"`    // ids of values that bear on it
	Note       string     `yaml:"note"`
	Conditions Conditions `yaml:"conditions"`
	// Hint: the paper only reports the finding as hinted at by tests it
	// does not show; the report says so beside the claim.
	Hint bool `yaml:"hint"`
	// Fails are, for a failure claim, the databases the paper says
	// failed; the claim's other Databases are said to have finished.
	// Empty: every database of the claim is said to have failed.
	Fails []string `yaml:"fails"`
	// Per says the claim holds condition by condition, one of Pers: it
	// is judged at each of the paper's node counts or transitions of its
	// metric, not over all of them together. Needs About to be a metric.
	Per string `yaml:"per"`
	// At are the paper's node counts (before the doubling, for a
	// transition) the claim names ("at 6 and 12 nodes"); empty: every
	// one the paper measured ("at every transition"). Needs Per.
	At []int `yaml:"at"`
	// Trend is, for a claim about latency_by_group, how the paper says the
	// figure goes from the smallest group to the largest: one of Trends.
	Trend string `yaml:"trend"`
}

// Trends are the ways a figure may go over a claim's groups (Claim.Trend).
var Trends = map[string]string{
	"rises": "higher in the largest group than in the smallest",
	"falls": "lower in the largest group than in the smallest",
}

// Bounds are the kinds of bound a value may be (Value.Bound), with the
// words the report prints before the figure.
var Bounds = map[string]string{
	"up-to":     "up to",
	"more-than": "more than",
	"at-least":  "at least",
}

// Pers are the ways a claim may be judged condition by condition
// (Claim.Per).
var Pers = map[string]string{
	"nodes":      "at each node count of the claim's metric (values with nodes and no nodes_after)",
	"transition": "at each transition of the claim's metric (values with nodes and nodes_after)",
}

// Scale is one of the paper's conditions a claim with Per is judged at:
// a node count, or a transition from Nodes to After.
type Scale struct {
	Nodes, After int
}

// String names the scale as the paper does ("6 nodes", "6 → 12 nodes").
func (c Scale) String() string {
	if c.After > 0 {
		return fmt.Sprintf("%d → %d nodes", c.Nodes, c.After)
	}
	return fmt.Sprintf("%d nodes", c.Nodes)
}

// Scales lists, smallest first, the paper's node counts (per "nodes") or
// transitions (per "transition") at which it states a value of metric,
// from the values' effective conditions.
func (s *Study) Scales(metric, per string) []Scale {
	var out []Scale
	for _, v := range s.Values {
		c := s.Effective(v)
		if v.Metric != metric || c.Nodes == 0 || (per == "transition") != (c.NodesAfter > 0) {
			continue
		}
		sc := Scale{Nodes: c.Nodes}
		if per == "transition" {
			sc.After = c.NodesAfter
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b Scale) int { return a.Nodes - b.Nodes })
	return out
}

// CheckClaim reports what is wrong with c's Trend, Per and At: a trend
// missing on latency_by_group or set on anything else, an unknown Per,
// Per on a subject (only a metric has figures at each scale), At without
// Per, or a node count at which the paper states no value of the metric.
func (s *Study) CheckClaim(c Claim) error {
	if (c.About == "latency_by_group") != (c.Trend != "") || (c.Trend != "" && Trends[c.Trend] == "") {
		return fmt.Errorf("%s: about %s needs a trend of rises or falls, and only it has one (trend %q)", c.ID, c.About, c.Trend)
	}
	if c.Per == "" {
		if len(c.At) > 0 {
			return fmt.Errorf("%s: at %v without per", c.ID, c.At)
		}
		return nil
	}
	if Pers[c.Per] == "" {
		return fmt.Errorf("%s: per %q is none of nodes, transition", c.ID, c.Per)
	}
	if Metrics[c.About] == "" {
		return fmt.Errorf("%s: per %s needs about to be a metric, not %q", c.ID, c.Per, c.About)
	}
	scales := s.Scales(c.About, c.Per)
	if len(scales) == 0 {
		return fmt.Errorf("%s: per %s, but the study states no %s at a node count", c.ID, c.Per, c.About)
	}
	for _, n := range c.At {
		if !slices.ContainsFunc(scales, func(sc Scale) bool { return sc.Nodes == n }) {
			return fmt.Errorf("%s: at %d nodes, where the study states no %s (%v)", c.ID, n, c.About, scales)
		}
	}
	return nil
}

// Database names with a meaning of their own in Value.Database.
const (
	EveryDatabase    = "all"      // every database of the study
	UnstatedDatabase = "unstated" // the paper does not say which
)

// Units a value may be in.
var Units = map[string]string{
	"s":         "seconds",
	"ms":        "milliseconds",
	"min":       "minutes",
	"ops/s":     "operations per second",
	"records/s": "records per second",
	"%":         "percent",
	"MB":        "megabytes",
	"MB/node":   "megabytes on each node",
	"blocks/5s": "blocks written in each 5-second vmstat interval",
	"requests":  "a count of requests",
	"count":     "a count",
	"bytes":     "bytes",
	"records":   "a count of records",
	"ratio":     "a dimensionless ratio of two figures",
	"score":     "a dimensionless score",
	"threads":   "client threads",
}

// Metrics are what a value measures, in fieldbench's terms where fieldbench
// has the figure.
var Metrics = map[string]string{
	"latency":                "time of one operation (fieldbench: the operation's HDR histogram)",
	"latency_by_group":       "time of one operation by the group the workload puts it in (microblog: a post by its author's follower count; fieldbench: the group's HDR histograms)",
	"throughput":             "operations or records completed per second (fieldbench: ops/s; ingest: records/s per load)",
	"throughput_ratio":       "one database's throughput over another's",
	"throughput_change":      "relative change of throughput between two settings",
	"request_set_time":       "wiki: time to complete one request set (fieldbench: request-set time, Av1/Av2)",
	"elasticity_score":       "wiki: dimensionless elasticity score (fieldbench scores)",
	"scalability_score":      "wiki: dimensionless scalability score (fieldbench scores)",
	"data_transfer_time":     "time from the join until the database reports data settled (fieldbench: data settled − join)",
	"additional_time":        "time from data settled until the request-set times are stable (fieldbench: stable − data settled)",
	"stabilization_time":     "data transfer time plus additional time (fieldbench: time to stabilize)",
	"stabilization_change":   "relative change of a stabilization time between two transitions",
	"elasticity_change":      "relative change of an elasticity score between two transitions",
	"peak_ratio":             "highest request-set time during a join over the stable level",
	"sd_variation":           "how much the standard deviation of request-set times varies on a stable cluster",
	"request_share":          "requests one node served out of all",
	"convergence_time":       "time until a new write is seen from every load node (fieldbench: convergence)",
	"ownership":              "data ownership per node (fieldbench: ownership probe)",
	"disk_share_sd":          "standard deviation of the per-node share of data on disk",
	"memory_share_sd":        "standard deviation of the per-node share of data in RAM",
	"cpu_idle":               "mean CPU idle time of a node (fieldbench: per-node CPU probe)",
	"block_writes":           "blocks written per vmstat interval (fieldbench: per-node I/O probe)",
	"block_reads":            "blocks read per vmstat interval (fieldbench: per-node I/O probe)",
	"free_memory":            "free memory of a node (fieldbench: per-node memory probe)",
	"block_writes_ratio":     "one database's block writes over another's",
	"disk_usage":             "data on disk (fieldbench: per-node disk probe)",
	"disk_ratio":             "one data size over another",
	"free_disk_required":     "free disk space the database needs at all times",
	"commit_log_size":        "size of the commit log",
	"cluster_formation_time": "time for started nodes to form a cluster (fieldbench: cluster up)",
	"populate_time":          "time to load the dataset (fieldbench: load)",
	"join_time":              "time for a new node to join and take its share of the data",
	"rebalance_time":         "time for a rebalance after nodes were added",
	"errors":                 "operations that failed (fieldbench: errors per operation and kind)",
	"ci_amplitude":           "width of the confidence interval relative to the mean",
	"speedup_ratio":          "throughput after a change of method over before",
	"record_size":            "size of one record",
	"sweep_load":             "records per source at a point of the load sweep (fieldbench: sweep ingest)",
}

// Subjects are broader things a claim may be about besides Metrics.
var Subjects = map[string]string{
	"scalability":  "how a database's figures change with more nodes",
	"stability":    "how steady a database's figures are over time or load",
	"failure":      "a database failing at some load or size",
	"setup":        "how hard a database was to install and configure",
	"data_model":   "how the data model changes the figures",
	"consistency":  "what a reader sees after a write",
	"disk":         "disk use and its limits",
	"load_balance": "how evenly data and requests spread over nodes",
	"dataset_size": "how the figures change with the dataset's size",
	"access_order": "sequential against random access",
}

// Names lists the studies, sorted.
func Names() []string {
	entries, err := fs.ReadDir(published, "published")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Raw returns a study's file as embedded.
func Raw(name string) ([]byte, error) {
	b, err := published.ReadFile(path.Join("published", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("study %q: no such study (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Load parses one study's file. Unknown keys are errors, so a misspelt
// field cannot silently drop a figure.
func Load(name string) (*Study, error) {
	b, err := Raw(name)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse decodes a study file strictly (unknown keys are errors).
func Parse(b []byte) (*Study, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Study
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// All loads every study.
func All() ([]*Study, error) {
	var out []*Study
	for _, n := range Names() {
		s, err := Load(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Value returns the value with this id.
func (s *Study) Value(id string) (Value, bool) {
	for _, v := range s.Values {
		if v.ID == id {
			return v, true
		}
	}
	return Value{}, false
}

// Effective returns the conditions v was measured under: the study's,
// then its database's, then its own.
func (s *Study) Effective(v Value) Conditions {
	c := s.Conditions
	if dc, ok := s.DatabaseConditions[v.Database]; ok {
		c = c.over(dc)
	}
	return c.over(v.Conditions)
}

// HasDatabase reports whether db is one of the study's databases.
func (s *Study) HasDatabase(db string) bool {
	for _, d := range s.Databases {
		if d == db {
			return true
		}
	}
	return false
}

// Dataset returns the dataset with this name.
func (s *Study) Dataset(name string) (Dataset, bool) {
	for _, d := range s.Datasets {
		if d.Name == name {
			return d, true
		}
	}
	return Dataset{}, false
}
