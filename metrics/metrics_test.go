package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"

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
