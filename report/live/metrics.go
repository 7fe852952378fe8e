// Package live serves a run's figures live in the OpenMetrics /
// Prometheus text format while it goes on: operations and errors by kind as
// counters, latency as a histogram per operation. It is fed the same
// per-second intervals the result file gets, so a scrape and the file agree;
// the exposition itself is prometheus/client_golang's.
package live

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fieldbench/fieldbench/result"
)

// Buckets are the latency histogram's upper bounds, in seconds.
var Buckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type opState struct {
	hist   *hdrhistogram.Histogram // every latency so far, µs
	count  int64
	errors map[string]int64
}

// Server is the live endpoint of one command.
type Server struct {
	srv *http.Server
	ln  net.Listener

	mu sync.Mutex
	// started is set by the first Start: until then (the dataset
	// loading) no series is served, since its labels are not known and a
	// series with empty ones would stay beside the run's in the scraper.
	started           bool
	workload, adapter string
	ops               map[string]*opState
	decodeErrors      int64
	ended             bool
}

// Listen serves /metrics on addr. A host that is not loopback is refused
// unless allowRemote: a benchmark's figures are not for every network the
// machine is on unless the user says so.
func Listen(addr string, allowRemote bool) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %q: want HOST:PORT, e.g. 127.0.0.1:9464", addr)
	}
	if ip := net.ParseIP(host); !allowRemote && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return nil, fmt.Errorf("--metrics-addr %q is not a loopback address; pass --metrics-allow-remote to serve on it", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	s := &Server{ln: ln, ops: map[string]*opState{}}
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is where the endpoint listens.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the endpoint.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Start names the run being served (labels of every series) and forgets the
// previous run's figures.
func (s *Server) Start(workload, adapter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workload, s.adapter, s.ops, s.ended, s.started = workload, adapter, map[string]*opState{}, false, true
}

// End marks the run as ended: fieldbench_run_ended turns 1, so a scraper
// can tell the final totals from figures still growing.
func (s *Server) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

// Linger keeps serving, the run ended, for d or until ctx is done
// (Ctrl-C), whichever comes first. A Prometheus scraping every 15 s would
// otherwise never see the last seconds of a run: the process exits in the
// instant after them. Linger returns at once when ctx is already done.
func (s *Server) Linger(ctx context.Context, d time.Duration) {
	s.End()
	if d <= 0 || ctx.Err() != nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Interval adds one second of the run.
func (s *Server) Interval(iv result.Interval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for op, oi := range iv.Ops {
		st := s.ops[op]
		if st == nil {
			st = &opState{hist: result.NewHist(), errors: map[string]int64{}}
			s.ops[op] = st
		}
		st.count += oi.Count
		for k, n := range oi.Errors {
			st.errors[k] += n
		}
		if oi.Count == 0 {
			continue
		}
		h, err := result.DecodeHist(oi.Hist)
		if err != nil {
			s.decodeErrors++
			continue
		}
		st.hist.Merge(h)
	}
}

var (
	descOps     = prometheus.NewDesc("fieldbench_operations_total", "Operations completed successfully.", []string{"workload", "adapter", "operation"}, nil)
	descErrors  = prometheus.NewDesc("fieldbench_errors_total", "Operations failed, by kind of error.", []string{"workload", "adapter", "operation", "kind"}, nil)
	descLatency = prometheus.NewDesc("fieldbench_latency_seconds", "Latency of successful operations (open loop: from the intended start).", []string{"workload", "adapter", "operation"}, nil)
	descEnded   = prometheus.NewDesc("fieldbench_run_ended", "1 once the run has ended (the counters are its final totals), 0 while it goes on.", []string{"workload", "adapter"}, nil)
)

// Describe implements prometheus.Collector.
func (s *Server) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOps
	ch <- descErrors
	ch <- descLatency
	ch <- descEnded
}

// Collect implements prometheus.Collector: the figures so far, none
// before the run started.
func (s *Server) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return
	}
	ended := 0.0
	if s.ended {
		ended = 1
	}
	ch <- prometheus.MustNewConstMetric(descEnded, prometheus.GaugeValue, ended, s.workload, s.adapter)
	ops := make([]string, 0, len(s.ops))
	for op := range s.ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		st := s.ops[op]
		ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(st.count), s.workload, s.adapter, op)
		for kind, n := range st.errors {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), s.workload, s.adapter, op, kind)
		}
		count, sum, buckets := histogram(st.hist)
		ch <- prometheus.MustNewConstHistogram(descLatency, count, sum, buckets, s.workload, s.adapter, op)
	}
}

// histogram turns an HDR histogram (µs) into Prometheus's cumulative
// buckets (seconds). A value counts in a bucket when its HDR bar's highest
// equivalent value is within the bound, so a bucket never holds a value
// above its bound.
func histogram(h *hdrhistogram.Histogram) (uint64, float64, map[float64]uint64) {
	out := make(map[float64]uint64, len(Buckets))
	bars := h.Distribution()
	for _, le := range Buckets {
		limit := int64(le * 1e6)
		var n int64
		for _, b := range bars {
			if b.To <= limit {
				n += b.Count
			}
		}
		out[le] = uint64(n)
	}
	total := h.TotalCount()
	return uint64(total), h.Mean() * float64(total) / 1e6, out
}
