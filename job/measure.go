package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
)

// measured is what one job's measured run is made of beyond what every
// run shares. measure owns the shared part once — run directory, database,
// header, common start, session, observer, clean-up, summary and verdict —
// so a job's run function says only what it drives and what it checks.
type measured struct {
	// workload names the result's workload and the embedded SQLite file;
	// dirName is the run directory's name (a sweep has its own).
	workload, dirName string
	// results is --results and db --db (empty: SQLite in the run directory).
	results, db string
	seed        int64
	ops         []string
	// sh, startAt and the shard's share [lo, hi) of items ("clients",
	// "threads", "sources") are recorded in the header.
	sh      shard
	startAt time.Time
	items   string
	lo, hi  int
	// setup prepares the open database (stores, dataset, checks) and says
	// the rest of the run. It runs before the session starts: a refusal
	// leaves no run directory behind.
	setup func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error)
}

// plan is one prepared run: what setup returns.
type plan struct {
	// header adds the job's options, groups and series to the header.
	header func(h *result.Header)
	// ready runs once the header is whole, before the common start (the
	// shards' meeting that empties a table). Optional.
	ready func(ctx context.Context, h result.Header) error
	// extra are figures known before the load (the dataset's counts).
	extra map[string]float64
	// banner is the line that says what is about to run.
	banner func(info adapter.Info) string
	// drive runs the load in the started session.
	drive func(ctx context.Context, s *Session) (driven, error)
	// after runs once the load stopped and the observer ended: reads made
	// after the load (counts, sizes, audits), given a context an interrupt
	// does not cancel. Optional.
	after func(ctx context.Context, s *Session)
	// verdict says, once the result is saved, whether the run failed as a
	// measurement (every write failed, a phase's requests failed). It is
	// not asked of an interrupted run. Optional.
	verdict func(s *Session) error
	// close releases what setup opened (the database itself is closed by
	// measure). Optional.
	close func()
}

// driven is how a drive ended.
type driven struct {
	interrupted bool
	// detail says where an interrupted run stopped ("after 12.3s" by
	// default).
	detail string
	// abandoned and notStarted are runner.Outcome's figures, for the
	// runs that use the runner.
	abandoned  bool
	notStarted int64
}

// measure runs m: the measured-run skeleton every job shares.
func measure(ctx context.Context, env *Env, m measured) (err error) {
	dir, dsn, err := runDirFor(m.results, m.dirName, m.workload, m.db)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started { // refused before measuring: leave no half-made run
			os.RemoveAll(dir)
			if err == ErrInterrupted { // a wait for the other shards, cut short
				err = fmt.Errorf("%w before the run started: nothing was measured", ErrInterrupted)
			}
		}
	}()
	a, db, err := OpenDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := m.setup(ctx, a, db, dsn)
	if err != nil {
		return err
	}
	if p.close != nil {
		defer p.close()
	}
	info, err := db.Info(ctx)
	if err != nil {
		return fmt.Errorf("read database version: %w", err)
	}
	h := newHeader(env, m.workload, a, info, dsn, m.seed, m.ops)
	p.header(&h)
	loadHeader(&h, env.load)
	m.sh.record(&h, m.items, m.lo, m.hi)
	if p.ready != nil {
		if err := p.ready(ctx, h); err != nil {
			return err
		}
	}
	stderr := lockWriter(env.Stderr)
	if err := startTogether(ctx, &h, m.startAt, wallClock{}, func(s string) { fmt.Fprint(stderr, s) }); err != nil {
		return err
	}
	// The load's own budget: this process moves into its group for the
	// measured work and out of it once the load stopped, on every path.
	sayLoadCost(stderr, env.load)
	release, held, err := holdLoad(env.load)
	if err != nil {
		return err
	}
	defer func() {
		// Joined only when it failed: an interrupt stays ErrInterrupted.
		if rerr := release(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	senv := *env
	senv.Stderr = stderr
	s, err := startRun(ctx, &senv, dir, h, db)
	if err != nil {
		return err
	}
	started = true
	markStartLate(s, m.startAt)
	s.AddExtra(p.extra)
	fmt.Fprintln(stderr, p.banner(info))

	stopSampling := sampleLoad(ctx, s, held, env.load.budget, time.Second)
	out, runErr := p.drive(ctx, s)
	stopSampling()
	runErr = errors.Join(runErr, env.observer().Ended(), release())
	if p.after != nil {
		// Ten minutes: an experiment's audit may wait for the replicas
		// twice (2 min each), restart the nodes its timeline left down and
		// read every post of the run back twice.
		dctx, cancel := Detached(ctx, 10*time.Minute)
		p.after(dctx, s)
		cancel()
	}
	if out.abandoned {
		s.SetExtra("operations_abandoned", 1)
		fmt.Fprintf(stderr, "fieldbench: warning: operations still in flight %s after their cancellation were left behind (the driver or the server did not give up); the run ended without them\n", runner.AbandonAfter)
	}
	if out.notStarted > 0 {
		s.SetExtra("open_loop_not_started", float64(out.notStarted))
	}
	if out.interrupted {
		detail := out.detail
		if detail == "" {
			detail = fmt.Sprintf("after %.1fs", s.Since())
		}
		_ = s.Event("interrupted", detail)
	}
	if err := errors.Join(runErr, s.Finish(out.interrupted)); err != nil {
		return err
	}
	if out.interrupted {
		return ErrInterrupted
	}
	if p.verdict != nil {
		return p.verdict(s)
	}
	return nil
}

// lockWriter serializes writes to w: the progress line is written from
// the clock's goroutine and a job's own lines from its own. An *os.File
// serializes writes itself; anything else (a test's buffer) gets a lock.
func lockWriter(w io.Writer) io.Writer {
	switch w.(type) {
	case *os.File, *lockedWriter:
		return w
	}
	return &lockedWriter{w: w}
}

// lockedWriter serializes writes to w (see lockWriter).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
