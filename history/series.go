package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// A series is the runs whose figures may be set in one line: everything
// that decides what was measured is equal. That is
//
//   - the workload, its data model and operation mix,
//   - the adapter and the server that answered (its name: PostgreSQL,
//     FerretDB…),
//   - every option of the run that changes the work (clients, rate,
//     loop, dataset size, seed, batch, consistency…; the experiment and
//     its step), all options but those in notWork,
//   - the cluster fieldbench started (engine, node count, its settings),
//   - the class of machine: CPU model, cores, memory to the GiB, and
//     whether the load ran on a load host.
//
// What may change inside a series, and is shown where it does (Marks),
// never silently mixed: the server's version (a new release is what a
// history is for), fieldbench's version, the host (another machine of
// the same class) and its kernel, the commit. docs/history.md says so.

// notWork are the options that do not change what a second of the run
// does, only how long it is measured: runs differing in them stay in one
// series. shard bookkeeping never reaches here (a shard is not recorded;
// a merged run has shards=N, which is work: the clients came from N
// processes).
var notWork = map[string]bool{"duration": true, "sets": true}

// seriesKey is what must be equal for runs to be in one series.
type seriesKey struct {
	Workload string         `json:"workload"`
	Model    string         `json:"model,omitempty"`
	Mix      string         `json:"mix,omitempty"`
	Adapter  string         `json:"adapter"`
	Server   string         `json:"server"`
	Options  map[string]any `json:"options,omitempty"`
	Cluster  *clusterKey    `json:"cluster,omitempty"`
	Machine  string         `json:"machine"`
}

// clusterKey is the part of a cluster that makes the work: not its
// directory, addresses or logs.
type clusterKey struct {
	Engine   string            `json:"engine"`
	Database string            `json:"database,omitempty"`
	Nodes    int               `json:"nodes"`
	Options  map[string]string `json:"options,omitempty"`
}

func seriesKeyOf(h result.Header) seriesKey {
	k := seriesKey{Workload: h.Workload, Model: optionText(h, "model"), Mix: optionText(h, "mix"),
		Adapter: h.Adapter, Server: h.Database.Name, Machine: machineClass(h.Machine)}
	for name, v := range h.Options {
		if notWork[name] || name == "model" || name == "mix" {
			continue
		}
		if k.Options == nil {
			k.Options = map[string]any{}
		}
		k.Options[name] = redactStrings(normalize(v))
	}
	if c := h.Cluster; c != nil {
		k.Cluster = &clusterKey{Engine: c.Engine, Database: c.Database, Nodes: len(c.Nodes)}
		for name, v := range c.Options {
			if k.Cluster.Options == nil {
				k.Cluster.Options = map[string]string{}
			}
			k.Cluster.Options[name] = v
		}
	}
	return k
}

// normalize makes an option value what it reads back as from JSON, so a
// run recorded as it finishes (ints) and the same run read from its file
// (float64) have one key.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return fmt.Sprint(v)
	}
	return out
}

// json is the key's canonical text (encoding/json sorts map keys).
func (k seriesKey) json() string {
	b, err := json.Marshal(k)
	if err != nil { // only strings, numbers, bools, lists and maps: cannot fail
		return fmt.Sprint(k)
	}
	return string(b)
}

// id is the series' short identity: a hash of its key.
func (k seriesKey) id() string {
	sum := sha256.Sum256([]byte(k.json()))
	return hex.EncodeToString(sum[:5])
}

// label names the series in a line: workload and model, adapter (and the
// server when it is another), the cluster.
func (k seriesKey) label() string {
	var b strings.Builder
	b.WriteString(k.Workload)
	if k.Model != "" {
		b.WriteString(" " + k.Model)
	}
	b.WriteString(" on " + k.Adapter)
	if k.Server != "" && !strings.HasPrefix(strings.ToLower(k.Server), strings.ToLower(k.Adapter)) {
		b.WriteString(" (" + k.Server + ")")
	}
	if c := k.Cluster; c != nil {
		fmt.Fprintf(&b, ", %s cluster of %d", c.Engine, c.Nodes)
	}
	if v, ok := k.Options["experiment"]; ok {
		fmt.Fprintf(&b, ", experiment %v", v)
		if s, ok := k.Options["step"]; ok {
			fmt.Fprintf(&b, " step %v", s)
		}
	}
	return b.String()
}

// Series is one series as the history lists it.
type Series struct {
	ID    string
	Label string
	// Key is what its runs share (JSON): workload, model, mix, adapter,
	// server, the options that change the work, cluster, machine class.
	Key string
	// Runs is how many runs it has.
	Runs int
	// First and Last are the start times (Unix nanoseconds) of its
	// first and last run.
	First, Last int64
}

// Describe is the series' key in words, one "name: value" per line.
func (s Series) Describe() []string {
	var k seriesKey
	if err := json.Unmarshal([]byte(s.Key), &k); err != nil {
		return []string{s.Key}
	}
	out := []string{"workload: " + k.Workload}
	if k.Model != "" {
		out = append(out, "model: "+k.Model)
	}
	if k.Mix != "" {
		out = append(out, "mix: "+k.Mix)
	}
	out = append(out, "adapter: "+k.Adapter, "server: "+k.Server)
	if len(k.Options) > 0 {
		names := make([]string, 0, len(k.Options))
		for n := range k.Options {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s=%v", n, k.Options[n])
		}
		out = append(out, "options: "+strings.Join(parts, " "))
	}
	if c := k.Cluster; c != nil {
		out = append(out, fmt.Sprintf("cluster: %s, %d node(s)", c.Engine, c.Nodes))
	}
	return append(out, "machine: "+k.Machine)
}

// FindSeries returns the series whose ID starts with prefix (a unique
// prefix names one); an error names the candidates.
func FindSeries(all []Series, prefix string) (Series, error) {
	var hits []Series
	for _, s := range all {
		if s.ID == prefix {
			return s, nil
		}
		if strings.HasPrefix(s.ID, prefix) {
			hits = append(hits, s)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		ids := make([]string, len(all))
		for i, s := range all {
			ids[i] = s.ID
		}
		return Series{}, fmt.Errorf("no series %q in the history (series: %s)", prefix, strings.Join(ids, ", "))
	}
	ids := make([]string, len(hits))
	for i, s := range hits {
		ids[i] = s.ID
	}
	return Series{}, fmt.Errorf("series %q is ambiguous: %s", prefix, strings.Join(ids, ", "))
}

// Mark is something that changed inside a series at a run: it is shown
// beside the figures, never silently mixed in.
type Mark struct {
	// Index is the run (in the series' order) from which it holds.
	Index int
	// What changed, and from what to what.
	What, From, To string
}

func (m Mark) String() string {
	return fmt.Sprintf("%s %s → %s", m.What, orUnknown(m.From), orUnknown(m.To))
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// Marks are the changes between consecutive runs of a series that its
// key lets through: the server's version, the host, its kernel,
// fieldbench's version.
func Marks(runs []Run) []Mark {
	var out []Mark
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1], runs[i]
		for _, f := range []struct{ what, from, to string }{
			{"server version", a.ServerVersion, b.ServerVersion},
			{"host", a.Host, b.Host},
			{"kernel", a.Kernel, b.Kernel},
			{"fieldbench", a.Version, b.Version},
		} {
			if f.from != f.to {
				out = append(out, Mark{Index: i, What: f.what, From: f.from, To: f.to})
			}
		}
	}
	return out
}

// Ops are the operations any run of runs measured, in name order.
func Ops(runs []Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for _, o := range r.Ops {
			if !seen[o.Name] {
				seen[o.Name] = true
				out = append(out, o.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Point is one run's figure in a trend.
type Point struct {
	// Index is the run's place in the series (all its runs counted).
	Index int
	Run   *Run
	// Value is the whole-run figure; Lo and Hi its interval (NaN when
	// the run has none).
	Value, Lo, Hi float64
}

// Trend is one operation's figure over a series' runs: the runs that
// have it, in order. A run without the operation, or (for a latency)
// without a successful one, has no point.
func Trend(runs []Run, op, figure string) []Point {
	var out []Point
	for i := range runs {
		r := &runs[i]
		o, ok := r.Op(op)
		if !ok {
			continue
		}
		v := o.Figure(figure)
		if math.IsNaN(v) {
			continue
		}
		lo, hi := o.Interval(figure)
		out = append(out, Point{Index: i, Run: r, Value: v, Lo: lo, Hi: hi})
	}
	return out
}

// Values are the points' figures, the series change points are sought in.
func Values(pts []Point) []float64 {
	out := make([]float64, len(pts))
	for i, p := range pts {
		out[i] = p.Value
	}
	return out
}
