package study

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/stats"
)

// Measure is one figure fieldbench measured in a study's steps, in the
// terms of package study (metric, operation, database, conditions), with
// what it was measured on.
type Measure struct {
	Metric    string
	Operation string
	// Database is the paper's database the step measures (Step.For).
	Database string
	// Server is what really answered, as the result's header names it
	// ("PostgreSQL 16.4", "FerretDB 1.24.2").
	Server string
	// StandIn: Server is not Database (a stand-in server).
	StandIn bool

	Nodes, NodesAfter int
	RF                int
	Consistency       string
	Access            string // trajectory: sequential or random
	Dataset           string // the paper's dataset this one scales down
	DatasetNote       string // how it was scaled
	Load              int64  // ingest: records per source
	Cores             int    // the machine's cores, shared by every node and the client
	// Size is the dataset's size as the run's options set it ("scale
	// 0.01", "20,000 articles"): two measures of datasets of one name
	// but different sizes (each trajectory step scales its own) are
	// not ranked against each other.
	Size string
	// Requests is the requests per request set (wiki), 0 when none.
	Requests int
	// Group is, for latency_by_group, the group's label ("8-15": posts by
	// authors with 8 to 15 followers), GroupBy what groups ("author
	// followers", the result header's Groups).
	Group, GroupBy string

	Value  float64
	Unit   string
	SD     float64 // NaN when none
	Lo, Hi float64 // a confidence interval, when Lo < Hi
	N      int     // samples behind Value
	Failed string  // the measurement failed: why (Value is then not a figure)

	// Caveat is a difference of method the result itself shows (a write
	// request carrying many records against the paper's one).
	Caveat string

	// Budget is the nodes' budget as the run's result records it ("" none:
	// the nodes shared the machine's cores); Bound what bound the run
	// (BoundMachine, BoundBudget, BoundNeither, BoundUnknown; "" without
	// budgets), from its budget-bound event and summary (budget.go).
	Budget, Bound string

	Step string // the plan step
	Dir  string // the run directory
	How  string // how it was read from the result file
}

// StepState is what a step's directory holds.
type StepState struct {
	Step       Step
	Experiment string // the complete experiment directory ("" when none)
	Runs       []string
	Servers    []string // the servers its runs name, deduplicated
	// Bounds is, run by run, the budgets and what bound the nodes.
	Bounds []RunBound
	// Timelines are the runs' figures over time the HTML report draws
	// (wiki: the request-set times, with the joins; microblog: each
	// operation's p99 latency through a crash or a join), and Groups the
	// runs' latency by group (microblog: by the author's follower count).
	Timelines []Timeline
	Groups    []GroupLatency
}

// Timeline is one run's figure over time, with the run's events.
type Timeline struct {
	Run    string // the run directory
	Label  string // what the figure is ("post p99"); "" for the step's one figure
	Points []result.Point
	Events []result.Event
}

// Collect reads every complete step's runs and returns what they measured.
// A step without a complete result contributes nothing (its state says
// so); an unreadable result file is an error.
func Collect(p Plan, results string) ([]Measure, []StepState, error) {
	var all []Measure
	var states []StepState
	for _, s := range p.Steps {
		st := StepState{Step: s}
		done, err := Complete(StepDir(results, s))
		if err != nil {
			return nil, nil, err
		}
		st.Experiment = done
		if done != "" {
			dirs, err := runDirs(done)
			if err != nil {
				return nil, nil, err
			}
			var runSteps [][]score.Step // a stepped wiki scenario's, run by run
			var runBases []Measure      // the base measure of each of those runs
			for _, d := range dirs {
				r, err := result.Read(d)
				if err != nil {
					return nil, nil, fmt.Errorf("step %s: %w", s.Name, err)
				}
				st.Runs = append(st.Runs, d)
				st.Bounds = append(st.Bounds, boundOf(r))
				ms := measures(r, s)
				all = append(all, ms...)
				if r.Header.Workload == "wiki" {
					if tl := timeline(r, score.SeriesRequestSet); len(tl.Points) > 0 {
						st.Timelines = append(st.Timelines, tl)
					}
					if sc, err := score.FromRun(r); err == nil && len(sc.Steps) > 0 {
						runSteps = append(runSteps, sc.Steps)
						runBases = append(runBases, base(r, s))
					}
				}
				if r.Header.Workload == "microblog" {
					st.Timelines = append(st.Timelines, opTimelines(r)...)
					st.Groups = append(st.Groups, groupLatencies(r)...)
				}
				srv := server(r.Header)
				if !contains(st.Servers, srv) {
					st.Servers = append(st.Servers, srv)
				}
			}
			all = append(all, acrossRuns(runBases, runSteps)...)
		}
		states = append(states, st)
	}
	assignDatasets(all)
	return all, states, nil
}

// timeline is run r's points of series, with its events (the budget
// verdict aside: it is a line of figures, not a moment of the run).
func timeline(r *result.Run, series string) Timeline {
	tl := Timeline{Run: r.Dir}
	for _, p := range r.Points {
		if p.Series == series {
			tl.Points = append(tl.Points, p)
		}
	}
	for _, e := range r.Events {
		if e.Name != boundEvent {
			tl.Events = append(tl.Events, e)
		}
	}
	return tl
}

// runDirs are the run directories (holding a result file) of an
// experiment directory, sorted.
func runDirs(exp string) ([]string, error) {
	entries, err := os.ReadDir(exp)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(exp, e.Name(), result.FileName)); err == nil {
				out = append(out, filepath.Join(exp, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// server names what answered the run.
func server(h result.Header) string {
	s := strings.TrimSpace(h.Database.Name + " " + h.Database.Version)
	if s == "" {
		s = h.Adapter
	}
	if h.HarnessOnly() {
		s += " (" + result.HarnessOnlyMark + ")"
	}
	return s
}

// standIn reports whether the server that ran is not db: its name does not
// contain the database's ("Apache Cassandra 4.1" is cassandra; "FerretDB"
// is not mongodb), or names a mock of it ("CouchbaseMock" is not
// Couchbase Server).
func standIn(h result.Header, db string) bool {
	if h.HarnessOnly() {
		return true
	}
	name := strings.ToLower(h.Database.Name)
	if name == "" {
		name = strings.ToLower(h.Adapter)
	}
	if strings.Contains(name, "mock") {
		return true
	}
	alias := map[string]string{"postgres": "postgresql", "sqlserver": "sql server"}
	return !strings.Contains(name, db) && (alias[db] == "" || !strings.Contains(name, alias[db]))
}

// base is the part of every measure of run r that its header gives.
func base(r *result.Run, s Step) Measure {
	h := r.Header
	m := Measure{
		Database: s.For, Server: server(h), StandIn: standIn(h, s.For),
		Nodes: 1, Cores: h.Machine.Cores, SD: math.NaN(), Step: s.Name, Dir: r.Dir,
	}
	b := boundOf(r)
	m.Budget, m.Bound = b.Budget, b.Bound
	if h.Cluster != nil {
		if n := len(h.Cluster.Nodes); n > 0 {
			m.Nodes = n
		}
		m.RF, _ = strconv.Atoi(h.Cluster.Options["rf"])
		if h.Cluster.Options["rf"] == "nodes" {
			// The factor followed the node count (cluster option rf:
			// nodes): the adapter's own record, else the count.
			if m.RF, _ = strconv.Atoi(h.Database.Config["rf"]); m.RF == 0 {
				m.RF = m.Nodes
			}
		}
		m.Consistency = h.Cluster.Options["consistency"]
	}
	return m
}

// measures reads what run r measured of the figures the papers publish.
func measures(r *result.Run, s Step) []Measure {
	switch r.Header.Workload {
	case "ingest":
		return ingestMeasures(r, s)
	case "trajectory":
		return trajectoryMeasures(r, s)
	case "wiki":
		return wikiMeasures(r, s)
	case "microblog", "convergence":
		// A convergence run (the microblog study's convergence step)
		// records its figures in the summary as the microblog runs do.
		return microblogMeasures(r, s)
	}
	return nil
}

// ingestThroughput is the sweep's series of per-load means with their
// confidence intervals (job's ingest sweep).
const ingestThroughput = "ingest-throughput"

func ingestMeasures(r *result.Run, s Step) []Measure {
	b := base(r, s)
	var out []Measure
	var maxLoad float64
	for _, p := range r.Points {
		if p.Series != ingestThroughput {
			continue
		}
		m := b
		m.Metric, m.Operation, m.Unit = "throughput", "batch", "records/s"
		m.Load, m.Value, m.Lo, m.Hi, m.N, m.Failed = int64(p.X), p.Y, p.Lo, p.Hi, p.N, p.Failed
		m.How = fmt.Sprintf("mean of the measured runs at %s records per source (series %s)", report.Thousands(p.X), ingestThroughput)
		out = append(out, m)
		if p.Failed == "" && p.N > 0 {
			maxLoad = math.Max(maxLoad, p.X)
			if p.Hi > p.Lo && p.Y > 0 {
				a := m
				a.Metric, a.Unit, a.Value, a.Lo, a.Hi = "ci_amplitude", "%", 100*(p.Hi-p.Y)/p.Y, 0, 0
				a.How = fmt.Sprintf("95 %% CI half-width over the mean at %s records per source", report.Thousands(p.X))
				out = append(out, a)
			}
		}
	}
	if v, ok := number(r.Header.Options["record_bytes"]); ok {
		m := b
		m.Metric, m.Unit, m.Value, m.How = "record_size", "bytes", v, "the run's record_bytes option"
		out = append(out, m)
	}
	if maxLoad > 0 {
		m := b
		m.Metric, m.Operation, m.Unit, m.Value, m.How = "sweep_load", "batch", "records", maxLoad, "the highest load of the sweep with a measured run"
		out = append(out, m)
	}
	return out
}

func trajectoryMeasures(r *result.Run, s Step) []Measure {
	b := base(r, s)
	if r.Summary == nil {
		return nil
	}
	scale, _ := number(r.Header.Options["scale"])
	var out []Measure
	for _, mode := range []string{"sequential", "random"} {
		for _, f := range []struct{ metric, op, key, unit, how string }{
			{"throughput", "write", "_write_records_per_sec", "ops/s", "records written per second"},
			{"latency", "write", "_write_mean_latency_ms", "ms", "mean time of one write request"},
			{"throughput", "distance", "_distance_requests_per_sec", "ops/s", "distance queries per second"},
			{"latency", "distance", "_distance_mean_latency_ms", "ms", "mean time of one distance query"},
		} {
			v, ok := r.Summary.Extra[mode+f.key]
			if !ok {
				continue
			}
			m := b
			m.Metric, m.Operation, m.Unit, m.Access, m.Value = f.metric, f.op, f.unit, mode, v
			m.Load = int64(math.Round(scale * 1e6)) // the scale, kept to order the datasets (assignDatasets)
			m.Size = fmt.Sprintf("scale %g", scale)
			m.How = fmt.Sprintf("%s, %s (summary figure %s)", f.how, mode, mode+f.key)
			recs, req := r.Summary.Extra[mode+"_write_records_per_sec"], r.Summary.Extra[mode+"_write_requests_per_sec"]
			if f.metric == "latency" && f.op == "write" && req > 0 && recs/req > 1.5 {
				m.Caveat = fmt.Sprintf("a write request here carries %.0f records on average, so its latency is a batch's", recs/req)
			}
			out = append(out, m)
		}
	}
	return out
}

// assignDatasets names the paper's dataset each trajectory measure scales
// down: the scenarios scale the paper's three datasets (1×, 2×, 4× the
// first) by one factor, so within a step a scale s is dataset0, 2s
// dataset1 and 4s dataset2. s is the step's scale that names the most of
// its scales (the smallest of those that tie): a step that adds a run at
// another size (a common size every database runs, say 0.001 beside 0.01,
// 0.02, 0.04) leaves that run unnamed rather than the three others. A
// measure whose scale is no such multiple keeps its size ("scale 0.001")
// and no dataset name.
func assignDatasets(ms []Measure) {
	scales := map[string][]int64{}
	for _, m := range ms {
		if m.Access != "" && m.Load > 0 && !slices.Contains(scales[m.Step], m.Load) {
			scales[m.Step] = append(scales[m.Step], m.Load)
		}
	}
	multiple := func(load, base int64) (int, bool) {
		k := math.Log2(float64(load) / float64(base))
		return int(math.Round(k)), math.Abs(k-math.Round(k)) < 1e-6 && math.Round(k) >= 0 && k <= 2
	}
	bases := map[string]int64{}
	for step, ls := range scales {
		slices.Sort(ls)
		best := 0
		for _, b := range ls {
			n := 0
			for _, l := range ls {
				if _, ok := multiple(l, b); ok {
					n++
				}
			}
			if n > best {
				best, bases[step] = n, b
			}
		}
	}
	for i, m := range ms {
		b, ok := bases[m.Step]
		if m.Access == "" || !ok {
			continue
		}
		if k, ok := multiple(m.Load, b); ok {
			ms[i].Dataset = fmt.Sprintf("dataset%d", k)
			ms[i].DatasetNote = fmt.Sprintf("%s at %g %% of the paper's dataset0 records", ms[i].Dataset, float64(m.Load)/1e4)
		}
		ms[i].Load = 0
	}
}

func wikiMeasures(r *result.Run, s Step) []Measure {
	b := base(r, s)
	if v, ok := number(r.Header.Options["requests"]); ok {
		b.Requests = int(v)
	}
	if v, ok := number(r.Header.Options["articles"]); ok {
		b.Size = report.Thousands(v) + " articles"
	}
	sc, err := score.FromRun(r)
	if err != nil {
		return nil
	}
	var out []Measure
	add := func(m Measure) {
		if !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) {
			out = append(out, m)
		}
	}
	for _, j := range sc.Elasticity {
		m := b
		m.Nodes, _ = strconv.Atoi(j.NodesBefore)
		m.NodesAfter, _ = strconv.Atoi(j.NodesAfter)
		if !j.Stable {
			m.Metric, m.Unit, m.Value, m.Failed = "elasticity_score", "score", math.NaN(), "no stable window found after the join"
			out = append(out, m)
			continue
		}
		for _, f := range []struct {
			metric, unit string
			v            float64
			how          string
		}{
			{"elasticity_score", "score", j.Score, "score recomputed from the result file (detector " + j.Detector + ")"},
			{"data_transfer_time", "s", j.DataTransfer, "data settled − join"},
			{"additional_time", "s", j.Additional, "stable − data settled"},
			{"stabilization_time", "s", j.Total, "stable − join"},
		} {
			m.Metric, m.Unit, m.Value, m.How = f.metric, f.unit, f.v, f.how
			add(m)
		}
	}
	for _, st := range sc.Steps {
		m := b
		m.Nodes, _ = strconv.Atoi(st.Nodes)
		m.Metric, m.Unit, m.Value, m.SD, m.N = "request_set_time", "s", st.Avg, st.SD, st.N
		m.How = fmt.Sprintf("mean of %d request sets", st.N)
		if st.Label != "" {
			m.How += " of step " + st.Label
		}
		add(m)
	}
	for _, t := range sc.Scalability {
		m := b
		m.Nodes, _ = strconv.Atoi(t.From.Nodes)
		m.NodesAfter, _ = strconv.Atoi(t.To.Nodes)
		m.Metric, m.Unit, m.Value, m.How = "scalability_score", "score", t.Score, "from the two steps' mean request-set times"
		add(m)
	}
	return out
}

// acrossRuns scores the transitions between consecutive runs of one
// stepped wiki scenario (scalability: a run per node count, 1 → 2 → 4),
// which no single run's scores hold: the last step of each run against
// the first of the next. bases are the base measures of those runs: a
// score rests on both runs, so it is machine-bound when either is, and
// without a budget when either had none.
func acrossRuns(bases []Measure, runs [][]score.Step) []Measure {
	var out []Measure
	for i := 1; i < len(runs); i++ {
		from, to := runs[i-1][len(runs[i-1])-1], runs[i][0]
		m := bases[i]
		m.Bound = worseBound(bases[i-1].Bound, bases[i].Bound)
		m.Nodes, _ = strconv.Atoi(from.Nodes)
		m.NodesAfter, _ = strconv.Atoi(to.Nodes)
		m.Metric, m.Unit, m.Value = "scalability_score", "score", score.Scalability(from.Avg, to.Avg)
		m.How = fmt.Sprintf("from the mean request-set times of consecutive runs (%s → %s nodes)", from.Nodes, to.Nodes)
		if !math.IsNaN(m.Value) && !math.IsInf(m.Value, 0) && m.Nodes > 0 && m.NodesAfter > 0 {
			out = append(out, m)
		}
	}
	return out
}

func microblogMeasures(r *result.Run, s Step) []Measure {
	b := base(r, s)
	if r.Summary == nil {
		return nil
	}
	if r.Header.Options["model"] == "normalized" && r.Header.Options["timeline_reads"] != "separate" {
		// The paper's normalized lines made up to 50 reads of their own
		// (--timeline-reads separate); the default is one multi-key
		// request, and a SQL adapter joins.
		b.Caveat = "the normalized lines' bodies were fetched in one request (IN, $in or a join), the paper's with up to 50 separate reads"
	}
	x := r.Summary.Extra
	var out []Measure
	one := func(metric, unit string, v float64, how string) Measure {
		m := b
		m.Metric, m.Unit, m.Value, m.How = metric, unit, v, how
		return m
	}
	if v, ok := x["cluster_formation_seconds"]; ok {
		out = append(out, one("cluster_formation_time", "s", v, "cluster started until every node was up"))
	}
	if v, ok := x["populate_seconds"]; ok {
		out = append(out, one("populate_time", "s", v, "populate of the dataset"))
	}
	if v, ok := x["convergence_mean_ms"]; ok {
		m := one("convergence_time", "s", v/1000, "mean time until a write was visible on every node")
		if sd, ok := x["convergence_sd_ms"]; ok {
			m.SD = sd / 1000
		}
		out = append(out, m)
	}
	crashed, joinAt, joinedAt, settledAt, added := false, -1.0, -1.0, -1.0, 0
	for _, e := range r.Events {
		switch e.Name {
		case "kill":
			crashed = true
		case "join":
			joinAt = e.At
		case "node-added":
			added++
		case "joined":
			joinedAt = e.At
		case "data-settled":
			settledAt = e.At
		}
	}
	if v, ok := x["ownership_mean_pct"]; ok {
		// Read at the run's end: after a join, of every node.
		m := one("ownership", "%", v, "mean token ownership per node as the database reports it, at the run's end")
		m.Nodes += added
		if sd, ok := x["ownership_sd_pct"]; ok {
			m.SD = sd
		}
		out = append(out, m)
	}
	if joinAt >= 0 && added > 0 && (joinedAt >= 0 || settledAt >= 0) {
		end, how := settledAt, "from the join's start until the data settled (every added node joined, no data moving)"
		if end < joinedAt {
			end, how = joinedAt, "from the join's start until every added node had joined (no data-settled event)"
		}
		m := one("join_time", "s", end-joinAt, how)
		m.NodesAfter = m.Nodes + added
		out = append(out, m)
	}
	if !crashed && joinAt < 0 {
		out = append(out, steadyMeasures(r, b)...)
	}
	if crashed {
		var n int64
		for _, op := range r.Summary.Ops {
			for _, c := range op.Errors {
				n += c
			}
		}
		m := one("errors", "count", float64(n), "failed operations of every kind over the run (no retry)")
		if x["audit_acknowledged"] > 0 {
			m.How += fmt.Sprintf("; audit: %s acknowledged posts, %s lost", report.Thousands(x["audit_acknowledged"]), report.Thousands(x["audit_lost"]))
		}
		out = append(out, m)
	}
	return out
}

// steadyMeasures are what a microblog run without a crash or a join
// measured of its steady state: each operation's mean latency, with the
// SD of its one-second means over the measured seconds (N of them: the
// verdicts' interval; seconds of one run are not independent samples, so
// the interval is the run's own spread, an interpretation stated in
// docs/studies.md), and, on budgets, the nodes' idle share of their
// budgets (100 % less the CPU they used of it, averaged over the nodes'
// samples; the paper's idle CPU of each node's own machine).
func steadyMeasures(r *result.Run, b Measure) []Measure {
	var out []Measure
	for _, op := range slices.Sorted(maps.Keys(r.Summary.Ops)) {
		o := r.Summary.Ops[op]
		if o.Count == 0 {
			var failed int64
			for _, n := range o.Errors {
				failed += n
			}
			if failed > 0 {
				m := b
				m.Metric, m.Operation, m.Unit, m.Value = "latency", op, "ms", math.NaN()
				m.Failed = fmt.Sprintf("every %s failed (%s errors, none succeeded)", op, report.Thousands(float64(failed)))
				out = append(out, m)
			}
			continue
		}
		var means []float64
		for _, iv := range r.Intervals {
			if iv.Warmup || iv.Drain {
				continue
			}
			h, err := result.DecodeHist(iv.Ops[op].Hist)
			if err != nil || h.TotalCount() == 0 {
				continue
			}
			means = append(means, h.Mean()/1000)
		}
		m := b
		m.Metric, m.Operation, m.Unit, m.Value = "latency", op, "ms", o.MeanUS/1000
		m.How = fmt.Sprintf("mean time of one %s over the measured run (%s operations)", op, report.Thousands(float64(o.Count)))
		if len(means) >= 2 {
			m.SD, m.N = stats.SD(means), len(means)
			m.How += fmt.Sprintf("; SD of its %d one-second means", len(means))
		}
		out = append(out, m)
		out = append(out, groupMeasures(r, b, op)...)
	}
	var idle []float64
	for _, p := range r.Points {
		if p.Series == "node-budget-cpu" && !math.IsNaN(p.Y) {
			idle = append(idle, math.Max(0, 100-p.Y))
		}
	}
	if len(idle) > 0 {
		m := b
		m.Metric, m.Unit, m.Value = "cpu_idle", "%", stats.Mean(idle)
		m.How = fmt.Sprintf("the nodes' idle share of their CPU budgets (100 %% less the CPU used of it), mean of %d node samples", len(idle))
		if len(idle) >= 2 {
			m.SD, m.N = stats.SD(idle), len(idle)
		}
		out = append(out, m)
	}
	return out
}

// number reads a numeric option as decoded from JSON or YAML.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
