package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// RequestSetWatcher is what an observer implements to watch a wiki run's
// request sets (an experiment's stability tracking): it sees each set's
// point before it is written, may label it, and says whether the run
// should end after it. A plain observer does not implement it.
type RequestSetWatcher interface {
	RequestSet(pt *result.Point) (stop bool)
}

func (j *wikiJob) run(ctx context.Context, env *Env) error {
	if err := j.validate(); err != nil {
		return err
	}
	p, err := j.plan()
	if err != nil {
		return err
	}
	sh, startAt, lo, hi, err := j.runShard(p)
	if err != nil {
		return err
	}
	switch {
	case sh.sharded() && j.from != "":
		return Usagef("shards do not load a dump: load it first with 'fieldbench load wiki --from', then run the shards")
	case j.loop && j.db == "":
		return Usagef("--loop needs --db: a postgres or redis DSN (the default SQLite file has no event-loop connections)")
	}
	return measure(ctx, env, measured{
		workload: wiki.Name, dirName: wiki.Name, results: j.results, db: j.db, seed: j.seed, ops: wiki.Ops,
		sh: sh, startAt: startAt, items: "threads", lo: lo, hi: hi,
		setup: func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error) {
			return j.runPlan(ctx, env, a, db, dsn, p, sh, lo, hi)
		},
	})
}

// runPlan prepares the database of a wiki run and says what it drives: the
// request sets, each thread of this shard over the same request stream as
// that thread of an unsharded run, at the shard's share of --rate.
func (j *wikiJob) runPlan(ctx context.Context, env *Env, a adapter.Adapter, db adapter.DB, dsn string, p wiki.Plan, sh shard, lo, hi int) (_ *plan, err error) {
	store, err := wikiStoreOf(ctx, db, dsn)
	if err != nil {
		return nil, err
	}
	var conns []loop.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
		store.Close()
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	// The event loop's connections are opened before a load, so that a
	// store without them is refused at once.
	if j.loop {
		if conns, err = openLoopConns(ctx, a, store, hi-lo); err != nil {
			return nil, err
		}
	}
	if sh.i > 0 {
		// Shard 0 loads; the others wait until every article is there.
		if err := j.waitForArticles(ctx, env.Stderr, store); err != nil {
			return nil, err
		}
	}
	ld, err := j.prepare(ctx, db, store, env.Stderr)
	if err != nil {
		return nil, err
	}
	p.Articles = ld.counts.Articles
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if sh.sharded() {
		// The shards wait for --articles articles: a database holding
		// another number would leave them waiting. The source is said
		// alike in every shard (merge checks the options are one run's),
		// whichever shard loaded.
		if ld.counts.Articles != j.articles {
			return nil, Usagef("the database holds %d articles, not --articles %d: shards run on the synthetic articles of --articles (load them with 'fieldbench load wiki --articles %d', or give that count)", ld.counts.Articles, j.articles, ld.counts.Articles)
		}
		ld.source = fmt.Sprintf("%d articles in the database (an empty one gets synthetic articles of seed %d from shard 0)", j.articles, j.seed)
	}
	pace := "" // says an open loop wherever the run is described
	if j.rate > 0 {
		pace = fmt.Sprintf(", open loop at %g requests/s", j.rate)
	}
	sets := &wikiSets{job: j, plan: p, lo: lo, hi: hi, conns: conns, rate: j.rate * float64(hi-lo) / float64(p.Threads)}
	return &plan{
		header: func(h *result.Header) { j.runHeader(h, p, ld, pace) },
		extra:  ld.extra(),
		banner: func(info adapter.Info) string {
			note := ""
			if rest := p.Requests % p.Threads; rest != 0 {
				note = fmt.Sprintf("note: %d requests over %d threads: each thread does %d, so a request set has %d requests\n",
					p.Requests, p.Threads, p.PerThread(), p.PerThread()*int64(p.Threads))
			}
			return note + fmt.Sprintf("running wiki on %s %s: %s × %s of %d requests (%d%% reads, %s ids over %d articles) on %s%s%s",
				info.Name, info.Version, plural(j.sets, "request set"), plural(j.repeat, "execution"), p.PerThread()*int64(p.Threads), p.ReadPct, p.Dist, p.Articles, plural(p.Threads, "thread"), pace, retryNote(j.retry))
		},
		drive: func(ctx context.Context, s *Session) (driven, error) {
			watcher, _ := env.observer().(RequestSetWatcher)
			return sets.drive(ctx, s, store, watcher)
		},
		after: func(ctx context.Context, s *Session) {
			s.SetExtra("request_sets", float64(len(sets.means)))
			s.SetExtra("updates_acknowledged", float64(sets.updated))
			retryExtras(s, j.retry, p.Tally.Stats())
			// Every acknowledged update appended one byte, so the growth of
			// the stored text tells how many were lost (see docs/wiki.md).
			// A shard cannot tell: the other shards' updates grow the text too.
			if after, err := store.Counts(ctx); err == nil && !sh.sharded() {
				s.SetExtra("lost_updates", float64(sets.updated-(after.Bytes-ld.counts.Bytes)))
				s.SetExtra("final_total_bytes", float64(after.Bytes))
			} else if err != nil {
				fmt.Fprintf(s.stderr, "fieldbench: count articles after the run: %v\n", err)
			}
			if len(sets.means) > 0 {
				m, sd := wiki.MeanSD(sets.means)
				s.SetExtra("request_set_mean_ms", m*1e3)
				s.SetExtra("request_set_sd_ms", sd*1e3)
				s.SetExtra("request_set_median_delta_ms", wiki.MedianDelta(sets.means)*1e3)
			}
		},
		close: closeAll,
	}, nil
}

// runHeader records a run's options and declares its request-set series.
func (j *wikiJob) runHeader(h *result.Header, p wiki.Plan, ld wikiLoad, pace string) {
	h.Series = map[string]result.SeriesMeta{wikiSeries: {
		Title:   fmt.Sprintf("Request-set time (%d requests, %d%% reads, %s%s; mean ± SD of %s)", p.PerThread()*int64(p.Threads), p.ReadPct, plural(p.Threads, "thread"), pace, plural(j.repeat, "execution")),
		XLabel:  "elapsed (s)",
		YLabel:  "request-set time (s)",
		XIsTime: true,
		Band:    "sd",
	}}
	j.opts.Record(h.Options, "seed", "requests", "reads", "threads", "sets", "repeat")
	h.Options["articles"] = ld.counts.Articles
	h.Options["source"] = ld.source
	h.Options["requests_per_thread"] = p.PerThread()
	h.Options["dist"] = string(p.Dist)
	if p.Dist == wiki.Zipf {
		j.opts.Record(h.Options, "zipf-s")
	}
	if j.keepRedirects {
		j.opts.Record(h.Options, "keep-redirects")
	}
	if j.loop {
		h.Options["client"] = "event loop (runner/loop: one goroutine, epoll)"
	}
	recordRetry(j.opts, h.Options, j.retry)
	if j.rate > 0 {
		// Recorded only for an open loop, so closed-loop result files
		// stay as they were; the keys are microblog's.
		j.opts.Record(h.Options, "rate")
		h.Options["loop"] = loopName(j.rate)
	}
}

// wikiSets drives a wiki run's request sets and keeps what the summary
// says of them.
type wikiSets struct {
	job    *wikiJob
	plan   wiki.Plan
	lo, hi int
	conns  []loop.Conn // the event loop's, with --loop
	rate   float64     // this shard's share of --rate
	// means are the sets' mean times (s); updated counts the acknowledged
	// updates.
	means   []float64
	updated int64
}

// drive runs the request sets with the clock ticking; watcher, when the
// observer is one, sees every set's point and may end the run.
func (w *wikiSets) drive(ctx context.Context, s *Session, store wiki.Store, watcher RequestSetWatcher) (driven, error) {
	n := w.hi - w.lo
	handles := make([]*recorder.Handle, n)
	for i := range handles {
		handles[i] = s.rec.Handle()
	}
	workers := make([]runner.Worker, n)
	loopClients := make([]loop.Client, n)
	var loopErr error
	batch := func(ctx context.Context, clients []*wiki.Client, per int64) bool {
		clients = clients[w.lo:w.hi]
		if w.conns != nil {
			for i, c := range clients {
				loopClients[i] = c
			}
			stopped, err := loop.Run(ctx, w.conns, loopClients, handles, per, loop.DefaultTimeout)
			if err != nil {
				loopErr = err // the connections are unusable: no further set
				return true
			}
			return stopped
		}
		for i, c := range clients {
			workers[i] = c
		}
		// Bounded while the database is down, as a timed run's are: an
		// outage is errors of its seconds, not a wait.
		guarded := s.outage.guard(workers)
		if w.rate > 0 {
			return runner.PacedBatch(ctx, guarded, handles, per, w.rate)
		}
		return runner.Batch(ctx, guarded, handles, per)
	}
	clock, prog := s.startClock(0)
	tot, err := wiki.RunSets(ctx, store, w.plan, w.job.sets, w.job.repeat, batch, func(r wiki.SetResult) error {
		return w.setDone(s, prog.tty, r, watcher)
	})
	if errors.Is(err, errEnoughSets) {
		err = nil
	}
	w.updated = tot.Updated
	err = errors.Join(err, loopErr, stopClock(clock, prog))
	return driven{interrupted: tot.Interrupted, detail: fmt.Sprintf("%d request sets recorded (the last may be partial)", len(w.means))}, err
}

// setDone records one request set's point and says it on its own line.
func (w *wikiSets) setDone(s *Session, tty bool, r wiki.SetResult, watcher RequestSetWatcher) error {
	mean, sd := r.MeanSD()
	w.means = append(w.means, mean)
	pt := result.Point{
		Series: wikiSeries, X: r.End.Sub(s.Started()).Seconds(), Y: mean, SD: sd, N: len(r.Seconds),
		Labels: map[string]string{"set": strconv.Itoa(r.Set)},
	}
	if r.Partial {
		pt.Labels["partial"] = "true"
	}
	sayLine(s.stderr, tty, "request set %d/%d: %.3fs ± %.3fs (%s)", r.Set, w.job.sets, mean, sd, plural(len(r.Seconds), "execution"))
	var stop error
	if watcher != nil && watcher.RequestSet(&pt) {
		stop = errEnoughSets
	}
	return errors.Join(s.Point(pt), stop)
}

// sayLine writes a line of its own under the live progress line, clearing
// that first on a terminal.
func sayLine(w io.Writer, tty bool, format string, a ...any) {
	if tty {
		fmt.Fprint(w, "\r\033[K")
	}
	fmt.Fprintf(w, format+"\n", a...)
}
