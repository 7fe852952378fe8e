package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/report/export"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
)

// Session is one measured run: it owns the result file and the recorder and
// turns every tick into a result line and the progress line. Jobs prepare
// the database and the workers; the session does the rest the same way for
// every workload.
type Session struct {
	dir    string
	w      *result.Writer
	rec    *recorder.Recorder
	header result.Header
	// mu guards points, events and extra: observers write them from their
	// own goroutines while the load runs.
	mu     sync.Mutex
	points []result.Point
	events []result.Event
	extra  map[string]float64
	stdout io.Writer
	stderr io.Writer
	out    Outputs
	self   *probe.SelfMeter // the client's own cost, recorded in the summary
	sum    *result.Summary  // set by Finish
	reconn adapter.Reconnector
	// outage says, tick by tick, whether the database is down, and bounds
	// the operations of drive meanwhile (see outage).
	outage *outage
	pools  *poolMeter // nil when the adapter does not report its pools
	// stopLoad closes when an observer ends the load early (StopLoad).
	stopLoad chan struct{}
	stopOnce sync.Once
	// restoreGC puts back the collector's setting of before the run
	// (relaxGC); Finish calls it first.
	restoreGC func()
}

// StartSession creates the result file in dir and starts the clock of the
// run (h.Started is now).
func StartSession(dir string, h result.Header, stdout, stderr io.Writer) (*Session, error) {
	h.Started = time.Now().UTC()
	w, err := result.Create(dir, h)
	if err != nil {
		return nil, err
	}
	return &Session{
		dir: dir, w: w, header: h,
		rec:    recorder.New(h.Operations, h.Started),
		extra:  map[string]float64{},
		stdout: stdout, stderr: stderr,
		stopLoad:  make(chan struct{}),
		outage:    &outage{},
		self:      probe.StartSelf(0),
		restoreGC: relaxGC(),
	}, nil
}

// startRun lets the observer add to the header, starts the session and
// tells the observer. db, when it counts its reconnections, has them
// written into the summary.
func startRun(ctx context.Context, env *Env, dir string, h result.Header, db adapter.DB) (*Session, error) {
	env.observer().Header(&h)
	s, err := StartSession(dir, h, env.Stdout, env.Stderr)
	if err != nil {
		return nil, err
	}
	s.out = env.Outputs
	s.reconn, _ = db.(adapter.Reconnector)
	s.outage.reconn = s.reconn
	if p, ok := db.(adapter.Pooler); ok {
		s.pools = startPools(p)
	}
	if s.out.Live != nil {
		s.out.Live.Start(h.Workload, h.Adapter)
	}
	env.observer().Started(ctx, s)
	return s, nil
}

// Dir is the run directory.
func (s *Session) Dir() string { return s.dir }

// Started is when the run started.
func (s *Session) Started() time.Time { return s.header.Started }

// Event records something that happened now.
func (s *Session) Event(name, detail string) error {
	e := result.Event{At: s.Since(), Name: name, Detail: detail}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	return s.w.Event(e)
}

// SetExtra sets one figure of the summary.
func (s *Session) SetExtra(name string, v float64) {
	s.mu.Lock()
	s.extra[name] = v
	s.mu.Unlock()
}

// AddExtra sets every figure of m.
func (s *Session) AddExtra(m map[string]float64) {
	for k, v := range m {
		s.SetExtra(k, v)
	}
}

// Point writes one measurement of a Point series (declare the series in
// Header.Series).
func (s *Session) Point(p result.Point) error {
	s.mu.Lock()
	s.points = append(s.points, p)
	s.mu.Unlock()
	return s.w.Point(p)
}

// Since is seconds from the run's start, for event and point times.
func (s *Session) Since() float64 { return time.Since(s.header.Started).Seconds() }

// StopLoad ends a load driven for a duration (Traits.Stoppable) before its
// end, as its end would: an experiment's stop action. Safe to call more
// than once and from any goroutine.
func (s *Session) StopLoad() { s.stopOnce.Do(func() { close(s.stopLoad) }) }

// drive runs the workers, writing every interval as it completes. While
// the database is down its operations are bounded (see outage), so an
// outage is counted as errors of its seconds and the run ends on time.
func (s *Session) drive(ctx context.Context, cfg runner.Config, workers []runner.Worker) (runner.Outcome, error) {
	cfg.Stop = s.stopLoad
	p := newProgress(s.stderr, cfg.Duration, s.rec.Ops())
	defer p.done()
	return runner.Run(ctx, cfg, s.rec, s.outage.guard(workers), func(snap recorder.Snapshot, warm bool) error {
		p.update(snap, s.outage.sample(snapCounts(snap)))
		return s.writeInterval(snap, warm, false)
	})
}

// snapCounts is how many operations of snap succeeded and failed.
func snapCounts(snap recorder.Snapshot) (ok, failed int64) {
	for i, h := range snap.Hists {
		ok += h.TotalCount()
		if i < len(snap.Errors) {
			for _, n := range snap.Errors[i] {
				failed += n
			}
		}
	}
	return ok, failed
}

// startClock ticks the recorder every second for work driven in counted
// steps (runner.Batch): each interval is written and shown like in drive.
// Stop the clock with stopClock.
func (s *Session) startClock(warmup time.Duration) (*runner.Clock, *progress) {
	p := newProgress(s.stderr, 0, s.rec.Ops())
	c := runner.StartClock(s.rec, time.Second, warmup, func(snap recorder.Snapshot, warm bool) error {
		p.update(snap, s.outage.sample(snapCounts(snap)))
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

// drain records one more interval after the clients stopped (see
// result.Interval.Drain).
func (s *Session) drain() error {
	return s.writeInterval(s.rec.Tick(time.Now()), false, true)
}

func (s *Session) writeInterval(snap recorder.Snapshot, warm, drain bool) error {
	iv, err := s.rec.Interval(snap, warm)
	if err != nil {
		return err
	}
	iv.Drain = drain
	s.pools.sample()
	if s.out.Live != nil {
		s.out.Live.Interval(iv)
	}
	return s.w.Interval(iv)
}

// Finish writes the summary, closes the file, writes the HTML report and
// prints the terminal table. It runs after an interrupt too: nothing
// measured is lost.
func (s *Session) Finish(interrupted bool) error {
	s.restoreGC()
	// The intervals are read back from the file rather than kept in memory
	// while the run goes on: an hour's 3,600 intervals of encoded
	// histograms would be a heap that grows with the run's length (and
	// with the measured phase's GOGC=400, five times that in RSS). Each
	// was written by one write call, so the file holds every one.
	back, err := result.Read(s.w.Path())
	if err != nil {
		return errors.Join(err, s.w.Close())
	}
	s.mu.Lock()
	run := &result.Run{Dir: s.dir, Header: s.header, Intervals: back.Intervals, Points: s.points, Events: s.events}
	s.mu.Unlock()
	// Time without service: the seconds no operation succeeded, and the
	// dials refused and waited out meanwhile.
	if total, longest := run.Unavailable(); s.reconn != nil || total > 0 {
		s.SetExtra("reconnect_unavailable_seconds", total)
		s.SetExtra("reconnect_unavailable_longest_seconds", longest)
	}
	if s.reconn != nil {
		st := s.reconn.Reconnects()
		s.SetExtra("reconnect_dials", float64(st.Dials))
		s.SetExtra("reconnect_dials_failed", float64(st.Failed))
		s.SetExtra("reconnect_wait_seconds", st.Waited.Seconds())
	}
	s.mu.Lock()
	extra := make(map[string]float64, len(s.extra))
	for k, v := range s.extra {
		extra[k] = v
	}
	s.mu.Unlock()
	sum, err := run.Summarize()
	if err != nil {
		return errors.Join(err, s.w.Close())
	}
	sum.Interrupted = interrupted
	sum.Extra = extra
	cost := s.self.Stop(ownClients(s.header))
	cost.Connections = s.pools.stop()
	sum.Client = &cost
	if w := cost.Warning(); w != "" {
		fmt.Fprintln(s.stderr, "fieldbench: "+w)
	}
	if w := sum.LatenessWarning(); w != "" {
		fmt.Fprintln(s.stderr, "fieldbench: "+w)
	}
	run.Summary = &sum
	s.sum = &sum
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
	if err := report.WriteFile(out, []*result.Run{run}); err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "\nresult: %s\nreport: %s\n", s.w.Path(), out)
	return s.export(run)
}

// poolMeter follows the adapter's connection pools over a run: the peak of
// open connections (sampled at every interval) and the waits for a free
// connection counted from the run's start (the load before it excluded).
type poolMeter struct {
	p     adapter.Pooler
	mu    sync.Mutex
	first adapter.PoolStats
	peak  adapter.PoolStats
}

func startPools(p adapter.Pooler) *poolMeter {
	first := p.Pools()
	return &poolMeter{p: p, first: first, peak: first}
}

// sample reads the pools once (a nil meter does nothing).
func (m *poolMeter) sample() adapter.PoolStats {
	if m == nil {
		return adapter.PoolStats{}
	}
	now := m.p.Pools()
	m.mu.Lock()
	m.peak.Open = max(m.peak.Open, now.Open)
	m.peak.Max = max(m.peak.Max, now.Max)
	m.mu.Unlock()
	return now
}

// stop reads the pools a last time and returns the run's figures (nil for
// a nil meter).
func (m *poolMeter) stop() *result.Connections {
	if m == nil {
		return nil
	}
	last := m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	return &result.Connections{
		PeakOpen: m.peak.Open, Max: m.peak.Max,
		Waits: last.Waits - m.first.Waits, WaitSeconds: (last.Waited - m.first.Waited).Seconds(),
	}
}

// export writes the run's standard outputs (Outputs) beside its result.
func (s *Session) export(run *result.Run) error {
	var errs []error
	if s.out.HDRLog {
		files, err := export.HDRLogs(run, filepath.Join(s.dir, "hdr"))
		errs = append(errs, err)
		if len(files) > 0 {
			fmt.Fprintf(s.stdout, "hdr logs: %s\n", filepath.Join(s.dir, "hdr"))
		}
	}
	for _, f := range []struct {
		on    bool
		name  string
		write func(io.Writer, *result.Run) error
	}{{s.out.CSV, "summary.csv", export.SummaryCSV}, {s.out.JSON, "summary.json", export.SummaryJSON}} {
		if !f.on {
			continue
		}
		path := filepath.Join(s.dir, f.name)
		err := export.WriteFile(path, func(w io.Writer) error { return f.write(w, run) })
		errs = append(errs, err)
		if err == nil {
			fmt.Fprintf(s.stdout, "summary: %s\n", path)
		}
	}
	return errors.Join(errs...)
}

// allFailed names the operations of the finished run that were tried and
// never succeeded: a run whose every write failed must not pass for a
// measurement.
func (s *Session) allFailed(ops ...string) []string {
	if s.sum == nil {
		return nil
	}
	var out []string
	for _, op := range ops {
		o := s.sum.Ops[op]
		var errs int64
		for _, n := range o.Errors {
			errs += n
		}
		if o.Count == 0 && errs > 0 {
			out = append(out, fmt.Sprintf("every %s failed (%d errors)", op, errs))
		}
	}
	return out
}

// Detached gives post-run work (summary queries, catch-up) a context that
// an interrupt does not cancel, bounded so it cannot hang.
func Detached(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// newHeader fills what every run's header has; the caller adds options,
// operations, groups and series.
func newHeader(env *Env, workloadName string, a adapter.Adapter, info adapter.Info, dsn string, seed int64, ops []string) result.Header {
	return result.Header{
		Version: env.Version, Workload: workloadName, Adapter: a.Name(), DSN: redact.DSN(dsn),
		Database: info, Seed: seed, Machine: probe.Machine(), Operations: ops,
		Options: map[string]any{}, Cluster: env.Cluster, LoadBudget: env.load.budget.String(),
	}
}

// ownClients is how many clients this process drove: a shard's own share
// (shard_clients, shard_threads, shard_sources), not the whole run's, so
// its summary does not say "10 clients served by 5 connections" for a
// shard that ran 5.
func ownClients(h result.Header) int {
	for _, k := range []string{"clients", "threads", "sources"} {
		switch v := h.Options["shard_"+k].(type) {
		case int:
			return v
		case float64:
			return int(v)
		}
	}
	return h.Clients()
}
