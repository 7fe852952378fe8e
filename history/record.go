// Package history keeps every run in a results database and reads it
// back as series, trends and change points. A run is recorded from its
// result file alone (result.Read): its identity and header, each
// operation's summary and its merged HDR histogram, so any percentile can
// be recomputed later. The database is an embedded SQLite file by default
// or a team's PostgreSQL (store.go); runs are grouped into series of runs
// that may be compared (series.go); change points are found with
// e-divisive means as Apache Otava computes them (edivisive.go). The
// rules are written down in docs/history.md.
package history

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/stats"
)

// Run is one run as the history holds it.
type Run struct {
	// ID is the run's identity: a hash of its (redacted) header, which
	// holds its start time to the nanosecond, its host and everything
	// else it was run with. The same result file, wherever it is copied,
	// has the same ID; adding it twice records it once.
	ID string
	// Series is the ID of the series the run belongs to (series.go).
	Series string
	// Started is when the run started.
	Started time.Time
	// Workload, Adapter, Model and Mix are what it ran; Server and
	// ServerVersion the database that really answered (adapter.Info: the
	// mongodb adapter on FerretDB says FerretDB).
	Workload, Adapter, Server, ServerVersion, Model, Mix string
	// Machine is the class of machine (CPU model, cores, memory): part
	// of the series. Host and Kernel are the machine itself, shown when
	// they change inside a series.
	Machine, Host, Kernel string
	// Version is fieldbench's version; Commit what the user gave with
	// --commit ("" when none).
	Version, Commit string
	// Dir is where the result file was read from when it was added.
	Dir string
	// Duration is the measured time (s); Interrupted a run stopped by
	// Ctrl-C (its summary covers what it measured).
	Duration    float64
	Interrupted bool
	// Header is the run's header, every string in it redacted (JSON).
	Header json.RawMessage
	// Ops are the operations' figures, by name order.
	Ops []Op
}

// Op is one operation's whole-run figures and how uncertain they are.
type Op struct {
	Name string
	// Count is the successful operations, Errors the failed ones (by
	// kind in ErrorKinds, redacted).
	Count, Errors int64
	ErrorKinds    map[string]int64
	// Rate is operations a second; latencies in µs.
	Rate, Mean               float64
	P50, P90, P99, P999, Max int64
	// Seconds is how many measured one-second intervals the run has for
	// it; Intervals each figure's 95 % interval from them (see
	// Interval), for the figures that have one.
	Seconds   int
	Intervals map[string][2]float64
	// Hist is the merged HDR histogram of the measured intervals (the
	// HdrHistogram V2 compressed encoding, not base64): nil unless asked
	// for (Store.Histogram).
	Hist []byte
}

// Figures are the figures a trend or a change point is about, in table
// order: throughput (operations a second), the latencies (µs) and errors
// (the share of attempted operations that failed, in %).
var Figures = []string{"throughput", "mean", "p50", "p90", "p99", "p99.9", "max", "errors"}

// TrendFigures are the figures `history trend` and `history changes`
// show unless told otherwise.
var TrendFigures = []string{"throughput", "p50", "p99", "p99.9", "errors"}

// KnownFigure reports whether name is one of Figures.
func KnownFigure(name string) bool {
	for _, f := range Figures {
		if f == name {
			return true
		}
	}
	return false
}

// HigherIsBetter is the good direction of a figure: throughput up;
// latencies and errors down.
func HigherIsBetter(figure string) bool { return compare.HigherIsBetter(figure) }

// Figure is the operation's figure by name; NaN for an unknown one, and
// for a latency when no operation succeeded (there is none to measure).
func (o Op) Figure(name string) float64 {
	switch name {
	case "throughput":
		return o.Rate
	case "errors":
		if o.Count+o.Errors == 0 {
			return math.NaN()
		}
		return 100 * float64(o.Errors) / float64(o.Count+o.Errors)
	}
	if o.Count == 0 {
		return math.NaN()
	}
	switch name {
	case "mean":
		return o.Mean
	case "p50":
		return float64(o.P50)
	case "p90":
		return float64(o.P90)
	case "p99":
		return float64(o.P99)
	case "p99.9":
		return float64(o.P999)
	case "max":
		return float64(o.Max)
	}
	return math.NaN()
}

// Interval is the figure's 95 % interval from the run's per-second
// series (NaN, NaN when it has none: under compare.MinSeconds measured
// seconds, or a figure without one).
func (o Op) Interval(figure string) (lo, hi float64) {
	if iv, ok := o.Intervals[figure]; ok {
		return iv[0], iv[1]
	}
	return math.NaN(), math.NaN()
}

// Op returns the run's operation by name.
func (r Run) Op(name string) (Op, bool) {
	for _, o := range r.Ops {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// Why a result file is not recorded: each is a reason given beside the
// file's name, never a failure of the other files.
var (
	// ErrShard is one shard of a sharded run: alone it is part of the
	// run, and its merged result (fieldbench merge) is what is recorded.
	ErrShard = errors.New("a shard of a sharded run: merge the shards (fieldbench merge) and add the merged result")
	// ErrNoSummary is a run that did not finish (killed): its figures
	// would be a part of the run looking whole.
	ErrNoSummary = errors.New("no summary: the run did not finish (killed?), so its figures would be partial")
)

// intervalLevel is the confidence level of a run's figure intervals.
const intervalLevel = 0.95

// FromRun makes the record of a result file read back: its redacted
// header and identity, its series, and each operation's summary (the
// file's own, as the run printed it), merged histogram and intervals.
// commit is the user's commit reference ("" when none).
func FromRun(r *result.Run, commit string) (Run, error) {
	if _, ok := r.Header.Options["shard"]; ok {
		return Run{}, ErrShard
	}
	if r.Summary == nil {
		return Run{}, ErrNoSummary
	}
	hdr, err := redactedHeader(r.Header)
	if err != nil {
		return Run{}, err
	}
	sum := sha256.Sum256(hdr)
	// Everything below is read from the redacted header, as the store
	// reads it back.
	var h result.Header
	if err := json.Unmarshal(hdr, &h); err != nil {
		return Run{}, fmt.Errorf("decode header: %w", err)
	}
	key := seriesKeyOf(h)
	run := Run{
		ID: hex.EncodeToString(sum[:16]), Series: key.id(), Started: h.Started,
		Workload: h.Workload, Adapter: h.Adapter, Server: h.Database.Name, ServerVersion: h.Database.Version,
		Model: optionText(h, "model"), Mix: optionText(h, "mix"),
		Machine: machineClass(h.Machine), Host: h.Machine.Hostname, Kernel: h.Machine.Kernel,
		Version: h.Version, Commit: redact.Text(commit), Dir: absDir(r.Dir),
		Duration: r.Summary.DurationSeconds, Interrupted: r.Summary.Interrupted, Header: hdr,
	}
	merged, err := r.Merged(true)
	if err != nil {
		return Run{}, err
	}
	perSecond, err := secondsOf(r)
	if err != nil {
		return Run{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(r.Summary.Ops)) {
		s := r.Summary.Ops[name]
		o := Op{Name: name, Count: s.Count, Rate: s.OpsPerSec, Mean: s.MeanUS, P50: s.P50US, P90: s.P90US, P99: s.P99US, P999: s.P999US, Max: s.MaxUS}
		for k, n := range s.Errors {
			if o.ErrorKinds == nil {
				o.ErrorKinds = map[string]int64{}
			}
			o.ErrorKinds[redact.Text(k)] += n
			o.Errors += n
		}
		if hist := merged[name]; hist != nil {
			if o.Hist, err = encodeHist(hist); err != nil {
				return Run{}, fmt.Errorf("%s: %w", name, err)
			}
		}
		o.Seconds, o.Intervals = intervals(o, perSecond[name])
		run.Ops = append(run.Ops, o)
	}
	return run, nil
}

// absDir is dir made absolute (dir itself when it cannot be).
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil && dir != "" {
		return abs
	}
	return dir
}

// encodeHist is the histogram's V2 compressed encoding as bytes: what
// EncodeHist writes, without its base64 (a third smaller in the database).
func encodeHist(h *hdrhistogram.Histogram) ([]byte, error) {
	enc, err := result.EncodeHist(h)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(enc)
}

// DecodeHist decodes a histogram the history stored (Op.Hist).
func DecodeHist(b []byte) (*hdrhistogram.Histogram, error) {
	return result.DecodeHist(base64.StdEncoding.EncodeToString(b))
}

// redactedHeader is the header as JSON with every string in it redacted:
// the DSN by redact.DSN, every other string (options, cluster
// settings, server configuration) as free text. A result file written by
// fieldbench is already redacted; one written by hand or by an old
// version may not be, and the history holds nothing it did not check.
func redactedHeader(h result.Header) (json.RawMessage, error) {
	h.DSN = redact.DSN(h.DSN)
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	return json.Marshal(redactStrings(v))
}

// redactStrings redacts every string of a decoded JSON value, map keys
// included.
func redactStrings(v any) any {
	switch v := v.(type) {
	case string:
		return redact.Text(v)
	case []any:
		for i := range v {
			v[i] = redactStrings(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[redact.Text(k)] = redactStrings(e)
		}
		return out
	}
	return v
}

// optionText is a header option as text ("" when absent).
func optionText(h result.Header, k string) string {
	v, ok := h.Options[k]
	if !ok || v == nil {
		return ""
	}
	return redact.Text(fmt.Sprint(v))
}

// machineClass names the kind of machine a run was measured on: what
// must be equal for its figures to compare (CPU model, cores, memory to
// the GiB), not which host it was.
func machineClass(m result.Machine) string {
	gib := math.Round(float64(m.MemoryBytes) / (1 << 30))
	s := fmt.Sprintf("%s, %d cores, %.0f GiB", strings.TrimSpace(m.CPUModel), m.Cores, gib)
	if m.LoadHost != nil {
		s += ", on a load host"
	}
	return s
}

// perSecond are one operation's per-second figures over a run's measured
// seconds.
type perSecond struct {
	throughput, mean, p50, p90, p99, p999 []float64
}

// secondsOf reads each operation's per-second figures from the measured
// intervals: warm-up, drain and short last intervals (under half a
// second) left out, as compare does; latencies only for seconds with a
// completed operation.
func secondsOf(r *result.Run) (map[string]*perSecond, error) {
	ops := map[string]bool{}
	for _, iv := range r.Intervals {
		for op := range iv.Ops {
			ops[op] = true
		}
	}
	out := map[string]*perSecond{}
	for op := range ops {
		out[op] = &perSecond{}
	}
	for _, iv := range r.Intervals {
		d := iv.End - iv.Start
		if iv.Warmup || iv.Drain || d < 0.5 {
			continue
		}
		for op, ps := range out {
			oi := iv.Ops[op]
			ps.throughput = append(ps.throughput, float64(oi.Count)/d)
			if oi.Count == 0 {
				continue
			}
			h, err := result.DecodeHist(oi.Hist)
			if err != nil {
				return nil, fmt.Errorf("interval at %.0fs, %s: %w", iv.Start, op, err)
			}
			ps.mean = append(ps.mean, h.Mean())
			ps.p50 = append(ps.p50, float64(h.ValueAtQuantile(50)))
			ps.p90 = append(ps.p90, float64(h.ValueAtQuantile(90)))
			ps.p99 = append(ps.p99, float64(h.ValueAtQuantile(99)))
			ps.p999 = append(ps.p999, float64(h.ValueAtQuantile(99.9)))
		}
	}
	return out, nil
}

// intervals are the operation's figures' 95 % intervals from its
// per-second series, each centred on the whole-run figure: the run's
// own noise, as a band to read a trend against. On the log scale, as
// compare tests a change: the standard error of the mean of the
// per-second figure's logarithm (of its mean for throughput, relative),
// its sample size corrected for lag-1 autocorrelation
// (compare.EffectiveN), times Student's t; the whole-run figure times
// exp(∓ that). Under compare.MinSeconds seconds there is none (the
// autocorrelation is a guess there).
func intervals(o Op, ps *perSecond) (int, map[string][2]float64) {
	if ps == nil {
		return 0, nil
	}
	out := map[string][2]float64{}
	add := func(fig string, xs []float64, logs bool) {
		whole := o.Figure(fig)
		if len(xs) < compare.MinSeconds || !(whole > 0) {
			return
		}
		var se, eff float64
		if logs {
			l := make([]float64, len(xs))
			for i, x := range xs {
				l[i] = math.Log(math.Max(x, 1))
			}
			eff = compare.EffectiveN(l)
			se = stats.SD(l) / math.Sqrt(eff)
		} else {
			m := stats.Mean(xs)
			if !(m > 0) {
				return
			}
			eff = compare.EffectiveN(xs)
			se = stats.SD(xs) / m / math.Sqrt(eff)
		}
		half := stats.TQuantile(0.5+intervalLevel/2, eff-1) * se
		if math.IsNaN(half) || math.IsInf(half, 0) {
			return
		}
		out[fig] = [2]float64{whole * math.Exp(-half), whole * math.Exp(half)}
	}
	add("throughput", ps.throughput, false)
	add("mean", ps.mean, true)
	add("p50", ps.p50, true)
	add("p90", ps.p90, true)
	add("p99", ps.p99, true)
	add("p99.9", ps.p999, true)
	if len(out) == 0 {
		out = nil
	}
	return len(ps.throughput), out
}
