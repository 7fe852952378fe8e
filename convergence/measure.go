package convergence

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/stats"
)

// Defaults and bounds of Measure's arguments.
const (
	DefaultPoll    = time.Millisecond
	MaxPoll        = time.Second
	DefaultTimeout = 10 * time.Second
	MaxTimeout     = 10 * time.Minute
	MaxRounds      = 100000
)

// Reported says which interval the headline figures are: the study timed
// "the time it takes" for readers to see a new tweet after it was posted;
// a write is posted when the database acknowledged it, and a node has
// shown the value once a read that returned it has completed. The same
// samples measured from the write's start are in FromStart; the lower
// bound (the start of the read that first returned the value) is in
// ReadStart.
const Reported = "time from the write's acknowledgement to the completion of the first direct read of the node that returned the value"

// Stats summarize the time-to-visible samples of one node, or of all
// nodes, or of whole rounds. Timeouts are not samples: they are counted.
type Stats struct {
	Count    int           `json:"count"`    // samples (values seen within the timeout)
	Timeouts int           `json:"timeouts"` // never seen within the timeout
	Mean     time.Duration `json:"mean_ns"`
	SD       time.Duration `json:"sd_ns"` // sample standard deviation (n-1); 0 below 2 samples
	Min      time.Duration `json:"min_ns"`
	P50      time.Duration `json:"p50_ns"` // nearest-rank percentiles
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
}

// String is a one-line summary in milliseconds.
func (s Stats) String() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	return fmt.Sprintf("n=%d timeouts=%d mean=%sms sd=%sms p50=%sms p99=%sms max=%sms",
		s.Count, s.Timeouts, ms(s.Mean), ms(s.SD), ms(s.P50), ms(s.P99), ms(s.Max))
}

// Summarize computes Stats of samples (exact: the rounds are few, every
// sample is kept). Percentiles are nearest-rank: the p-th is the smallest
// sample with at least p % of the samples at or below it.
func Summarize(samples []time.Duration, timeouts int) Stats {
	s := Stats{Count: len(samples), Timeouts: timeouts}
	if len(samples) == 0 {
		return s
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	xs := make([]float64, len(sorted))
	for i, d := range sorted {
		xs[i] = float64(d)
	}
	s.Mean = time.Duration(math.Round(stats.Mean(xs)))
	if len(xs) > 1 {
		s.SD = time.Duration(math.Round(stats.SD(xs)))
	}
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.P50 = Percentile(sorted, 50)
	s.P99 = Percentile(sorted, 99)
	return s
}

// Percentile is the nearest-rank p-th percentile of sorted (ascending).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// NodeResult is what one polled node showed over all rounds.
type NodeResult struct {
	Node string `json:"node"`
	// FromAck are the reported times (see Reported), one per round in
	// which the node showed the value; FromStart the same from the write's
	// start; ReadStart the start of the read that first returned the
	// value, from the acknowledgement (a lower bound).
	FromAck   Stats `json:"from_ack"`
	FromStart Stats `json:"from_start"`
	ReadStart Stats `json:"read_start"`
	// Samples are the FromAck samples in round order.
	Samples []time.Duration `json:"samples_ns"`
	// FirstRead counts rounds in which the very first read already
	// returned the value: then the true time to visible is below what the
	// figures can resolve (a read's own latency).
	FirstRead  int    `json:"first_read"`
	Reads      int    `json:"reads"`
	ReadErrors int    `json:"read_errors"`
	WrongValue int    `json:"wrong_value"` // the key held another value (never expected)
	LastError  string `json:"last_error,omitempty"`
}

// Result is one Measure run.
type Result struct {
	Settings map[string]string `json:"settings"`
	Nodes    []string          `json:"nodes"`
	Writers  map[string]int    `json:"writers"` // node -> rounds written through it
	Rounds   int               `json:"rounds"`
	Poll     time.Duration     `json:"poll_ns"`
	Timeout  time.Duration     `json:"timeout_ns"`
	Reported string            `json:"reported"`
	// Overall pools the FromAck samples of every polled node.
	Overall Stats `json:"overall"`
	// OverallFromStart pools the FromStart samples.
	OverallFromStart Stats `json:"overall_from_start"`
	// AllVisible is per round the time until the last polled node showed
	// the value (the study's "observed by every workload node"); a round
	// in which any node timed out counts as a timeout.
	AllVisible Stats        `json:"all_visible"`
	Write      Stats        `json:"write"` // write latency (start to acknowledgement)
	PerNode    []NodeResult `json:"per_node"`
	// WriteErrors counts rounds whose write failed (nothing polled).
	WriteErrors    int           `json:"write_errors"`
	LastWriteError string        `json:"last_write_error,omitempty"`
	Started        time.Time     `json:"started"`
	Elapsed        time.Duration `json:"elapsed_ns"`
}

// sample is one node's outcome in one round.
type sample struct {
	fromAck, fromStart, readStart time.Duration
	visible, firstRead            bool
	reads, errors, wrong          int
	lastErr                       error
}

// Measure runs rounds rounds against p. Each round writes a fresh key
// (its value names the round), notes when the write started and when it
// was acknowledged, then polls every node but the writer — concurrently,
// one goroutine per node — every poll until the node returns the value or
// timeout has passed since the acknowledgement. A node that never shows
// the value in time is counted as a timeout, never dropped. poll 0 means
// DefaultPoll and timeout 0 DefaultTimeout. Measure stops early only when
// ctx ends or no write succeeds at all.
func Measure(ctx context.Context, p Prober, rounds int, poll, timeout time.Duration) (Result, error) {
	if poll == 0 {
		poll = DefaultPoll
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	switch {
	case rounds < 1 || rounds > MaxRounds:
		return Result{}, fmt.Errorf("convergence: rounds = %d, want 1..%d", rounds, MaxRounds)
	case poll < 0 || poll > MaxPoll:
		return Result{}, fmt.Errorf("convergence: poll interval %v, want (0, %v]", poll, MaxPoll)
	case timeout < 0 || timeout > MaxTimeout:
		return Result{}, fmt.Errorf("convergence: timeout %v, want (0, %v]", timeout, MaxTimeout)
	}
	nodes := p.Nodes()
	res := Result{Settings: p.Settings(), Nodes: nodes, Writers: map[string]int{}, Rounds: rounds,
		Poll: poll, Timeout: timeout, Reported: Reported, Started: time.Now().UTC()}
	per := map[string]*NodeResult{}
	type acc struct{ ack, start, readStart []time.Duration }
	accs := map[string]*acc{}
	timeouts := map[string]int{}
	var writes, allVisible []time.Duration
	allTimeouts := 0
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for r := 0; r < rounds; r++ {
		key := "c" + run + "-" + strconv.Itoa(r)
		value := "round " + strconv.Itoa(r) + " of run " + run
		start := time.Now()
		writer, err := p.Write(ctx, key, value)
		ack := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("convergence: round %d: %w", r, ctx.Err())
			}
			res.WriteErrors++
			res.LastWriteError = err.Error()
			continue
		}
		writes = append(writes, ack.Sub(start))
		res.Writers[writer]++
		var targets []string
		for _, n := range nodes {
			if n != writer {
				targets = append(targets, n)
			}
		}
		out := make([]sample, len(targets))
		var wg sync.WaitGroup
		for i, node := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = pollNode(ctx, p, node, key, value, start, ack, poll, timeout)
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return res, fmt.Errorf("convergence: round %d: %w", r, ctx.Err())
		}
		var last time.Duration
		all := true
		for i, node := range targets {
			s := out[i]
			nr := per[node]
			if nr == nil {
				nr = &NodeResult{Node: node}
				per[node] = nr
				accs[node] = &acc{}
			}
			nr.Reads += s.reads
			nr.ReadErrors += s.errors
			nr.WrongValue += s.wrong
			if s.lastErr != nil {
				nr.LastError = s.lastErr.Error()
			}
			if !s.visible {
				timeouts[node]++
				all = false
				continue
			}
			if s.firstRead {
				nr.FirstRead++
			}
			a := accs[node]
			a.ack = append(a.ack, s.fromAck)
			a.start = append(a.start, s.fromStart)
			a.readStart = append(a.readStart, s.readStart)
			last = max(last, s.fromAck)
		}
		if all {
			allVisible = append(allVisible, last)
		} else {
			allTimeouts++
		}
	}
	res.Elapsed = time.Since(res.Started)
	if len(writes) == 0 {
		return res, fmt.Errorf("convergence: every one of %d writes failed, the last with: %s", rounds, res.LastWriteError)
	}
	var pooled, pooledStart []time.Duration
	pooledTimeouts := 0
	for _, n := range nodes {
		nr := per[n]
		if nr == nil {
			continue // the writer of every round
		}
		a := accs[n]
		nr.Samples = a.ack
		nr.FromAck = Summarize(a.ack, timeouts[n])
		nr.FromStart = Summarize(a.start, timeouts[n])
		nr.ReadStart = Summarize(a.readStart, timeouts[n])
		res.PerNode = append(res.PerNode, *nr)
		pooled = append(pooled, a.ack...)
		pooledStart = append(pooledStart, a.start...)
		pooledTimeouts += timeouts[n]
	}
	res.Overall = Summarize(pooled, pooledTimeouts)
	res.OverallFromStart = Summarize(pooledStart, pooledTimeouts)
	res.AllVisible = Summarize(allVisible, allTimeouts)
	res.Write = Summarize(writes, 0)
	return res, nil
}

// pollNode reads node until it returns value or timeout has passed since
// ack. A read still in flight at the deadline is cut off by its context.
func pollNode(ctx context.Context, p Prober, node, key, value string, start, ack time.Time, poll, timeout time.Duration) sample {
	var s sample
	deadline := ack.Add(timeout)
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		rs := time.Now()
		v, found, err := p.Read(rctx, node, key)
		re := time.Now()
		s.reads++
		switch {
		case err != nil:
			if rctx.Err() == nil { // not a read cut off by the deadline
				s.errors++
				s.lastErr = err
			}
		case found && v == value:
			if re.Sub(ack) > timeout {
				return s // seen, but too late: a timeout
			}
			s.visible, s.firstRead = true, s.reads == 1
			s.fromAck, s.fromStart, s.readStart = re.Sub(ack), re.Sub(start), rs.Sub(ack)
			return s
		case found:
			s.wrong++
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return s
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-rctx.Done():
			t.Stop()
			return s
		case <-t.C:
		}
	}
}
