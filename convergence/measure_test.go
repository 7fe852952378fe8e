package convergence

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		samples  []time.Duration
		timeouts int
		want     Stats
	}{
		{name: "empty", timeouts: 3, want: Stats{Timeouts: 3}},
		{name: "one sample: no spread", samples: []time.Duration{ms(7)},
			want: Stats{Count: 1, Mean: ms(7), Min: ms(7), P50: ms(7), P99: ms(7), Max: ms(7)}},
		// 1,2,3,4,10 ms (given unsorted): mean 4; squared deviations
		// 9+4+1+0+36 = 50, /(5-1) = 12.5, sd = 3.5355339 ms; nearest rank
		// p50 = 3rd (ceil 2.5), p99 = 5th (ceil 4.95).
		{name: "five", samples: []time.Duration{ms(10), ms(2), ms(4), ms(1), ms(3)}, timeouts: 1,
			want: Stats{Count: 5, Timeouts: 1, Mean: ms(4), SD: time.Duration(math.Round(math.Sqrt(12.5) * 1e6)),
				Min: ms(1), P50: ms(3), P99: ms(10), Max: ms(10)}},
		// 1..100 µs: mean 50.5, p50 = 50th = 50, p99 = 99th = 99;
		// sd = sqrt(n(n+1)/12) = sqrt(841.666…) = 29.011 µs.
		{name: "hundred", samples: func() []time.Duration {
			var s []time.Duration
			for i := 100; i >= 1; i-- {
				s = append(s, time.Duration(i)*time.Microsecond)
			}
			return s
		}(), want: Stats{Count: 100, Mean: 50500, SD: time.Duration(math.Round(math.Sqrt(100*101/12.0) * 1000)),
			Min: time.Microsecond, P50: 50 * time.Microsecond, P99: 99 * time.Microsecond, Max: 100 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.samples...)
			got := Summarize(tt.samples, tt.timeouts)
			if got != tt.want {
				t.Errorf("Summarize = %+v\nwant        %+v", got, tt.want)
			}
			for i := range in {
				if in[i] != tt.samples[i] {
					t.Fatal("Summarize reordered its argument")
				}
			}
		})
	}
}

// TestOpenUnsupported: the refusals of this package's own. Those a
// database folder registers (mongodb, rethinkdb: one server, no
// replication) are tested in db/all (TestConvergenceInapplicable), where
// the folders are linked; this package's tests cannot link them.
func TestOpenUnsupported(t *testing.T) {
	t.Parallel()
	node := func(name string) *cluster.Node { return &cluster.Node{Name: name, Host: "127.0.0.1", Port: 1} }
	tests := []struct {
		name string
		c    *cluster.Cluster
		want string
	}{
		{"hbase", &cluster.Cluster{Engine: "hbase", Nodes: []*cluster.Node{node("a"), node("b")}}, `engine "hbase"`},
		{"unknown", &cluster.Cluster{Engine: "nosuch"}, `engine "nosuch"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Open(t.Context(), tt.c, Options{})
			if err == nil {
				p.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, cluster.ErrUnsupported) {
				t.Errorf("error %v does not wrap cluster.ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// lagProber is an in-process store whose "replicas" show a write from
// their lag-th read of it on, or never: it checks Measure's accounting
// against known answers, which no real database can give. Lag counts reads,
// not time, so no verdict depends on the machine's speed: a write seen on
// the 5th read was polled at least 4 times, whatever the scheduler did.
type lagProber struct {
	mu    sync.Mutex
	vals  map[string]string
	reads map[string]int // node + key -> reads so far
	lag   map[string]int // reads before visible; < 0: never visible
}

func newLagProber(lag map[string]int) *lagProber {
	return &lagProber{vals: map[string]string{}, reads: map[string]int{}, lag: lag}
}

func (p *lagProber) Nodes() []string             { return []string{"w", "fast", "slow", "dead"} }
func (p *lagProber) Settings() map[string]string { return map[string]string{"engine": "lag"} }
func (p *lagProber) Close() error                { return nil }
func (p *lagProber) Write(_ context.Context, k, v string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.vals[k] = v
	return "w", nil
}

func (p *lagProber) Read(ctx context.Context, node, k string) (string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads[node+"/"+k]++
	lag := p.lag[node]
	if lag < 0 || p.reads[node+"/"+k] <= lag {
		return "", false, nil
	}
	return p.vals[k], true, nil
}

func TestMeasureTiming(t *testing.T) {
	t.Parallel()
	const slowReads = 4
	p := newLagProber(map[string]int{"fast": 0, "slow": slowReads, "dead": -1})
	// A timeout far beyond what 5 polls take on any machine; only the
	// dead node waits for it.
	const rounds, poll, timeout = 3, 2 * time.Millisecond, 2 * time.Second
	res, err := Measure(t.Context(), p, rounds, poll, timeout)
	if err != nil {
		t.Fatal(err)
	}
	if res.Writers["w"] != rounds || res.WriteErrors != 0 || res.Write.Count != rounds {
		t.Errorf("writers %v, write errors %d, writes %d", res.Writers, res.WriteErrors, res.Write.Count)
	}
	by := map[string]NodeResult{}
	for _, nr := range res.PerNode {
		by[nr.Node] = nr
	}
	if len(by) != 3 || by["w"].Node != "" {
		t.Fatalf("per node %v: want fast, slow, dead and not the writer", res.PerNode)
	}
	if f := by["fast"]; f.FromAck.Count != rounds || f.FirstRead != rounds || f.Reads != rounds {
		t.Errorf("fast: %+v", f)
	}
	// Seen on read slowReads+1: at least slowReads polls after the ack.
	if s := by["slow"]; s.FromAck.Count != rounds || s.FromAck.Min < slowReads*poll || s.FirstRead != 0 || s.Reads != rounds*(slowReads+1) {
		t.Errorf("slow: %s (first read %d, reads %d)", s.FromAck, s.FirstRead, s.Reads)
	}
	for _, nr := range by {
		for i, d := range nr.Samples {
			if d < 0 {
				t.Errorf("%s sample %d = %v", nr.Node, i, d)
			}
		}
		if nr.FromStart.Count > 0 && nr.FromStart.Min < nr.FromAck.Min {
			t.Errorf("%s: from start %v < from ack %v", nr.Node, nr.FromStart.Min, nr.FromAck.Min)
		}
	}
	if d := by["dead"]; d.FromAck.Count != 0 || d.FromAck.Timeouts != rounds || d.Reads < rounds*2 {
		t.Errorf("dead: %s, %d reads", d.FromAck, d.Reads)
	}
	if res.Overall.Count != 2*rounds || res.Overall.Timeouts != rounds {
		t.Errorf("overall %s", res.Overall)
	}
	if res.AllVisible.Count != 0 || res.AllVisible.Timeouts != rounds {
		t.Errorf("all visible %s: every round has a dead node", res.AllVisible)
	}
}

func TestMeasureArguments(t *testing.T) {
	t.Parallel()
	p := newLagProber(map[string]int{})
	for _, tc := range []struct {
		rounds        int
		poll, timeout time.Duration
	}{{0, 0, 0}, {1, -1, 0}, {1, 2 * time.Second, 0}, {1, 0, -time.Second}, {1, 0, time.Hour}} {
		if _, err := Measure(t.Context(), p, tc.rounds, tc.poll, tc.timeout); err == nil {
			t.Errorf("Measure(rounds %d, poll %v, timeout %v) accepted", tc.rounds, tc.poll, tc.timeout)
		}
	}
	res, err := Measure(t.Context(), p, 1, 0, 0)
	if err != nil || res.Poll != DefaultPoll || res.Timeout != DefaultTimeout {
		t.Errorf("defaults: poll %v timeout %v err %v", res.Poll, res.Timeout, err)
	}
}
