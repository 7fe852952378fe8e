package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// ingestMeasured is what run and sweep share: the workload, the database,
// the shard's sources, and the ingest store opened by setup.
func (j *ingestJob) ingestMeasured(dirName string, sh shard, startAt time.Time, lo, hi int, rest func(ctx context.Context, store ingest.Store) (*plan, error)) measured {
	return measured{
		workload: ingest.Name, dirName: dirName, results: j.results, db: j.db, seed: j.seed, ops: ingest.Ops,
		sh: sh, startAt: startAt, items: "sources", lo: lo, hi: hi,
		setup: func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error) {
			if err := verifiable(a, j.verify); err != nil {
				return nil, err
			}
			store, err := ingestStore(ctx, db, dsn)
			if err != nil {
				return nil, err
			}
			p, err := rest(ctx, store)
			if err != nil {
				store.Close()
				return nil, err
			}
			p.close = func() { store.Close() }
			return p, nil
		},
	}
}

// recordIngestOptions records the options run and sweep share.
func (j *ingestJob) recordIngestOptions(h *result.Header, command string) {
	j.opts.Record(h.Options, "sources", "batch", "seed", "timeout", "verify", "rate")
	h.Options["command"] = command
	h.Options["record_bytes"] = ingest.RecordBytes
	h.Options["loop"] = loopName(j.rate)
	recordRetry(j.opts, h.Options, j.retry)
}

func (j *ingestJob) run(ctx context.Context, env *Env) error {
	rc := j.runConfig(j.records)
	if err := rc.Validate(); err != nil {
		return Usage(err)
	}
	sh, startAt, err := j.ingestShard(&rc, false)
	if err != nil {
		return err
	}
	lo, hi := rc.Span()
	return measure(ctx, env, j.ingestMeasured(ingest.Name, sh, startAt, lo, hi, func(ctx context.Context, store ingest.Store) (*plan, error) {
		var res ingest.RunResult
		return &plan{
			header: func(h *result.Header) {
				j.recordIngestOptions(h, "run")
				j.opts.Record(h.Options, "records")
				h.Series = ingestSeries(false)
			},
			ready: func(ctx context.Context, h result.Header) error {
				if !sh.sharded() {
					return nil
				}
				b, err := j.ingestBarrier(sh, h, startAt, env.Stderr)
				if err != nil {
					return err
				}
				if err := resetShards(ctx, sh, b, startAt, store); err != nil {
					return err
				}
				store = noReset{store}
				return nil
			},
			banner: func(info adapter.Info) string {
				return fmt.Sprintf("ingest on %s %s: %d sources × %d records, batches of %d, %s%s",
					info.Name, info.Version, hi-lo, rc.Records, rc.Batch, ingestLoop(rc.Rate), retryNote(rc.Retry))
			},
			drive: func(ctx context.Context, s *Session) (driven, error) {
				var err error
				res, err = ingestOnce(ctx, store, rc, ingestHandles(s, hi-lo), func() func() error {
					clock, p := s.startClock(0)
					return func() error { return stopClock(clock, p) }
				})
				if res.Interrupted {
					return driven{interrupted: true, detail: fmt.Sprintf("after %.1fs", res.Elapsed.Seconds())}, err
				}
				err = errors.Join(err, s.Point(ingestRunPoint(res)))
				s.SetExtra("records", float64(hi-lo)*float64(rc.Records))
				s.SetExtra("sources", float64(hi-lo))
				s.SetExtra("batch_size", float64(rc.Batch))
				s.SetExtra("run_seconds", res.Elapsed.Seconds())
				if rc.Retry.Max > 0 {
					s.SetExtra("batch_retries", float64(res.Retries))
					s.SetExtra("batches_recovered", float64(res.Recovered))
				}
				if res.Failed() {
					s.SetExtra("run_failed", 1)
					err = errors.Join(err, s.Event("run failed", res.Cause()))
				} else {
					s.SetExtra("throughput_records_per_s", math.Round(res.Throughput))
					s.SetExtra("throughput_mb_per_s", res.Throughput*ingest.RecordBytes/1e6)
				}
				return driven{}, err
			},
			verdict: func(*Session) error {
				if res.Failed() {
					return fmt.Errorf("the run failed: %s", res.Cause())
				}
				return nil
			},
		}, nil
	}))
}

// CheckSweep checks the sweep's options before anything starts
// (SweepChecker).
func (j *ingestJob) CheckSweep() error {
	_, _, _, err := j.sweepPlan()
	return err
}

// sweepPlan is the sweep's configuration and shard, checked.
func (j *ingestJob) sweepPlan() (ingest.SweepConfig, shard, time.Time, error) {
	cfg := j.sweepConfig()
	if err := cfg.Validate(); err != nil {
		return cfg, shard{}, time.Time{}, Usage(err)
	}
	sh, startAt, err := j.ingestShard(&cfg.Run, true)
	return cfg, sh, startAt, err
}

func (j *ingestJob) sweep(ctx context.Context, env *Env) error {
	cfg, sh, startAt, err := j.sweepPlan()
	if err != nil {
		return err
	}
	lo, hi := cfg.Run.Span()
	loads := cfg.Loads()
	return measure(ctx, env, j.ingestMeasured(ingest.Name+"-sweep", sh, startAt, lo, hi, func(ctx context.Context, store ingest.Store) (*plan, error) {
		sw := &ingestSweep{cfg: cfg, store: store, sources: hi - lo}
		return &plan{
			header: func(h *result.Header) {
				j.recordIngestOptions(h, "sweep")
				j.opts.Record(h.Options, "from", "to", "step", "runs", "warmup-runs", "on-error")
				h.Options["loads"] = len(loads)
				h.Options["confidence"] = ingest.Level
				h.Series = ingestSeries(true)
			},
			ready: func(ctx context.Context, h result.Header) error {
				if !sh.sharded() {
					return nil
				}
				b, err := j.ingestBarrier(sh, h, startAt, env.Stderr)
				sw.barrier = b
				return err
			},
			banner: func(info adapter.Info) string {
				return fmt.Sprintf("ingest sweep on %s %s: %d loads (%d..%d records per source), %d runs each (%d warm-up), %d sources, batches of %d, %s",
					info.Name, info.Version, len(loads), cfg.From, cfg.To, cfg.Runs, cfg.WarmupRuns, hi-lo, cfg.Run.Batch, ingestLoop(cfg.Run.Rate))
			},
			drive: func(ctx context.Context, s *Session) (driven, error) {
				err := sw.drive(ctx, s, env.Stdout)
				return driven{interrupted: sw.out.Interrupted, detail: fmt.Sprintf("after %d runs", sw.out.Runs)}, err
			},
			verdict: func(s *Session) error {
				out := sw.out
				switch {
				case out.StoppedBy != nil:
					return fmt.Errorf("sweep stopped (--on-error stop) at load %d, run %d: %s", out.StoppedBy.Records, out.StoppedBy.Run, out.StoppedBy.Cause())
				case out.Failed > 0:
					fmt.Fprintf(s.stderr, "fieldbench: %d of %d runs failed; they are recorded in the result and the report\n", out.Failed, out.Runs)
				}
				return nil
			},
		}, nil
	}))
}

// ingestSweep drives a sweep: every load's runs, each from an empty table.
type ingestSweep struct {
	cfg     ingest.SweepConfig
	store   ingest.Store
	sources int
	barrier *dirBarrier // the shards' meeting point; nil unsharded
	out     ingest.SweepOutcome
}

func (sw *ingestSweep) drive(ctx context.Context, s *Session, stdout io.Writer) error {
	var hooks ingest.SweepHooks
	// A shard that cannot meet the others (one died, or stopped on a
	// failed run) ends the sweep: every later run would wait as long.
	var apart error
	sctx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	if b := sw.barrier; b != nil {
		// Every run of the sweep starts from an empty table: the shards
		// meet before each, and shard 0 empties it once all are there.
		hooks.Reset = func(ctx context.Context, records int64, run int) error {
			err := b.resetOnce(ctx, fmt.Sprintf("load-%d-run-%d", records, run), sw.store.Reset)
			if err != nil && ctx.Err() == nil {
				apart = fmt.Errorf("load %d, run %d: the shards did not meet: %w", records, run, err)
				stopSweep()
			}
			return err
		}
	}
	clock, p := s.startClock(0)
	var points []ingest.PointStats
	hooks.Run = func(r ingest.RunResult) error {
		kind := ""
		if r.Warmup {
			kind = " (warm-up)"
		}
		if r.Failed() {
			sayLine(s.stderr, p.tty, "load %d, run %d/%d%s: FAILED: %s", r.Records, r.Run, sw.cfg.Runs, kind, r.Cause())
			if err := s.Event("run failed", fmt.Sprintf("load %d run %d: %s", r.Records, r.Run, r.Cause())); err != nil {
				return err
			}
		} else {
			sayLine(s.stderr, p.tty, "load %d, run %d/%d%s: %s records/s in %.2fs", r.Records, r.Run, sw.cfg.Runs, kind, report.Thousands(r.Throughput), r.Elapsed.Seconds())
		}
		return s.Point(ingestRunPoint(r))
	}
	hooks.Point = func(ps ingest.PointStats) error {
		points = append(points, ps)
		return s.Point(ingestStatsPoint(ps))
	}
	out, err := ingest.Sweep(sctx, sw.store, sw.cfg, ingestHandles(s, sw.sources), hooks)
	sw.out = out
	err = errors.Join(err, stopClock(clock, p))
	if apart != nil {
		err = errors.Join(err, s.Event("shards apart", apart.Error()), apart)
	}
	s.SetExtra("loads", float64(len(points)))
	s.SetExtra("runs", float64(out.Runs))
	s.SetExtra("runs_failed", float64(out.Failed))
	s.SetExtra("sources", float64(sw.sources))
	s.SetExtra("batch_size", float64(sw.cfg.Run.Batch))
	if out.StoppedBy != nil {
		err = errors.Join(err, s.Event("sweep stopped", "--on-error stop after a failed run"))
	}
	fmt.Fprintln(stdout)
	return errors.Join(err, report.IngestTable(stdout, points, sw.cfg))
}
