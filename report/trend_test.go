package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func trendFixture(n, change int) Trend {
	s := TrendSeries{ID: "abc123", Label: "microblog on sqlite", About: []string{"workload: microblog", "adapter: sqlite"}}
	c := TrendChart{Op: "post", Figure: "p99"}
	for i := range n {
		s.Runs = append(s.Runs, TrendRun{ID: strings.Repeat("f", 10) + string(rune('a'+i%26)) + "0123", Server: "sqlite 3.54.1",
			Started: time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC).Add(time.Duration(i) * 24 * time.Hour)})
		v := 1000.0
		if i >= change {
			v = 1400
		}
		p := TrendPoint{Run: i, Value: v, Lo: v * 0.9, Hi: v * 1.1}
		if i == 0 {
			p.Lo, p.Hi = math.NaN(), math.NaN()
		}
		c.Points = append(c.Points, p)
	}
	s.Runs[1].Note = "interrupted"
	c.Changes = []TrendChange{{Run: change, Before: 1000, After: 1400, P: 1e-6, NBefore: change, NAfter: n - change, Worse: true}}
	s.Marks = []TrendMark{{Run: change, Text: "server version 3.54.1 → 3.55.0"}}
	s.Charts = []TrendChart{c}
	return Trend{Title: "trends", Notes: []string{"how"}, Series: []TrendSeries{s}}
}

// The page is offline (inline SVG, no script), draws each run, the
// change point with its direction and size, the change inside the series,
// and lists both in tables; the terminal says the same across the rows.
func TestTrendPageAndTerminal(t *testing.T) {
	t.Parallel()
	tr := trendFixture(6, 3)
	var b bytes.Buffer
	if err := TrendHTML(&b, tr); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<svg", "post p99", "+40.0%", `class="worse"`, "server version 3.54.1 → 3.55.0", "4: 2026-11-04 02:00", "interrupted"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Count(page, "<circle") != 6 {
		t.Errorf("scripts, or %d points for 6 runs", strings.Count(page, "<circle"))
	}
	b.Reset()
	if err := TrendTerminal(&b, tr, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i, k, m := strings.Index(out, "WORSE +40.0%: 1.00ms → 1.40ms"), strings.Index(out, "\n  4 "), strings.Index(out, "server version 3.54.1 → 3.55.0")
	if i < 0 || k < 0 || m < 0 || !(m < i && i < k) {
		t.Errorf("the change point and the version change are not said before run 4:\n%s", out)
	}
	b.Reset()
	if err := TrendTerminal(&b, tr, 2); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "4 earlier runs not shown") || strings.Contains(out, "\n  4 ") {
		t.Errorf("--last 2:\n%s", out)
	}
}

// A long series is drawn from its last maxTrendRuns runs, numbered as
// they are in the series.
func TestTrendPageKeepsTheLastRuns(t *testing.T) {
	t.Parallel()
	tr := trendFixture(maxTrendRuns+500, maxTrendRuns+100)
	var b bytes.Buffer
	if err := TrendHTML(&b, tr); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<circle"); n != maxTrendRuns {
		t.Errorf("%d points drawn, want %d", n, maxTrendRuns)
	}
	if !strings.Contains(page, "the last 2,000 of the series' 2,500 runs") || !strings.Contains(page, ">2101: ") {
		t.Errorf("the page does not say which runs it drew")
	}
}
