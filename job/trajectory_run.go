package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func (j *trajectoryJob) run(ctx context.Context, env *Env) error {
	if err := j.validateWrite(); err != nil {
		return err
	}
	if err := j.validateRun(); err != nil {
		return err
	}
	sh, startAt, err := j.runShard()
	if err != nil {
		return err
	}
	lo, hi := sh.share(j.clients)
	return measure(ctx, env, measured{
		workload: trajectory.Name, dirName: trajectory.Name, results: j.results, db: j.db, seed: j.seed, ops: trajectory.Ops,
		sh: sh, startAt: startAt, items: "clients", lo: lo, hi: hi,
		setup: func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error) {
			if err := verifiable(a, j.verify); err != nil {
				return nil, err
			}
			store, err := j.runStore(ctx, env.Stderr, db, dsn, sh, startAt)
			if err != nil {
				return nil, err
			}
			p, err := j.runPlan(ctx, env, db, store, sh, lo, hi)
			if err != nil {
				store.Close()
				return nil, err
			}
			p.close = func() { store.Close() }
			return p, nil
		},
	})
}

// runStore opens the store of a run: shard 0 (or the only one) checks and
// empties it, the other shards neither check nor empty it.
func (j *trajectoryJob) runStore(ctx context.Context, stderr io.Writer, db adapter.DB, dsn string, sh shard, startAt time.Time) (trajectory.Store, error) {
	if sh.i > 0 {
		b, err := trajBackend(db, dsn)
		if err != nil {
			return nil, err
		}
		return b.Trajectory(ctx)
	}
	store, err := trajStore(ctx, stderr, db, dsn, j.reset)
	if err == nil && sh.sharded() && time.Now().After(startAt) {
		store.Close()
		return nil, fmt.Errorf("shard 0 emptied the database after --start-at: the other shards may have written before, so the write phase would not start from an empty database; choose a later --start-at")
	}
	return store, err
}

// runPlan says what a trajectory run drives: for every mode a write phase
// and one read phase per query type, this shard's clients of each (the same
// records and queries as those clients of an unsharded run) at its share of
// --rate.
func (j *trajectoryJob) runPlan(ctx context.Context, env *Env, db adapter.DB, store trajectory.Store, sh shard, lo, hi int) (*plan, error) {
	g, err := j.generator()
	if err != nil {
		return nil, err
	}
	ph := &trajPhases{job: j, store: store, g: g, sh: sh, lo: lo, hi: hi, rate: j.rate, tally: new(workload.RetryTally)}
	if sh.sharded() {
		ph.rate = j.rate * float64(hi-lo) / float64(j.clients)
	}
	if err := ph.makeQueries(ctx, env.Stderr); err != nil {
		return nil, err
	}
	modeNames := make([]string, len(j.modes))
	for i, m := range j.modes {
		modeNames[i] = string(m)
	}
	return &plan{
		header: func(h *result.Header) {
			j.opts.Record(h.Options, "scale", "seed", "clients", "batch", "queries", "repeat", "k", "verify", "rate")
			h.Options["records"] = g.Len()
			h.Options["users"] = g.Users()
			h.Options["cells"] = len(g.City().Cells)
			h.Options["mode"] = strings.Join(modeNames, ",")
			h.Options["radius_m"] = j.radius
			h.Options["max_dist_m"] = j.maxDist
			h.Options["metric"] = "planar euclidean on easting/northing (m)"
			h.Options["loop"] = loopName(j.rate)
			recordRetry(j.opts, h.Options, j.retry)
			h.Series = map[string]result.SeriesMeta{
				trajSeriesThroughput: {Title: "Throughput at the clients per request type and mode", XLabel: "mode and request type", YLabel: "throughput (requests/s)"},
				trajSeriesRecords:    {Title: "Write throughput in records", XLabel: "mode", YLabel: "throughput (records/s)"},
				trajSeriesLatency:    {Title: "Latency per request (mean ± SD)", XLabel: "mode and request type", YLabel: "latency (ms)", Band: "sd"},
			}
		},
		extra: map[string]float64{"records": float64(g.Len()), "users": float64(g.Users()), "cells": float64(len(g.City().Cells))},
		banner: func(info adapter.Info) string {
			return fmt.Sprintf("running trajectory on %s %s: %d records (scale %g), modes %s, %d random clients, batch %d, %d queries x %d per type, %s loop%s",
				info.Name, info.Version, g.Len(), j.scale, strings.Join(modeNames, "+"), j.clients, j.batch, j.queries, j.repeat, loopName(j.rate), retryNote(j.retry))
		},
		drive: ph.drive,
		after: func(ctx context.Context, s *Session) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			retryExtras(s, j.retry, ph.tally.Stats())
			if c, err := store.Counts(ctx); err == nil {
				s.SetExtra("stored_records", float64(c.Records))
				s.SetExtra("stored_cells", float64(c.Cells))
			}
			if sz, ok := db.(adapter.Sizer); ok {
				if n, err := sz.SizeBytes(ctx); err == nil {
					s.SetExtra("db_size_bytes", float64(n))
				}
			}
		},
		verdict: ph.verdict,
	}, nil
}

// trajPhases drives a trajectory run's phases and keeps what failed.
type trajPhases struct {
	tally  *workload.RetryTally // the retries of every phase
	job    *trajectoryJob
	store  trajectory.Store
	g      *trajectory.Generator
	sh     shard
	lo, hi int
	rate   float64
	// The read phases' queries, and with --verify their reference answers.
	queries map[int][]trajectory.Query
	wants   map[int][]trajectory.Answer
	failed  []string
	wrong   []*trajectory.WrongAnswer
}

// makeQueries makes the read phases' queries and, with --verify, their
// reference answers.
func (ph *trajPhases) makeQueries(ctx context.Context, stderr io.Writer) error {
	j := ph.job
	qopts := trajectory.QueryOptions{N: j.queries, Radius: j.radius, K: j.k, MaxDist: j.maxDist, Seed: j.seed}
	ph.queries, ph.wants = map[int][]trajectory.Query{}, map[int][]trajectory.Answer{}
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		ph.queries[op] = trajectory.MakeQueries(ph.g.City(), op, qopts)
	}
	if !j.verify {
		return nil
	}
	t0 := time.Now()
	stop := heartbeat(stderr, func() string {
		return fmt.Sprintf("computing the reference answers over %d records (--verify)", ph.g.Len())
	})
	ref, err := trajectory.OracleFor(ctx, ph.g)
	stop()
	if err != nil {
		return ErrInterrupted
	}
	for op, list := range ph.queries {
		for _, q := range list {
			ph.wants[op] = append(ph.wants[op], ref.Answer(q))
		}
	}
	if d := time.Since(t0); d > 2*time.Second {
		fmt.Fprintf(stderr, "computed the reference answers in %s\n", d.Round(time.Millisecond))
	}
	return nil
}

func (ph *trajPhases) drive(ctx context.Context, s *Session) (driven, error) {
	handles := make([]*recorder.Handle, ph.hi-ph.lo)
	for i := range handles {
		handles[i] = s.rec.Handle()
	}
	clock, prog := s.startClock(0)
	var interrupted bool
	var err error
	for mi, mode := range ph.job.modes {
		if mi > 0 {
			// The reset is not an operation, so nothing is recorded
			// while it runs: the event says how long it took, else the
			// seconds at 0 ops/s it leaves in the series look like a
			// stalled phase (on 2 replicating pouchdb-servers it deletes
			// every document: 35-86 s, docs/couchdb.md).
			t0 := time.Now()
			if err = ph.store.Reset(ctx); err != nil {
				break
			}
			d := time.Since(t0)
			_ = s.Event("reset", resetDetail(mode, d))
			fmt.Fprintf(s.stderr, "%s\n", resetDetail(mode, d))
		}
		if interrupted, err = ph.mode(ctx, s, mode, handles); err != nil || interrupted {
			break
		}
	}
	return driven{interrupted: interrupted}, errors.Join(err, stopClock(clock, prog))
}

// resetDetail is the reset event's detail: which phase it prepares and how
// long it took, during which no operation ran.
func resetDetail(mode trajectory.Mode, d time.Duration) string {
	return fmt.Sprintf("database emptied for the %s write phase in %.1fs (no operation meanwhile)", mode, d.Seconds())
}

// mode runs one mode's write phase and its read phases.
func (ph *trajPhases) mode(ctx context.Context, s *Session, mode trajectory.Mode, handles []*recorder.Handle) (interrupted bool, err error) {
	j, g := ph.job, ph.g
	wcs, err := trajectory.WriteClients(ph.store, g, mode, j.clients, j.batch, j.seed)
	if err != nil {
		return false, err
	}
	if ph.sh.sharded() {
		wcs = wcs[ph.lo:ph.hi]
	}
	for _, c := range wcs {
		c.SetRetry(j.retry, ph.tally)
	}
	x := s.Since()
	r := trajRunPhase(ctx, wcs, handles, ph.rate, s.outage.guard, func(requests int64) {
		_ = s.Event(string(mode)+" write", fmt.Sprintf("%d records, %d client(s), %d requests of up to %d", g.Len(), len(wcs), requests, j.batch))
	})
	for _, c := range wcs {
		r.stats.Merge(&c.Stats)
		r.records += c.Records()
	}
	if err := ph.record(s, mode, trajectory.OpWrite, x, r); err != nil || r.interrupted {
		return r.interrupted, err
	}
	fmt.Fprintf(s.stderr, "%s write: %d records in %.2fs, %.0f records/s\n", mode, r.records, r.elapsed.Seconds(), float64(r.records)/r.elapsed.Seconds())
	if ph.sh.sharded() {
		// The queries' answers are those of the whole dataset: wait
		// until every shard has written its records.
		if err := j.waitForRecords(ctx, s.stderr, ph.store, g.Len()); err != nil {
			return false, err
		}
		_ = s.Event("shards written", "every shard's records are in the database")
	}
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		rcs, err := trajectory.ReadClients(ph.store, ph.queries[op], ph.wants[op], mode, j.clients, j.repeat, j.seed*31+int64(op))
		if err != nil {
			return false, err
		}
		if ph.sh.sharded() {
			rcs = rcs[ph.lo:ph.hi]
		}
		for _, c := range rcs {
			c.SetRetry(j.retry, ph.tally)
		}
		x := s.Since()
		r := trajRunPhase(ctx, rcs, handles, ph.rate, s.outage.guard, func(requests int64) {
			_ = s.Event(string(mode)+" "+trajectory.Ops[op], fmt.Sprintf("%d requests, %d client(s)", requests, len(rcs)))
		})
		for _, c := range rcs {
			r.stats.Merge(&c.Stats)
			ph.wrong = append(ph.wrong, c.Wrong...)
		}
		if err := ph.record(s, mode, op, x, r); err != nil || r.interrupted {
			return r.interrupted, err
		}
	}
	return false, nil
}

// record writes one phase's points and figures.
func (ph *trajPhases) record(s *Session, mode trajectory.Mode, op int, x float64, r trajPhaseResult) error {
	cat := string(mode) + " " + trajectory.Ops[op]
	labels := func() map[string]string {
		return map[string]string{"category": cat, "mode": string(mode), "op": trajectory.Ops[op]}
	}
	secs := r.elapsed.Seconds()
	fail := ""
	if r.stats.Errors > 0 {
		fail = fmt.Sprintf("%d of %d requests failed: %v", r.stats.Errors, r.requests, r.stats.FirstErr)
		ph.failed = append(ph.failed, cat+": "+fail)
	}
	if r.interrupted {
		fail = "interrupted"
	}
	mean, sd := r.stats.MeanSD()
	key := string(mode) + "_" + trajectory.Ops[op]
	s.SetExtra(key+"_requests_per_sec", float64(r.requests)/secs)
	s.SetExtra(key+"_mean_latency_ms", mean*1e3)
	pts := []result.Point{
		{Series: trajSeriesThroughput, X: x, Y: float64(r.requests) / secs, N: int(r.requests), Failed: fail, Labels: labels()},
		{Series: trajSeriesLatency, X: x, Y: mean * 1e3, SD: sd * 1e3, N: int(r.stats.N), Failed: fail, Labels: labels()},
	}
	if op == trajectory.OpWrite {
		s.SetExtra(key+"_records_per_sec", float64(r.records)/secs)
		s.SetExtra(key+"_seconds", secs)
		pts = append(pts, result.Point{Series: trajSeriesRecords, X: x, Y: float64(r.records) / secs, N: int(r.records), Failed: fail, Labels: labels()})
	}
	for _, p := range pts {
		if err := s.Point(p); err != nil {
			return err
		}
	}
	return nil
}

// verdict fails a run some of whose requests failed: their latencies are
// not in the figures.
func (ph *trajPhases) verdict(*Session) error {
	if len(ph.failed) == 0 {
		return nil
	}
	msg := strings.Join(ph.failed, "\n  ")
	if len(ph.wrong) > 0 {
		msg += fmt.Sprintf("\n  first wrong answer: %v", ph.wrong[0])
	}
	return fmt.Errorf("some requests failed (their latencies are not in the figures):\n  %s", msg)
}

// trajPhaseResult is what one phase did.
type trajPhaseResult struct {
	elapsed     time.Duration
	requests    int64
	records     int64
	stats       trajectory.Stats
	interrupted bool
}

// trajClient is a write or read client of one phase: it knows how many
// requests its share is.
type trajClient interface {
	runner.Worker
	Requests() int64
}

// trajRunPhase runs one phase: every client its own share of the requests,
// all at once, closed loop or open loop at rate requests per second (see
// runner.Shares), through guard (the session's outage bound). started is
// told the phase's requests just before it starts.
func trajRunPhase[C trajClient](ctx context.Context, clients []C, handles []*recorder.Handle, rate float64, guard func([]runner.Worker) []runner.Worker, started func(requests int64)) trajPhaseResult {
	ws, counts := make([]runner.Worker, len(clients)), make([]int64, len(clients))
	var r trajPhaseResult
	for i, c := range clients {
		ws[i], counts[i] = c, c.Requests()
		r.requests += c.Requests()
	}
	started(r.requests)
	r.elapsed, r.interrupted = runner.Shares(ctx, guard(ws), handles, counts, rate)
	return r
}
