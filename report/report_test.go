package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// expectedCharts is the number of charts the microblog fixtures produce: per
// operation latency over time, throughput and distribution, one group chart
// for post and one error chart for post (the only operation that fails).
const expectedCharts = 3*3 + 1 + 1

func renderHTML(t *testing.T, runs ...*result.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the rendered output (%d vs %d bytes); rerun with -update if the change is intended\nfirst difference: %s",
			path, len(want), len(got), firstDiff(string(want), got))
	}
}

func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-60)
	return "want …" + a[lo:min(len(a), i+60)] + "…\n got …" + b[lo:min(len(b), i+60)] + "…"
}

func fixtureRuns(t *testing.T, fs ...fixture) []*result.Run {
	root := t.TempDir()
	runs := make([]*result.Run, len(fs))
	for i, f := range fs {
		runs[i] = f.write(t, root)
	}
	return runs
}

var htmlCases = []struct {
	name     string
	fixtures []fixture
	charts   int  // <svg> count
	points   bool // the fixtures have Point series, with a failure
}{
	{"single.html.golden", []fixture{runA()}, expectedCharts, false},
	// Intervals and points in both runs: request-set times and a sweep.
	{"compare.html.golden", []fixture{withPoints(runA(), 20000), withPoints(runB(), 0)}, expectedCharts + 2, true},
	// Points only: request-set times, sweep statistics, single sweep runs
	// and throughput by query type.
	{"points.html.golden", []fixture{sweepA(), sweepB()}, 4, true},
}

func TestHTMLGolden(t *testing.T) {
	for _, tc := range htmlCases {
		t.Run(tc.name, func(t *testing.T) {
			runs := fixtureRuns(t, tc.fixtures...)
			got := renderHTML(t, runs...)
			if again := renderHTML(t, runs...); again != got {
				t.Fatal("two renderings of the same runs differ: output is not deterministic")
			}
			checkGolden(t, tc.name, got)
		})
	}
}

var urlRE = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^"'\s<]*`)

func TestHTMLProperties(t *testing.T) {
	for _, tc := range htmlCases {
		t.Run(tc.name, func(t *testing.T) {
			runs := fixtureRuns(t, tc.fixtures...)
			out := renderHTML(t, runs...)
			lower := strings.ToLower(out)
			if strings.Contains(lower, "<script") {
				t.Error("page contains <script")
			}
			for _, u := range urlRE.FindAllString(out, -1) {
				if u != "http://www.w3.org/2000/svg" {
					t.Errorf("page refers to the network: %q", u)
				}
			}
			for _, bad := range []string{"<link", "<img", "@import", "url(", "onload", "javascript:"} {
				if strings.Contains(lower, bad) {
					t.Errorf("page contains %q", bad)
				}
			}
			if n := strings.Count(out, "<svg"); n != tc.charts {
				t.Errorf("%d <svg> charts, want %d", n, tc.charts)
			}
			if n := strings.Count(out, "</svg>"); n != tc.charts {
				t.Errorf("%d </svg>, want %d", n, tc.charts)
			}
			for _, bad := range []string{"NaN", "Inf"} {
				if i := strings.Index(out, bad); i >= 0 {
					t.Errorf("page contains %q: …%s…", bad, out[max(0, i-80):min(len(out), i+40)])
				}
			}
			if strings.Contains(out, maliciousOption) || !strings.Contains(out, "&lt;b&gt;x&lt;/b&gt;") {
				t.Error("option value not HTML-escaped")
			}
			if tc.name != "points.html.golden" && !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Error("event detail missing or not escaped")
			}
			if tc.points {
				for _, raw := range []string{maliciousTitle, maliciousCause} {
					if strings.Contains(out, raw) || !strings.Contains(out, esc(raw)) {
						t.Errorf("%q missing or not HTML-escaped", raw)
					}
				}
				// The cause is in the cross's tooltip and in the failure table.
				if n := strings.Count(out, "<td>"+esc(maliciousCause)+"</td>"); n != 1 {
					t.Errorf("failure listed %d times, want once", n)
				}
				for _, want := range []string{"<h2>Measurements</h2>", "Request-set time", "95% CI", "records per source", ">warm-up<", ">failed<"} {
					if !strings.Contains(out, want) {
						t.Errorf("page lacks %q", want)
					}
				}
			}
			for _, r := range runs {
				name := runName(r, 0)
				if !strings.Contains(out, name) {
					t.Errorf("run name %q missing", name)
				}
			}
			for _, want := range []string{"warm-up", "populate_seconds", "12.5 s", "50.0 MiB", "15.3ms", "Test CPU @ 3.00GHz", "16.0 GiB"} {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if tc.name == "points.html.golden" {
				return // no intervals: no group tables
			}
			for _, want := range []string{">checkpoint<", "author followers"} {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			// Groups are ordered by their numeric lower bound, not as strings.
			if a, b := strings.Index(out, "<td>2-3</td>"), strings.Index(out, "<td>16-31</td>"); a < 0 || b < a {
				t.Errorf("group 2-3 at %d should come before 16-31 at %d", a, b)
			}
		})
	}
}

// svgs cuts every chart out of a page.
func svgs(page string) []string {
	var out []string
	for {
		i := strings.Index(page, "<svg")
		if i < 0 {
			return out
		}
		j := strings.Index(page[i:], "</svg>")
		out = append(out, page[i:i+j])
		page = page[i+j:]
	}
}

// TestHTMLPointsOnly: runs that write only points (a sweep) get no interval
// charts and no operation tables, and every chart draws something.
func TestHTMLPointsOnly(t *testing.T) {
	for _, fs := range [][]fixture{{sweepA()}, {sweepA(), sweepB()}} {
		runs := fixtureRuns(t, fs...)
		if len(runs[0].Intervals) != 0 || len(runs[0].Points) == 0 {
			t.Fatalf("fixture: %d intervals, %d points", len(runs[0].Intervals), len(runs[0].Points))
		}
		out := renderHTML(t, runs...)
		for _, bad := range []string{"<h2>Summary", "over time</h2>", "Latency distribution", "Latency by group", "<th>post", "<div class=\"charts\">\n</div>", "NaN", "Inf", "0 intervals"} {
			if strings.Contains(out, bad) {
				t.Errorf("points-only page contains %q", bad)
			}
		}
		charts := svgs(out)
		if len(charts) != 4 {
			t.Errorf("%d charts, want 4 (one per series)", len(charts))
		}
		for i, c := range charts {
			if !strings.Contains(c, "</title></circle>") && !strings.Contains(c, "</title></rect>") {
				t.Errorf("chart %d draws no point or bar:\n%s", i, c)
			}
		}
		for _, want := range []string{"<h2>Measurements</h2>", "<h2>Workload figures</h2>", "by_query", ">knn<", "load finished", "killed by the OOM killer"} {
			if !strings.Contains(out, want) {
				t.Errorf("points-only page lacks %q", want)
			}
		}
		// Each run's points are drawn in its own colour on the shared charts.
		for _, d := range []string{palette[0], palette[len(fs)-1]} {
			if !strings.Contains(out, `fill="`+d+`"><title>`) {
				t.Errorf("no marker in run colour %s", d)
			}
		}
	}
}

func TestHTMLNoRuns(t *testing.T) {
	if err := HTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("HTML with no runs: want an error")
	}
}

// summarySection cuts the summary tables out of a page.
func summarySection(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, "<h2>Summary")
	if i < 0 {
		t.Fatal("no summary section")
	}
	j := strings.Index(page[i:], "</div>")
	return page[i : i+j]
}

func TestHTMLKilledRun(t *testing.T) {
	killed := runA()
	killed.dir, killed.summary, killed.truncated = "run-a", false, true
	finished := fixtureRuns(t, runA())[0]
	run := fixtureRuns(t, killed)[0]
	if run.Summary != nil || !run.Truncated {
		t.Fatalf("fixture: summary %v, truncated %v; want a killed run", run.Summary, run.Truncated)
	}
	out := renderHTML(t, run)
	for _, want := range []string{"Killed before summary", "last line was cut off"} {
		if !strings.Contains(out, want) {
			t.Errorf("killed run page lacks %q", want)
		}
	}
	if strings.Contains(out, "Workload figures") {
		t.Error("killed run has no extras, but the page shows a figures table")
	}
	if got, want := summarySection(t, out), summarySection(t, renderHTML(t, finished)); got != want {
		t.Errorf("summary recomputed from intervals differs from the written one:\n%s", firstDiff(want, got))
	}
	if n := strings.Count(out, "<svg"); n != expectedCharts {
		t.Errorf("%d charts, want %d", n, expectedCharts)
	}
}

func TestTerminalPoints(t *testing.T) {
	run := fixtureRuns(t, sweepA())[0]
	var b bytes.Buffer
	must(t, Terminal(&b, run))
	out := b.String()
	for _, w := range []string{"sweep-a (sqlite): ingest on SQLite 3.46.1, points: 33 in 4 series (4 warm-up, 3 failed)\n",
		"Ingest throughput per run", "failed at records per source 20,000", "index build failed", "populate_seconds"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	for _, w := range []string{"operation", "measured after", "NaN"} {
		if strings.Contains(out, w) {
			t.Errorf("output has %q:\n%s", w, out)
		}
	}
	checkGolden(t, "terminal-points.txt.golden", out)
}

func TestTerminal(t *testing.T) {
	killed := runA()
	killed.summary = false
	cases := []struct {
		name  string
		f     fixture
		wants []string
		not   []string
	}{
		{"finished", runA(), []string{"populate_seconds", "12.5 s", "db_size_bytes", "50.0 MiB", "post: 3 × conflict", "post: 1 × timeout"}, []string{"note:"}},
		{"killed", killed, []string{"note: Killed before summary"}, []string{"populate_seconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := fixtureRuns(t, tc.f)[0]
			var b bytes.Buffer
			must(t, Terminal(&b, run))
			out := b.String()
			if !strings.HasPrefix(out, "run-a (sqlite): microblog on SQLite 3.46.1, 8.0 s measured after 2.0 s warm-up\n") {
				t.Errorf("heading: %q", strings.SplitN(out, "\n", 2)[0])
			}
			for _, op := range fixtureOps {
				var n int64
				for i := fixtureWarmup; i < fixtureIntervals; i++ {
					n += fixtureCount(op, i, tc.f.rate)
				}
				row := rowOf(out, op)
				if len(row) < 2 || row[1] != fmtCount(n) {
					t.Errorf("%s row %q: want count %s", op, row, fmtCount(n))
				}
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if tc.name == "finished" {
				checkGolden(t, "terminal.txt.golden", out)
			}
		})
	}
}

// rowOf returns the whitespace-separated cells of the table row for op.
func rowOf(out, op string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == op {
			return f
		}
	}
	return nil
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{fmtUS(0), "0µs"},
		{fmtUS(1), "1.00µs"},
		{fmtUS(850), "850µs"},
		{fmtUS(999.7), "1.00ms"},
		{fmtUS(1234), "1.23ms"},
		{fmtUS(45_600), "45.6ms"},
		{fmtUS(2_100_000), "2.10s"},
		{fmtTickUS(200), "200µs"},
		{fmtTickUS(5000), "5ms"},
		{fmtTickUS(1e6), "1s"},
		{fmtCount(0), "0"},
		{fmtCount(999), "999"},
		{fmtCount(1234567), "1,234,567"},
		{fmtCount(-1234), "-1,234"},
		{fmtRate(3.14159), "3.14"},
		{fmtRate(123.45), "123.5"},
		{fmtRate(12345.6), "12,346"},
		{fmtBytes(512), "512 B"},
		{fmtBytes(52428800), "50.0 MiB"},
		{fmtSeconds(8), "8.0 s"},
		{fmtSeconds(125), "2m05s"},
		{fmtSeconds(3725), "1h02m"},
		{fmtExtra("lag_p99_us", 15300), "15.3ms"},
		{fmtExtra("rows", 1e6), "1,000,000"},
		{fmtExtra("requests_per_sec", 27204.6), "27,205"},
		{fmtExtra("ratio", 0.12345), "0.1235"},
		{fmtErrors(nil), "0"},
		{fmtErrors(map[string]int64{"timeout": 2, "conflict": 1}), "3 (conflict 1, timeout 2)"},
		{strings.Join(errorKindLines("post", map[string]int64{"timeout": 2, "conflict": 1}), "|"), "  post: 2 × timeout|  post: 1 × conflict"},
		{strings.Join(errorKindLines("get", map[string]int64{"a": 1, "b": 5, "c": 2, strings.Repeat("x", 120): 3}), "|"),
			"  get: 5 × b|  get: 3 × " + strings.Repeat("x", 100) + "…|  get: 2 × c|  get: 1 more kinds of error in the report"},
		{strings.Join(errorKindLines("get", nil), "|"), ""},
		{fmtCount(errorTotal(map[string]int64{"a": 1200, "b": 5})), "1,205"},
		{fmtValue(map[string]any{"b": 1, "a": "<x>"}), `{"a":"<x>","b":1}`},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestAxes(t *testing.T) {
	labels := func(a axis) string {
		var s []string
		for _, tk := range a.ticks {
			s = append(s, tk.label)
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		name     string
		a        axis
		min, max float64
		ticks    string
	}{
		{"log narrow", logAxis("", 130, 4200, fmtTickUS), 100, 5000, "100µs 200µs 500µs 1ms 2ms 5ms"},
		{"log wide", logAxis("", 3, 2e6, fmtTickUS), 1, 1e7, "1µs 10µs 100µs 1ms 10ms 100ms 1s 10s"},
		{"log empty", logAxis("", math.Inf(1), 0, fmtTickUS), 1, 1000, "1µs 2µs 5µs 10µs 20µs 50µs 100µs 200µs 500µs 1ms"},
		{"linear", linearAxis("", 0, 10, 10, fmtNumber), 0, 10, "0 1 2 3 4 5 6 7 8 9 10"},
		{"linear odd", linearAxis("", 0, 437, 5, fmtNumber), 0, 500, "0 100 200 300 400 500"},
		{"linear flat", linearAxis("", 0, 0, 5, fmtNumber), 0, 1, "0 0.2 0.4 0.6 0.8 1"},
	}
	for _, c := range cases {
		if c.a.min != c.min || c.a.max != c.max || labels(c.a) != c.ticks {
			t.Errorf("%s: [%g, %g] %q; want [%g, %g] %q", c.name, c.a.min, c.a.max, labels(c.a), c.min, c.max, c.ticks)
		}
	}
}

func TestGroupLabelOrder(t *testing.T) {
	d := &runData{groups: map[string]map[string]*hdrhistogram.Histogram{"post": {}}}
	for _, l := range []string{"16-31", "2-3", "0", "other", "1024+", "1", "4-7"} {
		d.groups["post"][l] = result.NewHist()
	}
	got := strings.Join(groupLabels([]*runData{d}, "post"), " ")
	if want := "0 1 2-3 4-7 16-31 1024+ other"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRunBlockShowsCluster(t *testing.T) {
	t.Parallel()
	d := &runData{run: &result.Run{Header: result.Header{Cluster: &result.ClusterInfo{
		Engine: "postgres", Version: "15.8", Dir: "/r/cluster-postgres",
		Nodes:   []result.ClusterNode{{Name: "pg1", Role: "primary", Addr: "127.0.0.1:5000"}, {Name: "pg2", Role: "replica", Addr: "127.0.0.1:5001"}},
		Options: map[string]string{"fsync": "off"},
	}}}}
	var got string
	for _, f := range runFields(d) {
		if f[0] == "cluster" || f[0] == "cluster config" {
			got += f[1] + "|"
		}
	}
	if !strings.Contains(got, "postgres 15.8, 2 node(s): pg1 primary 127.0.0.1:5000, pg2 replica 127.0.0.1:5001") || !strings.Contains(got, "fsync=off") {
		t.Fatalf("cluster fields: %q", got)
	}
}

// TestRunNameNamesStandIn: a run on a server that is not the one its
// adapter is named after (FerretDB behind the mongodb adapter) is labelled
// with the server, so no chart or table calls its figures MongoDB's.
func TestRunNameNamesStandIn(t *testing.T) {
	t.Parallel()
	run := func(a, db string) *result.Run {
		return &result.Run{Dir: "/r/x", Header: result.Header{Adapter: a, Database: adapter.Info{Name: db}}}
	}
	for _, tt := range []struct {
		r    *result.Run
		want string
	}{
		{run("mongodb", "FerretDB"), "x (mongodb adapter on FerretDB)"},
		{run("mongodb", "MongoDB"), "x (mongodb)"},
		{run("hbase", "HBase"), "x (hbase)"},
		{run("postgres", "PostgreSQL"), "x (postgres)"},
		{run("sqlite", ""), "x (sqlite)"},
		{run("", "FerretDB"), "x"},
	} {
		if got := runName(tt.r, 0); got != tt.want {
			t.Errorf("runName(%s on %s) = %q, want %q", tt.r.Header.Adapter, tt.r.Header.Database.Name, got, tt.want)
		}
	}
}
