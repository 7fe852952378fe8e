package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
)

// A run asked for the standard outputs writes them beside its result; the
// HDR log reads back with the library's log reader.
func TestRunWritesStandardOutputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, stderr := execute(context.Background(), "run", "microblog", "--users", "20", "--clients", "2", "--duration", "2s",
		"--hdr-log", "--summary-csv", "--summary-json", "--metrics-addr", "127.0.0.1:0", "--results", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*", "hdr", "timeline.hlog"))
	if len(m) != 1 {
		t.Fatalf("no timeline.hlog under %s", dir)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	rd := hdrhistogram.NewHistogramLogReader(bytes.NewReader(b))
	n := 0
	for h, err := rd.NextIntervalHistogram(); h != nil && err == nil; h, err = rd.NextIntervalHistogram() {
		n++
	}
	if n < 2 {
		t.Errorf("%d interval histograms in %s, want one a second", n, m[0])
	}
	for _, f := range []string{"summary.csv", "summary.json"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*", f)); len(m) != 1 {
			t.Errorf("no %s", f)
		}
	}
	if code, _, _ := execute(context.Background(), "run", "microblog", "--metrics-addr", "0.0.0.0:9464", "--results", dir); code != cli.ExitUsage {
		t.Errorf("a non-loopback metrics address: exit %d, want %d", code, cli.ExitUsage)
	}
}

// lockedBuffer is a stderr the test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With --metrics-linger the endpoint outlives the run: a scrape after the
// run ended (fieldbench_run_ended 1, read with the Prometheus client's
// parser) finds the final totals, every operation of the result file
// counted; Ctrl-C during the linger ends the command at once, exit 0 (the
// run itself was complete).
func TestMetricsLingerServesFinalTotals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	var stderr lockedBuffer
	codec := make(chan int, 1)
	go func() {
		codec <- cli.Execute(ctx, []string{"run", "microblog", "--users", "20", "--clients", "2", "--duration", "2s",
			"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "10m", "--results", dir}, &stdout, &stderr)
	}()
	addrRe := regexp.MustCompile(`metrics: http://(\S+)/metrics`)
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(3 * time.Minute)
	for fams == nil {
		select {
		case code := <-codec:
			t.Fatalf("exit %d before the linger ended: %s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ended run on the endpoint in 3 minutes: %s", stderr.String())
		}
		m := addrRe.FindStringSubmatch(stderr.String())
		if m == nil {
			continue
		}
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		f, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if e := f["fieldbench_run_ended"]; e != nil && e.GetMetric()[0].GetGauge().GetValue() == 1 {
			fams = f
		}
	}
	if !strings.Contains(stderr.String(), "serving its final figures") {
		t.Errorf("the linger is not announced: %s", stderr.String())
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*", "result.jsonl"))
	if len(runs) != 1 {
		t.Fatalf("result files %v", runs)
	}
	run, err := result.Read(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, iv := range run.Intervals {
		for op, oi := range iv.Ops {
			want[op] += float64(oi.Count)
		}
	}
	got := map[string]float64{}
	for _, m := range fams["fieldbench_operations_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "operation" {
				got[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("scraped after the run: %v operations, the result file's totals are %v", got, want)
	}
	cancel() // Ctrl-C during the linger
	select {
	case code := <-codec:
		if code != cli.ExitOK {
			t.Errorf("Ctrl-C during the linger: exit %d, want %d", code, cli.ExitOK)
		}
	case <-time.After(time.Minute):
		t.Fatal("Ctrl-C did not end the linger")
	}
}

func TestMetricsLingerBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--metrics-linger", "30s"},
		{"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "-1s"},
	} {
		code, _, stderr := execute(context.Background(), append([]string{"run", "microblog", "--duration", "1s", "--results", dir}, args...)...)
		if code != cli.ExitUsage || !strings.Contains(stderr, "--metrics-linger") {
			t.Errorf("%v: exit %d, want %d naming --metrics-linger: %s", args, code, cli.ExitUsage, stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("bad input left %v", m)
	}
}
