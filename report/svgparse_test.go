package report

import (
	"encoding/xml"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// svgEl is one element of a parsed SVG chart, in document order: its name,
// attributes and (for text) its character data.
type svgEl struct {
	name  string
	attrs map[string]string
	text  string
}

// svgDoc is one chart as its elements in order and its root attributes.
type svgDoc struct {
	root  map[string]string
	title string
	els   []svgEl
}

var svgRE = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// parseSVGs parses every inline SVG chart of an HTML page with an XML
// decoder: what a browser draws, not what a regular expression guesses.
func parseSVGs(t *testing.T, page string) []svgDoc {
	t.Helper()
	var docs []svgDoc
	for _, src := range svgRE.FindAllString(page, -1) {
		dec := xml.NewDecoder(strings.NewReader(src))
		var d svgDoc
		var open []int // indexes of the open elements in d.els (-1: root)
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("an SVG chart is not well-formed XML: %v\n%s", err, src[:min(len(src), 300)])
			}
			switch tk := tok.(type) {
			case xml.StartElement:
				attrs := map[string]string{}
				for _, a := range tk.Attr {
					attrs[a.Name.Local] = a.Value
				}
				if tk.Name.Local == "svg" && d.root == nil {
					d.root = attrs
					open = append(open, -1)
					continue
				}
				d.els = append(d.els, svgEl{name: tk.Name.Local, attrs: attrs})
				open = append(open, len(d.els)-1)
			case xml.EndElement:
				open = open[:len(open)-1]
			case xml.CharData:
				if len(open) == 0 {
					continue
				}
				i := open[len(open)-1]
				if i < 0 {
					continue
				}
				if d.els[i].name == "title" && d.title == "" && len(open) == 2 {
					d.title = string(tk)
				}
				d.els[i].text += string(tk)
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// chartTitled is the chart whose title contains s.
func chartTitled(t *testing.T, docs []svgDoc, s string) svgDoc {
	t.Helper()
	for _, d := range docs {
		if strings.Contains(d.title, s) {
			return d
		}
	}
	var titles []string
	for _, d := range docs {
		titles = append(titles, d.title)
	}
	t.Fatalf("no chart titled %q among %q", s, titles)
	return svgDoc{}
}

func attrF(t *testing.T, e svgEl, k string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[k], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.name, k, e.attrs[k], err)
	}
	return v
}

// frame is the plot area's outline: its left and right pixel columns and
// its bottom row.
func (d svgDoc) frame(t *testing.T) (left, right, bottom float64) {
	t.Helper()
	for _, e := range d.els {
		if e.name == "rect" && e.attrs["stroke"] == "#444" && e.attrs["fill"] == "none" {
			x := attrF(t, e, "x")
			return x, x + attrF(t, e, "width"), attrF(t, e, "y") + attrF(t, e, "height")
		}
	}
	t.Fatalf("chart %q has no plot frame", d.title)
	return 0, 0, 0
}

// xTicks are the x axis's tick labels and their pixel columns: the
// centred labels just under the plot.
func (d svgDoc) xTicks(t *testing.T) ([]string, []float64) {
	t.Helper()
	_, _, bottom := d.frame(t)
	var labels []string
	var xs []float64
	for _, e := range d.els {
		if e.name != "text" || e.attrs["text-anchor"] != "middle" || e.attrs["y"] == "" {
			continue
		}
		if y := attrF(t, e, "y"); math.Abs(y-(bottom+15)) < 0.01 {
			labels = append(labels, e.text)
			xs = append(xs, attrF(t, e, "x"))
		}
	}
	return labels, xs
}

// swatch is the legend mark drawn just before the legend text label.
func (d svgDoc) swatch(t *testing.T, label string) svgEl {
	t.Helper()
	for i, e := range d.els {
		if e.name == "text" && e.text == label && i > 0 && e.attrs["dominant-baseline"] == "middle" && e.attrs["text-anchor"] == "" {
			return d.els[i-1]
		}
	}
	t.Fatalf("chart %q has no legend entry %q", d.title, label)
	return svgEl{}
}

// fiveSecondRun writes the result of a 5 s run as a real one ends: the
// last interval closes a millisecond after second 5.
func fiveSecondRun(t *testing.T) *result.Run {
	t.Helper()
	f := runA()
	f.events = nil
	h := f.header()
	h.WarmupSeconds = 0
	dir := filepath.Join(t.TempDir(), "five")
	w, err := result.Create(dir, h)
	must(t, err)
	var ivs []result.Interval
	for i := range 5 {
		iv := f.interval(t, i+fixtureWarmup) // not a warm-up second
		iv.Start, iv.End, iv.Warmup = float64(i)+0.001*float64(i), float64(i+1)+0.001*float64(i+1), false
		ivs = append(ivs, iv)
		must(t, w.Interval(iv))
	}
	s, err := (&result.Run{Intervals: ivs}).Summarize()
	must(t, err)
	must(t, w.Summary(s))
	must(t, w.Close())
	r, err := result.Read(dir)
	must(t, err)
	return r
}

// The HTML report's charts, parsed as SVG (issue 40, finding 10): the
// time axes of a 5 s run end at second 5 (they ran to 6), a legend swatch
// is drawn in the colour of the marks it explains (p99/p50 and mean/p99
// were black and grey beside blue lines and bars), and a chart takes the
// width of its column (it was 640 px on any page).
func TestChartsAxesSwatchesWidth(t *testing.T) {
	t.Parallel()
	docs := parseSVGs(t, renderHTML(t, fiveSecondRun(t)))
	if len(docs) == 0 {
		t.Fatal("no charts")
	}
	for _, d := range docs {
		if w := d.root["width"]; w != "100%" || d.root["viewBox"] == "" {
			t.Errorf("chart %q: width %q, viewBox %q; want width 100%% and a viewBox", d.title, w, d.root["viewBox"])
		}
	}
	for _, title := range []string{"post: p50 and p99 latency over time", "post: throughput over time", "post: errors over time"} {
		d := chartTitled(t, docs, title)
		_, right, _ := d.frame(t)
		labels, xs := d.xTicks(t)
		if len(labels) == 0 {
			t.Fatalf("%s: no x ticks", title)
		}
		last := len(labels) - 1
		if labels[last] != "5" || math.Abs(xs[last]-right) > 1 {
			t.Errorf("%s: the time axis ends at tick %q (x %.1f) with the plot's right edge at %.1f; want it to end at 5 s, the run's last second (ticks %q)",
				title, labels[last], xs[last], right, labels)
		}
	}

	d := chartTitled(t, docs, "post: p50 and p99 latency over time")
	strokes := map[string]bool{}
	dashes := map[string]string{} // stroke-dasharray -> stroke
	for _, e := range d.els {
		if e.name == "polyline" {
			strokes[e.attrs["stroke"]] = true
			dashes[e.attrs["stroke-dasharray"]] = e.attrs["stroke"]
		}
	}
	if len(strokes) != 1 {
		t.Fatalf("one run's latency lines in %d colours: %v", len(strokes), strokes)
	}
	for label, dash := range map[string]string{"p99": "", "p50": dashP50} {
		sw := d.swatch(t, label)
		if sw.name != "line" || sw.attrs["stroke"] != dashes[dash] || sw.attrs["stroke-dasharray"] != dash {
			t.Errorf("legend %s: %s stroke %q dash %q; its line: stroke %q dash %q", label, sw.name, sw.attrs["stroke"], sw.attrs["stroke-dasharray"], dashes[dash], dash)
		}
	}

	g := chartTitled(t, docs, "post: latency by author followers")
	fills := map[string]string{} // fill-opacity -> fill of the bars
	for i, e := range g.els {
		// A bar: a rect with its tooltip inside.
		if e.name == "rect" && i+1 < len(g.els) && g.els[i+1].name == "title" && strings.Contains(g.els[i+1].text, " ops, ") {
			fills[e.attrs["fill-opacity"]] = e.attrs["fill"]
		}
	}
	if len(fills) != 2 {
		t.Fatalf("bars with opacities %v, want the mean's and the p99's", fills)
	}
	for label, opacity := range map[string]string{"mean": "1.0", "p99": "0.3"} {
		sw := g.swatch(t, label)
		if sw.name != "rect" || sw.attrs["fill"] != fills[sw.attrs["fill-opacity"]] || fills[opacity] == "" {
			t.Errorf("legend %s: %s fill %q opacity %q; the bars: %v", label, sw.name, sw.attrs["fill"], sw.attrs["fill-opacity"], fills)
		}
	}
}
