package live

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fieldbench/fieldbench/result"
)

// The endpoint is scraped as Prometheus would: counters, errors by kind and
// the latency histogram match what was fed.
func TestScrape(t *testing.T) {
	s, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start("wiki", "sqlite")
	for i := range 3 {
		h := result.NewHist()
		for range 10 {
			if err := h.RecordValue(2000); err != nil { // 2 ms
				t.Fatal(err)
			}
		}
		enc, err := result.EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		s.Interval(result.Interval{Start: float64(i), End: float64(i + 1), Ops: map[string]result.OpInterval{
			"read": {Count: 10, Hist: enc, Errors: map[string]int64{"timeout": 1}}}})
	}
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, want := range []string{
		`fieldbench_operations_total{adapter="sqlite",operation="read",workload="wiki"} 30`,
		`fieldbench_errors_total{adapter="sqlite",kind="timeout",operation="read",workload="wiki"} 3`,
		`fieldbench_latency_seconds_bucket{adapter="sqlite",operation="read",workload="wiki",le="0.001"} 0`,
		`fieldbench_latency_seconds_bucket{adapter="sqlite",operation="read",workload="wiki",le="0.0025"} 30`,
		`fieldbench_latency_seconds_count{adapter="sqlite",operation="read",workload="wiki"} 30`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}

func TestListenRefusesRemote(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:9464", ":9464", "nonsense"} {
		if s, err := Listen(addr, false); err == nil {
			s.Close()
			t.Errorf("Listen(%q) served without --metrics-allow-remote", addr)
		}
	}
}

// scrape reads the endpoint as Prometheus does, with the Prometheus
// client's own text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("%s: want one series, got %v", name, f)
	}
	m := f.GetMetric()[0]
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// fieldbench_run_ended says whether the counters are a run's final totals:
// 0 from Start, 1 from End (and Linger), 0 again when the next run starts.
// Linger serves the final state until its time is up or its context is
// done, and not at all once the context is done.
func TestRunEndedAndLinger(t *testing.T) {
	s, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	feed := func(n int64) {
		enc, err := result.EncodeHist(result.NewHist())
		if err != nil {
			t.Fatal(err)
		}
		s.Interval(result.Interval{Ops: map[string]result.OpInterval{"read": {Count: n, Hist: enc}}})
	}
	s.Start("wiki", "sqlite")
	feed(7)
	if v := value(t, scrape(t, s.Addr()), "fieldbench_run_ended"); v != 0 {
		t.Errorf("run going on: fieldbench_run_ended %v, want 0", v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Linger(ctx, time.Hour); close(done) }()
	feed(5) // the drain: the last interval, after the clients stopped
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams := scrape(t, s.Addr())
		if value(t, fams, "fieldbench_run_ended") == 1 {
			if got := value(t, fams, "fieldbench_operations_total"); got != 12 {
				t.Errorf("after the run: %v operations, want the final total 12", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fieldbench_run_ended never turned 1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("Linger returned before its hour or its context")
	default:
	}
	cancel() // Ctrl-C
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Linger went on after its context was done")
	}

	start := time.Now()
	s.Linger(ctx, time.Hour) // context already done: no wait
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Linger with a done context waited %v", d)
	}
	start = time.Now()
	s.Linger(context.Background(), 50*time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Linger(50ms) returned after %v", d)
	}

	s.Start("wiki", "sqlite")
	if v := value(t, scrape(t, s.Addr()), "fieldbench_run_ended"); v != 0 {
		t.Errorf("next run: fieldbench_run_ended %v, want 0", v)
	}
}

// Before the run starts (the dataset loading) the endpoint serves no
// series: it served fieldbench_run_ended{workload="",adapter=""}, a second
// series beside the run's once it started (issue 40, finding 10). From
// Start on, every series carries the run's labels.
func TestNoSeriesBeforeStart(t *testing.T) {
	s, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	empty := func(fams map[string]*dto.MetricFamily) []string {
		var out []string
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if (l.GetName() == "workload" || l.GetName() == "adapter") && l.GetValue() == "" {
						out = append(out, name)
					}
				}
			}
		}
		return out
	}
	if fams := scrape(t, s.Addr()); len(fams) != 0 {
		t.Errorf("before Start: %d families served (with empty labels: %v), want none", len(fams), empty(fams))
	}
	s.Start("microblog", "sqlite")
	fams := scrape(t, s.Addr())
	if bad := empty(fams); len(bad) > 0 {
		t.Errorf("series with empty labels after Start: %v", bad)
	}
	if v := value(t, fams, "fieldbench_run_ended"); v != 0 {
		t.Errorf("fieldbench_run_ended = %v while the run goes on", v)
	}
	if l := fams["fieldbench_run_ended"].GetMetric()[0].GetLabel(); len(l) != 2 || l[0].GetValue() != "sqlite" || l[1].GetValue() != "microblog" {
		t.Errorf("fieldbench_run_ended labels %v", l)
	}
}
