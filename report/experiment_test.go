package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/result"
)

// Experiment fixtures: result files as the experiment runner writes them
// for a join (elasticity), a crash and a scalability scenario, with the
// per-node probe series, so the report's experiment parts are golden-tested.

// Per-node probe series, as the runner describes them.
var nodeSeries = map[string]result.SeriesMeta{
	"node-cpu":    {Title: "CPU per node", XLabel: "seconds since start", YLabel: "CPU (% of one core)", XIsTime: true},
	"node-rss":    {Title: "Memory (RSS) per node", XLabel: "seconds since start", YLabel: "RSS (bytes)", XIsTime: true},
	"node-read":   {Title: "Block reads per node", XLabel: "seconds since start", YLabel: "read (bytes/s)", XIsTime: true},
	"node-write":  {Title: "Block writes per node", XLabel: "seconds since start", YLabel: "written (bytes/s)", XIsTime: true},
	"node-disk":   {Title: "Data directory size per node", XLabel: "seconds since start", YLabel: "disk use (bytes)", XIsTime: true},
	"machine-cpu": {Title: "Machine CPU", XLabel: "seconds since start", YLabel: "busy (%)", XIsTime: true},
	"ownership":   {Title: "Data ownership per node", XLabel: "node", YLabel: "data owned (%)"},
}

// expRun describes an experiment result file.
type expRun struct {
	dir, workload, adapter, engine string
	nodes                          []string // at the start
	joined                         []string // added by the join
	end                            float64  // seconds
	events                         []result.Event
	// latencyUS is the mean request latency at time t (µs); down(node, t)
	// says a node is not running at t (no probe sample).
	latencyUS func(t float64) float64
	down      func(node string, t float64) bool
	errorsAt  func(t float64) map[string]int64
	points    []result.Point
	extra     map[string]float64
	series    map[string]result.SeriesMeta
}

// wobble is a deterministic noise in [-1, 1].
func wobble(i int) float64 { return math.Sin(float64(i)*2.399963) * math.Cos(float64(i)*0.7) }

func (f expRun) write(t *testing.T, root string) *result.Run {
	t.Helper()
	nodes := make([]result.ClusterNode, 0, len(f.nodes)+len(f.joined))
	for i, n := range append(append([]string{}, f.nodes...), f.joined...) {
		nodes = append(nodes, result.ClusterNode{Name: n, Addr: "127.0.0." + strconv.Itoa(i+2) + ":" + strconv.Itoa(40100+i), Log: "/r/" + n + "/system.log"})
	}
	h := result.Header{
		Version: "0.1.0-test", Workload: f.workload, Adapter: f.adapter,
		DSN: f.adapter + "://127.0.0.2:40100/bench", Database: adapter.Info{Name: f.engine, Version: "4.1.7"},
		Options: map[string]any{"scenario": f.dir + ".yaml"}, Seed: 7,
		Machine: result.Machine{CPUModel: "Test CPU @ 3.00GHz", Cores: 2, MemoryBytes: 24 << 30, OS: "linux", Kernel: "6.1.0", GoVersion: "go1.26.8"},
		Started: fixtureStart, Operations: []string{"request"}, WarmupSeconds: 2,
		Cluster: &result.ClusterInfo{Engine: f.engine, Version: "4.1.7", Dir: "/r/" + f.dir + "/cluster", Nodes: nodes},
		Series:  f.series,
	}
	dir := filepath.Join(root, f.dir)
	w, err := result.Create(dir, h)
	must(t, err)
	ev := 0
	var ivs []result.Interval
	for i := 0; float64(i) < f.end; i++ {
		mid := float64(i) + 0.5
		hist := result.NewHist()
		n := 60
		for j := 0; j < n; j++ {
			v := f.latencyUS(mid) * (0.4 + 1.2*float64((j*37+i*11)%n)/float64(n))
			must(t, hist.RecordValue(int64(v)))
		}
		oi := result.OpInterval{Count: int64(n), Hist: encode(t, hist)}
		if f.errorsAt != nil {
			oi.Errors = f.errorsAt(mid)
		}
		iv := result.Interval{Start: float64(i), End: float64(i + 1), Warmup: i < 2, Ops: map[string]result.OpInterval{"request": oi}}
		ivs = append(ivs, iv)
		must(t, w.Interval(iv))
		for ev < len(f.events) && f.events[ev].At < iv.End {
			must(t, w.Event(f.events[ev]))
			ev++
		}
	}
	for _, p := range f.points {
		must(t, w.Point(p))
	}
	for _, p := range f.probes() {
		must(t, w.Point(p))
	}
	s, err := (&result.Run{Intervals: ivs}).Summarize()
	must(t, err)
	s.Extra = f.extra
	must(t, w.Summary(s))
	must(t, w.Close())
	run, err := result.Read(dir)
	must(t, err)
	return run
}

// probes are the per-node resource samples every 5 s: busy CPU, RSS,
// block I/O and data directory size, the machine's CPU, and ownership.
func (f expRun) probes() []result.Point {
	var pts []result.Point
	all := append(append([]string{}, f.nodes...), f.joined...)
	joinAt := math.Inf(1)
	for _, e := range f.events {
		if e.Name == "join" {
			joinAt = e.At
		}
	}
	for k, t := 0, 5.0; t <= f.end; k, t = k+1, t+5 {
		busy := 0.0
		for i, n := range all {
			isNew := i >= len(f.nodes)
			if (isNew && t < joinAt) || (f.down != nil && f.down(n, t)) {
				continue
			}
			lbl := map[string]string{"node": n}
			cpu := 35 + 8*float64(i) + 6*wobble(k+i)
			if isNew && t < joinAt+45 { // streaming its share of the data
				cpu += 30
			}
			busy += cpu / 2
			disk := 180e6 + 2.1e6*t + 9e6*float64(i)
			if isNew {
				disk = 12e6 + 4.5e6*math.Min(t-joinAt, 40)
			}
			pts = append(pts,
				result.Point{Series: "node-cpu", X: t, Y: math.Round(cpu*10) / 10, Labels: lbl},
				result.Point{Series: "node-rss", X: t, Y: math.Round(610e6 + 3e6*t + 25e6*float64(i)), Labels: lbl},
				result.Point{Series: "node-read", X: t, Y: math.Round(math.Max(0, 2.4e6+1.1e6*wobble(3*k+i))), Labels: lbl},
				result.Point{Series: "node-write", X: t, Y: math.Round(5.2e6 + 1.7e6*wobble(5*k+i)), Labels: lbl},
				result.Point{Series: "node-disk", X: t, Y: math.Round(disk), Labels: lbl})
		}
		// Two cores shared with the load generator.
		pts = append(pts, result.Point{Series: "machine-cpu", X: t, Y: math.Round(math.Min(97, 18+busy/3)*10) / 10})
	}
	for i, n := range all {
		own := 100 / float64(len(all)) * (1 + 0.07*wobble(i+1))
		pts = append(pts, result.Point{Series: "ownership", X: float64(i), Y: math.Round(own*100) / 100,
			Labels: map[string]string{"node": n}})
	}
	return pts
}

// requestSets runs back-to-back request sets from start to end: set k
// takes y(t) seconds with SD sd(t); labels adds the set's labels.
func requestSets(start, end float64, y, sd func(t float64, k int) float64, labels func(t float64) map[string]string) []result.Point {
	var pts []result.Point
	t := start
	for k := 0; ; k++ {
		d := y(t, k)
		if t+d > end {
			return pts
		}
		t += d
		l := map[string]string{"set": strconv.Itoa(k + 1)}
		for key, v := range labels(t) {
			l[key] = v
		}
		pts = append(pts, result.Point{Series: score.SeriesRequestSet, X: math.Round(t*1000) / 1000, Y: math.Round(d*1000) / 1000,
			SD: math.Round(sd(t, k)*1000) / 1000, N: 2000, Warmup: k == 0, Labels: l})
	}
}

var requestSetMeta = result.SeriesMeta{Title: "Request-set time", XLabel: "request set end (s)", YLabel: "request-set time (s)", XIsTime: true, Band: "sd"}

func withNodeSeries(extra map[string]result.SeriesMeta) map[string]result.SeriesMeta {
	out := map[string]result.SeriesMeta{}
	for k, v := range nodeSeries {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// joinRun: 3 Cassandra nodes under a wiki load of 2,000-request sets; 3
// nodes join at 60 s, data stops moving at 112 s; request sets take about
// 4 s before, bulge while data streams, and settle near 3.1 s.
func joinRun() expRun {
	const join, settled = 60.0, 112.0
	setTime := func(t float64) float64 {
		switch {
		case t <= join:
			return 4.0
		case t < settled:
			return 4.0 + 2.6*math.Sin(math.Pi*(t-join)/(settled-join+20))
		default:
			return 3.1 + 1.3*math.Exp(-(t-settled)/6)
		}
	}
	noise := func(t float64, k int) float64 {
		amp := 0.15
		if t > settled+15 {
			amp = 0.02
		}
		return amp * wobble(k)
	}
	f := expRun{dir: "join-cassandra", workload: "wiki", adapter: "cassandra", engine: "Cassandra",
		nodes: []string{"node1", "node2", "node3"}, joined: []string{"node4", "node5", "node6"}, end: 190,
		series: withNodeSeries(map[string]result.SeriesMeta{score.SeriesRequestSet: requestSetMeta}),
		events: []result.Event{
			{At: 2, Name: "start-load", Detail: "3 clients, 2,000 requests per set"},
			{At: 60, Name: "join", Detail: "+3 nodes"},
			{At: 60.4, Name: "add", Detail: "node4"},
			{At: 61.1, Name: "add", Detail: "node5"},
			{At: 61.9, Name: "add", Detail: "node6"},
			{At: 112, Name: "data-settled", Detail: "nodetool netstats: no streams"},
			{At: 186, Name: "stop-load"},
		},
		latencyUS: func(t float64) float64 { return setTime(t) * 3 / 2000 * 1e6 },
	}
	f.points = requestSets(2, 185, func(t float64, k int) float64 { return setTime(t) + noise(t, k) },
		func(t float64, k int) float64 {
			if t > join && t < settled {
				return 0.55 + 0.2*math.Abs(wobble(k))
			}
			return 0.22 + 0.04*math.Abs(wobble(k))
		},
		func(t float64) map[string]string {
			if t <= join {
				return map[string]string{"nodes": "3"}
			}
			return map[string]string{"nodes": "6"}
		})
	// The runner's own stable event, where its online detection fired.
	st, _ := score.FromRun(&result.Run{Points: f.points, Events: f.events})
	if len(st.Elasticity) == 1 && st.Elasticity[0].Stable {
		f.events = append(f.events[:len(f.events)-1], result.Event{At: st.Elasticity[0].StableAt, Name: "stable", Detail: "last 5 deltas below the baseline"}, f.events[len(f.events)-1])
	}
	f.extra = map[string]float64{"populate_seconds": 41.3, "cluster_formation_seconds": 38.2, "ownership_mean_pct": 16.67, "ownership_sd_pct": 1.21}
	return f
}

// crashRun: a 3-node microblog cluster, node3 killed at 40 s and restarted
// at 55 s, load stopped at 80 s, then the durability audit and convergence.
func crashRun() expRun {
	const kill, restart = 40.0, 55.0
	f := expRun{dir: "crash-cassandra", workload: "microblog", adapter: "cassandra", engine: "Cassandra",
		nodes: []string{"node1", "node2", "node3"}, end: 90,
		series: nodeSeries,
		events: []result.Event{
			{At: 2, Name: "start-load", Detail: "60 clients"},
			{At: kill, Name: "kill", Detail: "node3"},
			{At: restart, Name: "restart", Detail: "node3"},
			{At: 57.5, Name: "join", Detail: "node3 back in the ring"},
			{At: 59, Name: "data-settled", Detail: "hints replayed"},
			{At: 80, Name: "stop-load"},
		},
		latencyUS: func(t float64) float64 {
			if t > kill && t < kill+6 {
				return 45000
			}
			return 2200
		},
		down: func(n string, t float64) bool { return n == "node3" && t > kill && t < restart+2 },
		errorsAt: func(t float64) map[string]int64 {
			switch {
			case t > kill && t < kill+3:
				return map[string]int64{"unavailable": 14, "timeout": 3}
			case t > kill && t < restart:
				return map[string]int64{"timeout": 1}
			}
			return nil
		},
		extra: map[string]float64{
			"populate_seconds":   12.8,
			"audit_acknowledged": 41872, "audit_lost": 3, "audit_stale": 2,
			"audit_never_acknowledged_present": 11, "audit_never_acknowledged_absent": 6, "audit_ok": 41867,
			"convergence_mean_ms": 3.42, "convergence_sd_ms": 1.87, "convergence_p99_ms": 11.9, "convergence_timeouts": 0,
			"convergence_node1_mean_ms": 2.1, "convergence_node1_p99_ms": 6.3,
			"convergence_node2_mean_ms": 3.3, "convergence_node2_p99_ms": 9.8,
			"convergence_node3_mean_ms": 4.9, "convergence_node3_p99_ms": 14.2,
		},
	}
	return f
}

// scaleRun: three steps of the scalability scenario, 1 → 2 → 4 nodes with
// data, clients and request-set size doubled each step. Its header
// describes only the request-set series, not the probe series.
func scaleRun() expRun {
	avg := []float64{2.10, 2.31, 2.27}
	var pts []result.Point
	start := 2.0
	for s, nodes := range []string{"1", "2", "4"} {
		sets := requestSets(start, start+25, func(t float64, k int) float64 { return avg[s] + 0.06*wobble(k+7*s) },
			func(t float64, k int) float64 { return 0.15 }, func(float64) map[string]string {
				return map[string]string{"step": strconv.Itoa(s + 1), "nodes": nodes}
			})
		pts = append(pts, sets...)
		start = sets[len(sets)-1].X + 4 // time to grow the cluster and load more data
	}
	return expRun{dir: "scale-redis", workload: "wiki", adapter: "redis", engine: "Redis",
		nodes: []string{"node1"}, end: math.Ceil(start), points: pts,
		series:    map[string]result.SeriesMeta{score.SeriesRequestSet: requestSetMeta},
		latencyUS: func(float64) float64 { return 2100 },
		events:    []result.Event{{At: 30, Name: "add", Detail: "node2"}, {At: 58, Name: "add", Detail: "node3, node4"}},
	}
}

func writeExp(t *testing.T, fs ...expRun) []*result.Run {
	root := t.TempDir()
	runs := make([]*result.Run, len(fs))
	for i, f := range fs {
		runs[i] = f.write(t, root)
	}
	return runs
}

// TestExperimentReportsGolden renders the experiment fixtures and checks
// what each report must show before comparing it with its golden.
func TestExperimentReportsGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		runs   []expRun
		must   []string
		not    []string
	}{
		{"join.html.golden", []expRun{joinRun()}, []string{
			"<h2>Elasticity and scalability</h2>", "elasticity, join +3 nodes (3 → 6 nodes)",
			"A: curve vs ramp", "B: SD band above the curve", ">bootstrap<", ">data settled<", ">stable<",
			"Av1: mean request-set time before", "Rt2: mean time of one request once stable", "elasticity score",
			"data-transfer time (settled − join)", "<td class=\"n\">52.0 s</td>", "baseline variability",
			"CPU per node", "RSS (GiB)", "disk use (MiB)", "read (MiB/s)", ">node6<", "<h2>Events</h2>", "+3 nodes",
		}, []string{"scalability steps", "Durability audit"}},
		{"crash.html.golden", []expRun{crashRun()}, []string{
			"<h2>Durability audit</h2>", "<h2>Convergence</h2>", "read back intact", ">41,867<",
			"lost (acknowledged, not read back)", "41,872", "<td>node2</td>", "3.42ms", "14.2ms",
			"<h2>Workload figures</h2>", "populate_seconds", ">kill node3<", ">restart node3<", "unavailable",
		}, []string{"Elasticity", "<td>convergence_node1_mean_ms</td>", "<td>audit_lost</td>"}},
		{"scale.html.golden", []expRun{scaleRun()}, []string{
			"scalability steps", "step 1 → 2", "step 2 → 3", "0.1", ">1 → 2<",
			// Probe series the header does not describe keep their units.
			"Data directory size per node", "disk use (MiB)", "read (MiB/s)",
		}, []string{"A: curve vs ramp", "Durability audit"}},
		// Two runs on one page: per-node lines named "run · node".
		{"join-crash.html.golden", []expRun{joinRun(), crashRun()}, []string{
			"join-cassandra (cassandra) · node4", "crash-cassandra (cassandra) · node3", `stroke-dasharray="6 3"`,
		}, nil},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			runs := writeExp(t, tc.runs...)
			out := renderHTML(t, runs...)
			if again := renderHTML(t, runs...); again != out {
				t.Fatal("two renderings differ: output is not deterministic")
			}
			for _, m := range tc.must {
				if !strings.Contains(out, m) {
					t.Errorf("report lacks %q", m)
				}
			}
			for _, m := range append(tc.not, "NaN", "Inf", "<script") {
				if strings.Contains(out, m) {
					t.Errorf("report contains %q", m)
				}
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

// TestElasticityFromScore: the chart and table show score's own figures
// (the report computes none), and the fixture is a join that stabilizes.
func TestElasticityFromScore(t *testing.T) {
	run := writeExp(t, joinRun())[0]
	sc, err := score.FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Elasticity) != 1 {
		t.Fatalf("%d joins scored, want 1", len(sc.Elasticity))
	}
	e := sc.Elasticity[0]
	if !e.Stable || !finite(e.Score) || !(e.A > 0) || !(e.B > 0) || !(e.Av2 < e.Av1) {
		t.Fatalf("fixture join: stable %v, score %g, A %g, B %g, Av1 %g, Av2 %g; notes %q", e.Stable, e.Score, e.A, e.B, e.Av1, e.Av2, e.Notes)
	}
	out := renderHTML(t, run)
	for _, want := range []string{
		fmtFigure(e.Score), fmtFigure(e.A) + " s²", fmtFigure(e.B) + " s²", fmtFigure(e.Av1) + " s", fmtFigure(e.Av2) + " s",
		fmtSecondsUS(e.Rt1), fmtFigure(e.Baseline) + " s", fmtSeconds(e.StableAt), fmtSeconds(e.DataTransfer), fmtSeconds(e.Additional),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks score figure %q", want)
		}
	}
	// Both detectors' verdicts and both readings of B are shown.
	if len(e.Verdicts) != 2 {
		t.Fatalf("verdicts %+v", e.Verdicts)
	}
	for _, v := range e.Verdicts {
		for _, want := range []string{detectorName(v.Detector), fmtSeconds(v.StableAt), fmtFigure(v.Score), fmtFigure(v.ScoreBand)} {
			if !strings.Contains(out, esc(want)) {
				t.Errorf("report lacks the %s verdict's %q", v.Detector, want)
			}
		}
	}
	if !strings.Contains(out, fmtFigure(e.BBand)+" s²") || !strings.Contains(out, "stable ("+e.Detector+")") {
		t.Errorf("report lacks B' = 2B (%s) or the labelled stable moment", fmtFigure(e.BBand))
	}
	// A and B are shaded polygons with their figures as tooltips.
	for _, want := range []string{`fill="` + areaAColor + `"`, `fill="` + areaBColor + `"`, "<title>A = " + fmtFigure(e.A), "<title>B = " + fmtFigure(e.B)} {
		if !strings.Contains(out, want) {
			t.Errorf("elasticity chart lacks %q", want)
		}
	}
}

// TestPerNodeLines: a per-node series is one line per node in natural node
// order, each in its own colour, broken while the node was down.
func TestPerNodeLines(t *testing.T) {
	f := crashRun()
	f.nodes = []string{"node10", "node2", "node3"}
	f.down = func(n string, t float64) bool { return n == "node3" && t > 40 && t < 57 }
	run := writeExp(t, f)[0]
	s := seriesOf(loadTest(t, run), "node-cpu")
	var got []string
	for _, sr := range s.runs {
		got = append(got, sr.label+"="+sr.color)
	}
	want := []string{"node2=" + palette[0], "node3=" + palette[1], "node10=" + palette[2]}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("lines %v, want %v", got, want)
	}
	chart := pointChart(s)
	// node3 is drawn as two polylines (before the kill, after the restart).
	if n := strings.Count(chart, `stroke="`+palette[1]+`" stroke-width="1.6"`); n != 2 {
		t.Errorf("node3 drawn as %d polylines, want 2 (broken while down)", n)
	}
	if n := strings.Count(chart, `stroke="`+palette[0]+`" stroke-width="1.6"`); n != 1 {
		t.Errorf("node2 drawn as %d polylines, want 1", n)
	}
	// Ownership has one point per node and is not over time: bars, one per
	// node in natural order.
	own := seriesOf(loadTest(t, run), "ownership")
	if got := strings.Join(own.cats, " "); !own.bars() || got != "node2 node3 node10" {
		t.Errorf("ownership bars %v %q, want node2 node3 node10", own.bars(), got)
	}
}

func loadTest(t *testing.T, runs ...*result.Run) []*runData {
	t.Helper()
	data, err := loadRuns(runs)
	must(t, err)
	return data
}

// TestEventLabelsDoNotOverlap: close events get numbers in separate rows
// and their names are staggered or left out, never drawn on each other.
func TestEventLabelsDoNotOverlap(t *testing.T) {
	var marks []*eventMark
	for i, at := range []float64{100, 101, 101, 103, 140, 300} {
		l := []string{"kill node5", "kill node6", "join", "data-settled", "stable", "stop-load"}[i]
		marks = append(marks, &eventMark{x: at, num: i + 1, label: l, nameW: textWidth(l), numW: textWidth(strconv.Itoa(i+1)) + 4})
	}
	rows := placeNumbers(marks)
	placeNames(marks, 36, 250)
	for i, a := range marks {
		for _, b := range marks[i+1:] {
			if a.row == b.row && a.numX1 > b.numX0 && b.numX1 > a.numX0 {
				t.Errorf("numbers %d and %d overlap in row %d", a.num, b.num, a.row)
			}
			if a.nameFits && b.nameFits && math.Abs(a.x-b.x) < eventNameW &&
				a.nameY < b.nameY+b.nameW && b.nameY < a.nameY+a.nameW {
				t.Errorf("names %q and %q overlap", a.label, b.label)
			}
			// A name never runs through a number drawn beside it.
			for _, pair := range [][2]*eventMark{{a, b}, {b, a}} {
				n, o := pair[0], pair[1]
				numBottom := 36 + float64(o.row+1)*eventRowH
				if n.nameFits && n.x+3 < o.numX1 && n.x+3+eventFont > o.numX0 && n.nameY < numBottom {
					t.Errorf("name %q runs through number %d", n.label, o.num)
				}
			}
		}
	}
	if !marks[4].nameFits || !marks[5].nameFits || !marks[0].nameFits {
		t.Errorf("isolated or first names left out: %v %v %v", marks[0].nameFits, marks[4].nameFits, marks[5].nameFits)
	}
	if rows < 3 {
		t.Errorf("%d number rows for 4 markers within 3 px, want at least 3", rows)
	}
}

func TestNaturalOrder(t *testing.T) {
	names := []string{"node10", "node2", "node1", "db-b", "node02", "db-a", "node"}
	sortNatural(names)
	if got, want := strings.Join(names, " "), "db-a db-b node node1 node2 node02 node10"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestByteAxis(t *testing.T) {
	for _, tc := range []struct {
		label string
		hi    float64
		title string
		ticks string
	}{
		{"RSS (bytes)", 870e6, "RSS (MiB)", "0 200 400 600 800 1,000"},
		{"read (bytes/s)", 3.4e6, "read (MiB/s)", "0 1 2 3 4"},
		{"disk use (bytes)", 900, "disk use (B)", "0 200 400 600 800 1,000"},
	} {
		s := &series{meta: result.SeriesMeta{YLabel: tc.label}, runs: []seriesRun{{pts: []result.Point{{Y: tc.hi}}}}}
		if m := byteUnitRE.FindStringSubmatch(tc.label); m != nil {
			s.byteUnit = "B" + m[2]
		}
		a := s.yAxis()
		var ticks []string
		for _, tk := range a.ticks {
			ticks = append(ticks, tk.label)
		}
		if a.title != tc.title || strings.Join(ticks, " ") != tc.ticks {
			t.Errorf("%s up to %g: %q %q, want %q %q", tc.label, tc.hi, a.title, strings.Join(ticks, " "), tc.title, tc.ticks)
		}
		if top := a.ticks[len(a.ticks)-1].v; top < tc.hi || a.max != top {
			t.Errorf("%s: axis ends at %g, below the data %g", tc.label, top, tc.hi)
		}
	}
	if got := fmt.Sprint((&series{byteUnit: "B/s"}).fmtY(5.2e6)); got != "5.0 MiB/s" {
		t.Errorf("tooltip figure %q", got)
	}
}
