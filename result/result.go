// Package result defines the self-describing result file every run writes
// and reads it back. The file is JSON Lines: a header, then one line per
// one-second interval and per event as they happen, then a summary. Each
// line is written with a single write(2) so a run killed with SIGKILL keeps
// every line up to its last completed second; a report is made from the
// intervals alone, so a missing summary loses nothing.
package result

import (
	"fmt"
	"math"
	"time"
)

// FileName is the result file's name inside a run directory.
const FileName = "result.jsonl"

// Database describes the database server a run measured, as its adapter
// reports it (adapter.Info is this type: the result file defines what it
// holds, and result needs nothing of the adapters).
type Database struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Config  map[string]string `json:"config,omitempty"`
}

// Header describes the run: everything needed to reproduce and interpret it.
type Header struct {
	Version  string         `json:"fieldbench_version"`
	Workload string         `json:"workload"`
	Adapter  string         `json:"adapter"`
	DSN      string         `json:"dsn"` // redacted
	Database Database       `json:"database"`
	Options  map[string]any `json:"options"`
	Seed     int64          `json:"seed"`
	Machine  Machine        `json:"machine"`
	Started  time.Time      `json:"started"`
	// Operations in display order.
	Operations []string `json:"operations"`
	// Groups names the secondary grouping of an operation's latency, e.g.
	// {"post": "author followers"}; group keys are labels such as "8-15".
	Groups map[string]string `json:"groups,omitempty"`
	// Warmup is excluded from the summary and drawn shaded in reports.
	WarmupSeconds float64 `json:"warmup_seconds"`
	// Cluster describes the servers fieldbench started for this run
	// (run --cluster), so the result says what it was measured on.
	Cluster *ClusterInfo `json:"cluster,omitempty"`
	// LoadBudget is the budget the load generator (this process, or the
	// child on a load host) was held to (--load-budget), as Parse reads
	// it: "cpu=0.5,memory=512MiB"; "" none.
	LoadBudget string `json:"load_budget,omitempty"`
	// Series describes each Point series the run writes (see Point).
	Series map[string]SeriesMeta `json:"series,omitempty"`
}

// ClusterInfo is the cluster a run was measured on.
type ClusterInfo struct {
	Engine  string            `json:"engine"`
	Version string            `json:"version,omitempty"`
	Dir     string            `json:"dir"` // data, configuration and server logs
	Nodes   []ClusterNode     `json:"nodes"`
	Options map[string]string `json:"options,omitempty"` // server settings recorded by the engine

	// Database is what an external cluster (Engine "external") runs;
	// Version is then what the database itself answered to a version
	// query.
	Database string `json:"database,omitempty"`

	// Budget is the nodes' size (cluster up --budget), as the cluster
	// says it: "cpu=0.2,memory=1.0GiB each (redis2: cpu=0.5)"; "" none.
	Budget string `json:"budget,omitempty"`
}

// ClusterNode is one server of a ClusterInfo.
type ClusterNode struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	Role string `json:"role,omitempty"`
	Log  string `json:"log,omitempty"`
	// Budget is the node's own size ("" none): its control group held
	// its processes to it.
	Budget string `json:"budget,omitempty"`
}

// SeriesMeta says how to draw a Point series: one chart per series.
type SeriesMeta struct {
	Title  string `json:"title"`
	XLabel string `json:"x_label"` // with unit, e.g. "elapsed (s)"
	YLabel string `json:"y_label"` // with unit, e.g. "request-set time (s)"
	// XIsTime says X is seconds since Header.Started: the chart is a time
	// chart (events and warm-up drawn on it).
	XIsTime bool `json:"x_is_time,omitempty"`
	// Band: "sd" draws Y ± SD as a band (time series) or error bars;
	// "ci" draws [Lo, Hi] as error bars; "" draws points only.
	Band string `json:"band,omitempty"`
	// LogY draws the y axis on a log scale.
	LogY bool `json:"log_y,omitempty"`
}

// Point is one measurement that is not a per-second interval: a request
// set's time, one ingest run's throughput, a sweep point's mean with its
// confidence interval. Points of several runs with the same Series are drawn
// on one chart, one line per run.
type Point struct {
	Series string  `json:"series"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	SD     float64 `json:"sd,omitempty"`
	Lo     float64 `json:"lo,omitempty"`
	Hi     float64 `json:"hi,omitempty"`
	N      int     `json:"n,omitempty"` // samples behind Y
	Warmup bool    `json:"warmup,omitempty"`
	// Failed is the cause when this measurement failed (Y is then not a
	// figure); a failure is a result and is drawn as a marker.
	Failed string `json:"failed,omitempty"`
	// Labels carry anything else worth keeping (run index, phase...).
	Labels map[string]string `json:"labels,omitempty"`
}

// Machine is the host the run was measured on.
type Machine struct {
	CPUModel    string `json:"cpu_model"`
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memory_bytes"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel"`
	GoVersion   string `json:"go_version"`
	Hostname    string `json:"hostname"`
	// LoadHost is the load host of a virtual network the run's process
	// ran on (run --load-host): its own network namespace and address on
	// the cluster's network. Nil when it ran in the machine's namespace.
	LoadHost *LoadHost `json:"load_host,omitempty"`
}

// LoadHost is a host of fieldbench's virtual network a process ran on.
type LoadHost struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	Netns string `json:"netns"`
}

// OpInterval is one operation's figures for one interval. Hist is an
// HdrHistogram in the standard V2 compressed base64 encoding, values in
// microseconds.
type OpInterval struct {
	// Count is the number of successful operations (= the histogram's total);
	// failed ones are only in Errors.
	Count  int64            `json:"count"`
	Errors map[string]int64 `json:"errors,omitempty"` // by kind
	Hist   string           `json:"hist,omitempty"`
}

// Interval is one second (or the last partial second) of a run.
type Interval struct {
	Start  float64 `json:"start"` // seconds since Header.Started
	End    float64 `json:"end"`
	Warmup bool    `json:"warmup,omitempty"`
	// Drain marks time after the clients stopped (e.g. the async
	// materializer catching up): its latencies count, but it adds nothing
	// to the measured duration, so throughput is not diluted.
	Drain bool                  `json:"drain,omitempty"`
	Ops   map[string]OpInterval `json:"ops"`
	// Groups: operation -> group label -> encoded histogram.
	Groups map[string]map[string]string `json:"groups,omitempty"`
	// Lateness (open loop only) is how late the interval's operations
	// started against their intended start, every operation in one
	// histogram (µs, encoded as Hist). It is the load generator's own
	// error: each latency measured from the intended start contains it.
	Lateness string `json:"lateness,omitempty"`
}

// Event is something that happened at a moment of the run (load finished,
// node killed, interrupted...). Reports draw events on every time chart.
type Event struct {
	At     float64 `json:"at"` // seconds since Header.Started
	Name   string  `json:"name"`
	Detail string  `json:"detail,omitempty"`
}

// OpSummary is the whole-run (post-warm-up) figure for one operation.
type OpSummary struct {
	Count     int64            `json:"count"`
	Errors    map[string]int64 `json:"errors,omitempty"`
	OpsPerSec float64          `json:"ops_per_sec"`
	MeanUS    float64          `json:"mean_us"`
	P50US     int64            `json:"p50_us"`
	P90US     int64            `json:"p90_us"`
	P99US     int64            `json:"p99_us"`
	P999US    int64            `json:"p999_us"`
	MaxUS     int64            `json:"max_us"`
}

// Summary closes a run.
type Summary struct {
	DurationSeconds float64              `json:"duration_seconds"` // measured (post-warm-up) time
	Interrupted     bool                 `json:"interrupted,omitempty"`
	Ops             map[string]OpSummary `json:"ops"`
	// Extra holds workload-specific figures (populate time, database size,
	// materializer lag...), flat so the report can tabulate them.
	Extra map[string]float64 `json:"extra,omitempty"`
	// Client is what the fieldbench process itself used (absent in files
	// written before it was recorded).
	Client *ClientCost `json:"client,omitempty"`
	// Schedule is how late open-loop operations started (absent in closed
	// loop and in files written before it was recorded).
	Schedule *Lateness `json:"schedule,omitempty"`
}

// BusyShare is the share of the CPU it may use above which a client is
// measuring itself rather than the database: past it, its own scheduling
// delays show up as latency. Load generators are commonly kept below it.
const BusyShare = 0.8

// ClientCost is the cost of the client (the fieldbench process) over a run,
// read from the process itself (getrusage, the Go runtime), not estimated.
type ClientCost struct {
	CPUUserSeconds float64 `json:"cpu_user_seconds"`
	CPUSysSeconds  float64 `json:"cpu_sys_seconds"`
	// WallSeconds is the time the CPU seconds were taken over.
	WallSeconds float64 `json:"wall_seconds"`
	// CPUs is how many CPUs the process may use (GOMAXPROCS, which follows
	// the CPU affinity and cgroup limits).
	CPUs int `json:"cpus"`
	// MaxRSSBytes is the process's peak resident set size.
	MaxRSSBytes    int64 `json:"max_rss_bytes"`
	PeakGoroutines int   `json:"peak_goroutines"`
	// Clients is how many clients (workers, threads, sources) the run drove.
	Clients int `json:"clients,omitempty"`
	// Busy: the client used more than BusyShare of the CPU it may use.
	Busy bool `json:"busy,omitempty"`
	// Connections is how many database connections served the Clients
	// (absent when the adapter does not report its pools).
	Connections *Connections `json:"connections,omitempty"`
}

// Connections is what the adapter's connection pools did over a run, read
// from the driver's own pool statistics: clients share pooled connections,
// and a client's wait for one is part of its latency.
type Connections struct {
	// PeakOpen is the most connections open at once (sampled every
	// second and at the end).
	PeakOpen int `json:"peak_open"`
	// Max is the pools' capacity (0: unbounded, or the driver does not
	// say).
	Max int `json:"max,omitempty"`
	// Waits is how many times a client found no free connection and waited
	// for one during the run; WaitSeconds is their total wait.
	Waits       int64   `json:"waits"`
	WaitSeconds float64 `json:"wait_seconds"`
}

// CPUShare is the client's CPU seconds over the CPU seconds it could have
// used (wall time × CPUs); 0 when unknown.
func (c ClientCost) CPUShare() float64 {
	if c.WallSeconds <= 0 || c.CPUs <= 0 {
		return 0
	}
	return (c.CPUUserSeconds + c.CPUSysSeconds) / (c.WallSeconds * float64(c.CPUs))
}

// Warning is the line to print when the client was busy ("" otherwise).
func (c ClientCost) Warning() string {
	if !c.Busy {
		return ""
	}
	return fmt.Sprintf("warning: the client itself used %.0f %% of its %d CPU(s) (over %.0f %%): it may be measuring its own limits rather than the database's; use fewer clients per process or more CPUs",
		100*c.CPUShare(), c.CPUs, 100*BusyShare)
}

// HarnessOnlyAdapter is the adapter that answers without a database (see
// adapter/null): its results measure fieldbench alone.
const HarnessOnlyAdapter = "null"

// HarnessOnlyMark is how results and reports made on it are marked.
const HarnessOnlyMark = "harness only — no database"

// Clients is how many clients the run's options say it drove (the
// "clients", "threads" or "sources" option, whichever the workload has);
// 0 when none is recorded.
func (h Header) Clients() int {
	for _, k := range []string{"clients", "threads", "sources"} {
		switch v := h.Options[k].(type) {
		case int:
			return v
		case int64:
			return int(v)
		case float64: // read back from JSON
			return int(v)
		}
	}
	return 0
}

// HarnessOnly reports whether the run measured fieldbench alone.
func (h Header) HarnessOnly() bool { return h.Adapter == HarnessOnlyAdapter }

// Line is one line of the file; exactly one field besides Kind is set.
type Line struct {
	Kind     string    `json:"kind"` // header | interval | event | point | summary
	Header   *Header   `json:"header,omitempty"`
	Interval *Interval `json:"interval,omitempty"`
	Event    *Event    `json:"event,omitempty"`
	Point    *Point    `json:"point,omitempty"`
	Summary  *Summary  `json:"summary,omitempty"`
}

// Figure is one of an operation's whole-run figures by name: "throughput"
// (operations a second), or a latency in µs: "mean", "p50", "p90", "p99",
// "p99.9", "max". NaN for an unknown name.
func (o OpSummary) Figure(name string) float64 {
	switch name {
	case "throughput":
		return o.OpsPerSec
	case "mean":
		return o.MeanUS
	case "p50":
		return float64(o.P50US)
	case "p90":
		return float64(o.P90US)
	case "p99":
		return float64(o.P99US)
	case "p99.9":
		return float64(o.P999US)
	case "max":
		return float64(o.MaxUS)
	}
	return math.NaN()
}
