package study

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/fieldbench/fieldbench/result"
)

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{"meta": true, "br": true, "hr": true, "img": true, "input": true, "link": true, "col": true, "wbr": true}

// wellFormed checks that every element the page opens it closes, in
// order (the tokenizer's view: html.Parse itself accepts anything).
func wellFormed(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(stack) > 0 {
				t.Errorf("unclosed elements at the end: %v", stack)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !voidElements[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("</%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// shapeOf is a shape's section as the page holds it.
type shapeOf struct {
	id, text string
	svgs     int
}

// walk gathers the page's elements by name, the shapes' sections and the
// ids of the claim rows.
func walk(n *html.Node, count map[string]int, shapes *[]shapeOf, ids map[string]bool) {
	if n.Type == html.ElementNode {
		count[n.Data]++
		var id, class string
		for _, a := range n.Attr {
			switch a.Key {
			case "id":
				id = a.Val
			case "class":
				class = a.Val
			}
		}
		if id != "" {
			ids[id] = true
		}
		if n.Data == "div" && strings.Contains(class, "shape") {
			sh := shapeOf{id: id}
			c := map[string]int{}
			walk1(n, c, &sh.text)
			sh.svgs = c["svg"]
			*shapes = append(*shapes, sh)
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, count, shapes, ids)
	}
}

func walk1(n *html.Node, count map[string]int, text *string) {
	if n.Type == html.ElementNode {
		count[n.Data]++
	}
	if n.Type == html.TextNode {
		*text += n.Data
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk1(c, count, text)
	}
}

var pageURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^"'\s<]*`)

// TestHTMLReport: for each study, over measures built here, the HTML
// report parses and is well formed, holds the tally and every claim id
// and value id, draws an <svg> for every shape it has figures for and says
// "not measured" for every other, has no <script> and no URL (the SVG
// namespace aside).
func TestHTMLReport(t *testing.T) {
	sweep := func(db string, load int64, y float64, failed string) Measure {
		return Measure{Metric: "throughput", Operation: "batch", Unit: "records/s", Database: db, Server: db + " 1", Nodes: 1, Load: load, Value: y, Lo: y * 0.9, Hi: y * 1.1, N: 10, SD: math.NaN(), Failed: failed, Step: "sweep-" + db}
	}
	traj := func(db, metric, op, unit string, nodes int, y float64) Measure {
		return Measure{Metric: metric, Operation: op, Unit: unit, Database: db, Server: db + " 1", Nodes: nodes, Access: "sequential", Dataset: "dataset0", Size: "scale 0.01", Value: y, SD: math.NaN(), Step: db}
	}
	wikiM := func(db, metric, unit string, nodes, after int, y float64) Measure {
		return Measure{Metric: metric, Unit: unit, Database: db, Server: db + " 1", Nodes: nodes, NodesAfter: after, Requests: 2000, Size: "20,000 articles", Value: y, SD: 1, N: 10, Step: "elasticity-" + db}
	}
	done := func(step, db string) StepState {
		return StepState{Step: Step{Name: step, For: db}, Experiment: "/r/" + step + "/20260101T000000-experiment-" + step, Runs: []string{"/r/" + step + "/x/run-1"},
			Bounds: []RunBound{{Dir: "/r/" + step + "/x/run-1", Bound: BoundBudget, Budget: "cpu=0.5 each", NodesBound: 1, MachineIdle: 40}}}
	}
	wikiStep := done("elasticity-hbase", "hbase")
	wikiStep.Timelines = []Timeline{{Run: "/r/elasticity-hbase/x/run-1",
		Points: []result.Point{{X: 10, Y: 8, SD: 1}, {X: 20, Y: 9, SD: 1}, {X: 30, Y: 12, SD: 2}},
		Events: []result.Event{{At: 15, Name: "add-node", Detail: "hbase3"}}}}
	for _, tc := range []struct {
		study  string
		ms     []Measure
		states []StepState
		drawn  []string // shape ids that must hold an svg
		none   []string // shape ids that must say "not measured"
	}{
		{"ingest",
			[]Measure{sweep("sqlserver", 10000, 50000, ""), sweep("sqlserver", 20000, 52000, ""), sweep("cassandra", 10000, 0, "write timeout"), sweep("mongodb", 2000, 1300, "")},
			[]StepState{done("sweep-postgres", "sqlserver"), done("sweep-cassandra", "cassandra"), done("sweep-mongodb", "mongodb")},
			[]string{"shape-ingest-throughput"}, nil},
		{"trajectory",
			[]Measure{traj("postgres", "throughput", "write", "ops/s", 1, 9000), traj("cassandra", "throughput", "write", "ops/s", 1, 6000), traj("cassandra", "throughput", "write", "ops/s", 2, 3000),
				traj("postgres", "latency", "write", "ms", 1, 2), traj("cassandra", "latency", "write", "ms", 2, 5)},
			[]StepState{done("postgres", "postgres"), done("cassandra", "cassandra")},
			[]string{"shape-write-throughput-dataset0-sequential", "shape-write-latency-dataset0-sequential", "shape-distance-throughput-dataset0-sequential"}, nil},
		{"wiki",
			[]Measure{wikiM("hbase", "request_set_time", "s", 2, 0, 8), wikiM("hbase", "request_set_time", "s", 4, 0, 9), wikiM("hbase", "elasticity_score", "score", 2, 4, 2000),
				wikiM("hbase", "scalability_score", "score", 2, 4, 0.1)},
			[]StepState{wikiStep, {Step: Step{Name: "elasticity-cassandra", For: "cassandra"}}},
			[]string{"shape-wiki-timeline-elasticity-hbase-run-1", "shape-wiki-request_set_time", "shape-wiki-elasticity_score", "shape-wiki-scalability_score"}, nil},
		{"microblog", nil, []StepState{done("crash", "cassandra")},
			nil, []string{"shape-microblog-latency-by-followers", "shape-microblog-join-timeline", "shape-microblog-crash-timeline"}},
	} {
		t.Run(tc.study, func(t *testing.T) {
			s, err := Load(tc.study)
			if err != nil {
				t.Fatal(err)
			}
			p, err := PlanFor(tc.study, SizeQuick)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteHTML(&b, s, p, "/r", tc.ms, tc.states); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			wellFormed(t, page)
			doc, err := html.Parse(strings.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			count, ids := map[string]int{}, map[string]bool{}
			var shapes []shapeOf
			walk(doc, count, &shapes, ids)
			if count["script"] != 0 {
				t.Error("the page has a <script>")
			}
			for _, u := range pageURL.FindAllString(page, -1) {
				if u != "http://www.w3.org/2000/svg" {
					t.Errorf("the page names a URL: %s", u)
				}
			}
			ran, _ := stepDatabases(tc.states)
			tally := Tally(Claims(s, tc.ms, ran))
			if want := fmt.Sprintf("Claims: %d held%d not held%d not judged here (of %d)", tally[Held], tally[NotHeld], tally[NotJudged], len(s.Claims)); !strings.Contains(textOf(doc), want) {
				t.Errorf("no tally %q", want)
			}
			for _, c := range s.Claims {
				if !ids[c.ID] {
					t.Errorf("no row for claim %s", c.ID)
				}
			}
			for _, v := range s.Values {
				if !strings.Contains(page, "<code>"+v.ID+"</code>") {
					t.Errorf("no row for value %s", v.ID)
				}
			}
			byID := map[string]shapeOf{}
			for _, sh := range shapes {
				byID[sh.id] = sh
				if sh.svgs == 0 && !strings.Contains(sh.text, "not measured") {
					t.Errorf("shape %s: neither a chart nor \"not measured\": %q", sh.id, sh.text)
				}
				if sh.svgs > 1 {
					t.Errorf("shape %s: %d charts", sh.id, sh.svgs)
				}
			}
			for _, id := range tc.drawn {
				if byID[id].svgs != 1 {
					t.Errorf("shape %s: %d <svg>, want 1 (shapes %v)", id, byID[id].svgs, shapes)
				}
			}
			for _, id := range tc.none {
				if sh, ok := byID[id]; !ok || !strings.Contains(sh.text, "not measured") {
					t.Errorf("shape %s does not say not measured: %+v", id, sh)
				}
			}
			if count["svg"] == 0 && len(tc.drawn) > 0 {
				t.Error("no <svg> in the page")
			}
		})
	}
}

func textOf(n *html.Node) string {
	var s string
	walk1(n, map[string]int{}, &s)
	return s
}

// TestReportWritesHTML: Report, which both a study run and --report-only
// end with, writes the HTML report beside the Markdown one, with the
// steps' budgets and what bound them read from the result files.
func TestReportWritesHTML(t *testing.T) {
	results := t.TempDir()
	writeStep(t, results, "cassandra",
		writeBoundRun(t, 1, "cpu=0.5 each", "budget: cass1 held back", map[string]float64{"budget_machine_bound": 0, "budget_nodes_bound": 1}),
		writeBoundRun(t, 2, "cpu=0.5 each", "machine: it ran out of CPU first", map[string]float64{"budget_machine_bound": 1, "budget_machine_idle_pct": 3}))
	p := Plan{Study: "trajectory", Size: "test", Steps: []Step{{Name: "cassandra", For: "cassandra"}}}
	md, err := Report(p, results)
	if err != nil {
		t.Fatal(err)
	}
	if md != filepath.Join(results, ReportFile) {
		t.Errorf("report %s", md)
	}
	b, err := os.ReadFile(filepath.Join(results, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	wellFormed(t, page)
	for _, w := range []string{"<td>cpu=0.5 each</td>", "the machine ran out first in 1 of 2 run(s)", "<svg", `id="shape-write-throughput-dataset0-sequential"`,
		`href="cassandra/20260101T000000-experiment-cassandra/report.html"`} {
		if !strings.Contains(page, w) {
			t.Errorf("the HTML report lacks %q", w)
		}
	}
}

// microblogRun writes a microblog run: post and timeline latencies per
// second (post grouped by the author's followers), a warm-up second, and
// the events given.
func microblogRun(t *testing.T, events ...result.Event) func(string) {
	return func(dir string) {
		t.Helper()
		enc := func(us ...int64) string {
			h := result.NewHist()
			for _, v := range us {
				if err := h.RecordValue(v); err != nil {
					t.Fatal(err)
				}
			}
			s, err := result.EncodeHist(h)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		w, err := result.Create(dir, result.Header{Version: "test", Workload: "microblog", Adapter: "cassandra", Database: adapterInfo("Apache Cassandra", "5.0.9"),
			Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Machine: result.Machine{Cores: 2}, Operations: []string{"post", "timeline"},
			Groups: map[string]string{"post": "author followers"}, WarmupSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 4; s++ {
			iv := result.Interval{Start: float64(s), End: float64(s + 1), Warmup: s == 0,
				Ops: map[string]result.OpInterval{"post": {Count: 3, Hist: enc(1000, 2000, 3000)}, "timeline": {Count: 1, Hist: enc(5000)}},
				// the warm-up second's groups are far slower: left out
				Groups: map[string]map[string]string{"post": {"16-31": enc(4000 + 100000*int64(boolInt(s == 0))), "0-7": enc(1000, 3000)}}}
			if err := w.Interval(iv); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range events {
			if err := w.Event(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestMicroblogFigures: microblog's latency by follower count (the
// measured seconds' histograms merged by group, groups in numeric order)
// and, for a run with a crash or a join, each operation's p99 per second
// reach the step's state from the result files and are drawn in the HTML
// report; a steady run has no timeline, and a plan whose steps recorded
// none says "not measured".
func TestMicroblogFigures(t *testing.T) {
	results := t.TempDir()
	writeStep(t, results, "steady-denormalized", microblogRun(t))
	writeStep(t, results, "crash", microblogRun(t, result.Event{At: 2, Name: "kill", Detail: "cass5"}))
	p := Plan{Study: "microblog", Size: "test", Steps: []Step{{Name: "steady-denormalized", For: "cassandra"}, {Name: "crash", For: "cassandra"}, {Name: "join", For: "cassandra"}}}
	_, states, err := Collect(p, results)
	if err != nil {
		t.Fatal(err)
	}
	steady, crash := states[0], states[1]
	if len(steady.Timelines) != 0 {
		t.Errorf("a steady run has timelines: %+v", steady.Timelines)
	}
	if len(steady.Groups) != 1 || steady.Groups[0].Op != "post" || steady.Groups[0].By != "author followers" {
		t.Fatalf("groups %+v", steady.Groups)
	}
	g := steady.Groups[0].Points
	if len(g) != 2 || g[0].Labels["category"] != "0-7" || g[1].Labels["category"] != "16-31" || g[0].N != 6 || math.Abs(g[0].Y-2) > 0.05 || math.Abs(g[1].Y-4) > 0.05 {
		t.Errorf("post by followers %+v, want 0-7 about 2 ms (n 6) then 16-31 about 4 ms", g)
	}
	if len(crash.Timelines) != 2 || crash.Timelines[0].Label != "post p99" || len(crash.Timelines[0].Points) != 4 || len(crash.Timelines[0].Events) != 1 {
		t.Fatalf("crash timelines %+v", crash.Timelines)
	}
	if y := crash.Timelines[0].Points[1].Y; math.Abs(y-3) > 0.05 {
		t.Errorf("post p99 %v ms, want about 3", y)
	}
	if _, err := Report(p, results); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(results, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var shapes []shapeOf
	walk(doc, map[string]int{}, &shapes, map[string]bool{})
	byID := map[string]shapeOf{}
	for _, sh := range shapes {
		byID[sh.id] = sh
	}
	for _, id := range []string{"shape-microblog-groups-steady-denormalized-run-1-post", "shape-microblog-groups-crash-run-1-post", "shape-microblog-crash-crash-run-1"} {
		if byID[id].svgs != 1 {
			t.Errorf("shape %s: %d <svg>, want 1 (shapes %v)", id, byID[id].svgs, shapes)
		}
	}
	if sh := byID["shape-microblog-join-timeline"]; !strings.Contains(sh.text, "not measured: no complete step recorded a run with a join") {
		t.Errorf("the join: %+v", sh)
	}
}
