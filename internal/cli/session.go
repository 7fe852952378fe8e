package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
)

// session is one measured run: it owns the result file and the recorder and
// turns every tick into a result line and the progress line. Workload
// commands prepare the database and the workers; the session does the rest
// the same way for every workload.
type session struct {
	dir       string
	w         *result.Writer
	rec       *recorder.Recorder
	header    result.Header
	intervals []result.Interval
	// mu guards points and events: experiments write them from the
	// timeline and probe goroutines while the load runs.
	mu     sync.Mutex
	points []result.Point
	events []result.Event
	extra  map[string]float64
	stdout io.Writer
	stderr io.Writer
	self   *probe.SelfMeter // the client's own cost, recorded in the summary
}

func startSession(dir string, h result.Header, stdout, stderr io.Writer) (*session, error) {
	h.Started = time.Now().UTC()
	w, err := result.Create(dir, h)
	if err != nil {
		return nil, err
	}
	return &session{
		dir: dir, w: w, header: h,
		rec:    recorder.New(h.Operations, h.Started),
		extra:  map[string]float64{},
		stdout: stdout, stderr: stderr,
		self: probe.StartSelf(0),
	}, nil
}

// event records something that happened now.
func (s *session) event(name, detail string) error {
	e := result.Event{At: s.since(), Name: name, Detail: detail}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	return s.w.Event(e)
}

// drive runs the workers, writing every interval as it completes.
func (s *session) drive(ctx context.Context, cfg runner.Config, workers []runner.Worker) (runner.Outcome, error) {
	p := newProgress(s.stderr, cfg.Duration, s.rec.Ops())
	defer p.done()
	return runner.Run(ctx, cfg, s.rec, workers, func(snap recorder.Snapshot, warm bool) error {
		p.update(snap)
		return s.writeInterval(snap, warm, false)
	})
}

// startClock ticks the recorder every second for work driven in counted
// steps (runner.Batch): each interval is written and shown like in drive.
// Stop the clock with stopClock.
func (s *session) startClock(warmup time.Duration) (*runner.Clock, *progress) {
	p := newProgress(s.stderr, 0, s.rec.Ops())
	c := runner.StartClock(s.rec, time.Second, warmup, func(snap recorder.Snapshot, warm bool) error {
		p.update(snap)
		return s.writeInterval(snap, warm, false)
	})
	return c, p
}

// stopClock writes the last partial interval and ends the progress line.
func stopClock(c *runner.Clock, p *progress) error {
	err := c.Stop()
	p.done()
	return err
}

// point writes one measurement of a Point series (declare the series in
// Header.Series).
func (s *session) point(p result.Point) error {
	s.mu.Lock()
	s.points = append(s.points, p)
	s.mu.Unlock()
	return s.w.Point(p)
}

// since is seconds from the run's start, for event and point times.
func (s *session) since() float64 { return time.Since(s.header.Started).Seconds() }

// drain records one more interval after the clients stopped (see
// result.Interval.Drain).
func (s *session) drain() error {
	return s.writeInterval(s.rec.Tick(time.Now()), false, true)
}

func (s *session) writeInterval(snap recorder.Snapshot, warm, drain bool) error {
	iv, err := s.rec.Interval(snap, warm)
	if err != nil {
		return err
	}
	iv.Drain = drain
	s.intervals = append(s.intervals, iv)
	return s.w.Interval(iv)
}

// finish writes the summary, closes the file, writes the HTML report and
// prints the terminal table. It runs after an interrupt too: nothing
// measured is lost.
func (s *session) finish(interrupted bool) error {
	s.mu.Lock()
	run := &result.Run{Dir: s.dir, Header: s.header, Intervals: s.intervals, Points: s.points, Events: s.events}
	s.mu.Unlock()
	sum, err := run.Summarize()
	if err != nil {
		return errors.Join(err, s.w.Close())
	}
	sum.Interrupted = interrupted
	sum.Extra = s.extra
	cost := s.self.Stop(s.header.Clients())
	sum.Client = &cost
	if w := cost.Warning(); w != "" {
		fmt.Fprintln(s.stderr, "fieldbench: "+w)
	}
	run.Summary = &sum
	werr := s.w.Summary(sum)
	if cerr := s.w.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	fmt.Fprintln(s.stdout)
	if err := report.Terminal(s.stdout, run); err != nil {
		return err
	}
	out := filepath.Join(s.dir, "report.html")
	if err := writeHTML(out, []*result.Run{run}); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "\nresult: %s\nreport: %s\n", s.w.Path(), out)
	return nil
}

// detached gives post-run work (summary queries, catch-up) a context that an
// interrupt does not cancel, bounded so it cannot hang.
func detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// newHeader fills what every run's header has; the caller adds options,
// operations, groups and series.
func newHeader(workloadName string, a adapter.Adapter, info adapter.Info, dsn string, seed int64, ops []string) result.Header {
	return result.Header{
		Version: Version, Workload: workloadName, Adapter: a.Name(), DSN: adapter.Redact(dsn),
		Database: info, Seed: seed, Machine: probe.Machine(), Operations: ops,
		Options: map[string]any{}, Cluster: clusterInfo(activeCluster),
	}
}

// activeCluster is the cluster withCluster started for the current command
// (nil otherwise); newHeader records it in the result file.
var activeCluster *cluster.Cluster

func clusterInfo(c *cluster.Cluster) *result.ClusterInfo {
	if c == nil {
		return nil
	}
	ci := &result.ClusterInfo{Engine: c.Engine, Version: c.Version, Dir: c.Dir, Options: c.Options}
	for _, n := range c.Nodes {
		ci.Nodes = append(ci.Nodes, result.ClusterNode{Name: n.Name, Addr: n.Addr(), Role: n.Role, Log: n.LogFile})
	}
	return ci
}

// defaultSQLite is the DSN of the embedded default database in dir.
func defaultSQLite(dir, workloadName string) string {
	return "sqlite://" + filepath.Join(dir, workloadName+".db")
}
