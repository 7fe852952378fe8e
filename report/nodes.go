package report

import (
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// Per-node series: the experiment runner probes every node every few
// seconds and writes one Point per node and figure, labelled with the node's
// name. Such a series is drawn one line per (run, node), each node in its own
// colour, so a node that was killed shows as a line that stops and resumes.

// nodeLabel is the Point label naming the cluster node a figure is about.
const nodeLabel = "node"

// runDashes tells runs apart when per-node lines of several runs share a
// chart (the colours already tell the nodes apart).
var runDashes = []string{"", "6 3", "2 2", "8 3 2 3"}

// naturalLess orders names with their digit runs compared as numbers, so
// node2 comes before node10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		switch {
		case da != "" && db != "":
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			if len(da) != len(db) { // same value, fewer leading zeros first
				return len(da) < len(db)
			}
			a, b = a[len(da):], b[len(db):]
		default:
			if a[0] != b[0] {
				return a[0] < b[0]
			}
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

func digitPrefix(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		return s
	}
	return s[:end]
}

// sortNatural sorts names in natural order.
func sortNatural(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
}

// byteUnitRE finds a unit of bytes in an axis label: "(bytes)", "(bytes/s)",
// "(B)", "(B/s)".
var byteUnitRE = regexp.MustCompile(`\((bytes|B)(/s)?\)`)

// byteUnits are binary multiples, as fmtBytes uses.
var byteUnits = []string{"B", "KiB", "MiB", "GiB", "TiB"}

// byteScale picks the binary unit that keeps the largest figure hi between 1
// and 1024: its factor and name.
func byteScale(hi float64) (float64, string) {
	f, i := 1.0, 0
	for hi >= 1024*f && i < len(byteUnits)-1 {
		f *= 1024
		i++
	}
	return f, byteUnits[i]
}

// scaleAxis turns an axis built over figures divided by factor back into one
// over the figures themselves, keeping its tick labels.
func scaleAxis(a axis, factor float64) axis {
	a.min, a.max = a.min*factor, a.max*factor
	ticks := make([]tick, len(a.ticks))
	for i, t := range a.ticks {
		ticks[i] = tick{v: t.v * factor, label: t.label}
	}
	a.ticks = ticks
	return a
}

// gapBreaks splits points sorted by x where the step to the next one is
// more than three times the usual (median) step: a node that was down has no
// samples, and the line must not pretend it had.
func gapBreaks(xs []float64) []int {
	if len(xs) < 3 {
		return nil
	}
	steps := make([]float64, len(xs)-1)
	for i := range steps {
		steps[i] = xs[i+1] - xs[i]
	}
	sorted := append([]float64(nil), steps...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	if med <= 0 || math.IsNaN(med) {
		return nil
	}
	var breaks []int
	for i, s := range steps {
		if s > 3*med {
			breaks = append(breaks, i+1)
		}
	}
	return breaks
}

// probeSeries describes the resource series the experiment runner writes,
// for a result file whose header does not: they are still drawn as time
// charts with their units (bytes scaled to MiB, GiB...).
var probeSeries = map[string]result.SeriesMeta{
	"node-cpu":    {Title: "CPU per node", YLabel: "CPU (% of one core)", XIsTime: true},
	"node-rss":    {Title: "Memory (RSS) per node", YLabel: "RSS (bytes)", XIsTime: true},
	"node-read":   {Title: "Block reads per node", YLabel: "read (bytes/s)", XIsTime: true},
	"node-write":  {Title: "Block writes per node", YLabel: "written (bytes/s)", XIsTime: true},
	"node-disk":   {Title: "Data directory size per node", YLabel: "disk use (bytes)", XIsTime: true},
	"machine-cpu": {Title: "Machine CPU", YLabel: "busy (%)", XIsTime: true},
	// Hosts of a virtual network (docs/network.md): each node's and load
	// host's eth0.
	"node-net-rx":         {Title: "Network received per host", YLabel: "received (bytes/s)", XIsTime: true},
	"node-net-tx":         {Title: "Network sent per host", YLabel: "sent (bytes/s)", XIsTime: true},
	"node-net-rx-packets": {Title: "Packets received per host", YLabel: "received (packets/s)", XIsTime: true},
	"node-net-tx-packets": {Title: "Packets sent per host", YLabel: "sent (packets/s)", XIsTime: true},
	"ownership":           {Title: "Data ownership per node", XLabel: "node", YLabel: "data owned (%)"},
}
