package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// PostAuditor is what an observer implements to audit a microblog run: it
// sees every post the run made, acknowledged or failed, and reads them
// back once the load stopped (an experiment's durability audit). A plain
// observer does not implement it.
type PostAuditor interface {
	PostAcked(t microblog.Tweet)
	PostFailed(t microblog.Tweet, err error)
	// Audit runs once the load stopped, with the store and the dataset.
	Audit(ctx context.Context, s *Session, store microblog.Store, ds *microblog.Dataset)
}

func (j *microblogJob) run(ctx context.Context, env *Env) error {
	if err := j.CheckRun(); err != nil {
		return err
	}
	sh, startAt, lo, hi, err := j.runShard()
	if err != nil {
		return err
	}
	mix, err := workload.ParseMix(j.mix, microblog.ClientOps)
	if err != nil {
		return Usage(err)
	}
	auditor, _ := env.observer().(PostAuditor)
	return measure(ctx, env, measured{
		workload: microblog.Name, dirName: microblog.Name, results: j.results, db: j.db, seed: j.seed,
		sh: sh, startAt: startAt, items: "clients", lo: lo, hi: hi,
		setup: func(ctx context.Context, a adapter.Adapter, db adapter.DB, dsn string) (*plan, error) {
			return j.plan(ctx, env, a, db, dsn, mix, sh, lo, hi, auditor)
		},
	})
}

// plan prepares the database of a microblog run and says what it drives:
// the clients of this shard at its share of the rate, and beside them the
// async model's materializer, whose lag is the pseudo-operation async-lag.
func (j *microblogJob) plan(ctx context.Context, env *Env, a adapter.Adapter, db adapter.DB, dsn string, mix workload.Mix, sh shard, lo, hi int, auditor PostAuditor) (*plan, error) {
	if sh.i > 0 {
		// Shard 0 loads; the others wait until the dataset is whole.
		if err := j.waitForDataset(ctx, env.Stderr, db, dsn); err != nil {
			return nil, err
		}
	}
	store, model, ds, ld, err := j.prepare(ctx, db, dsn, env.Stderr)
	if err != nil {
		return nil, err
	}
	drv, err := microblog.NewDriver(ctx, store, ds, mix, j.seed)
	if err != nil {
		store.Close()
		return nil, err
	}
	if sh.sharded() {
		drv.UseIDs(microblog.NewTweetIDs(sh.i)) // shards never share an id
	}
	m, isAsync := store.(microblog.Materializer)
	if model == microblog.Async && !isAsync {
		store.Close()
		return nil, fmt.Errorf("adapter %s: async store has no materializer", a.Name())
	}
	if auditor != nil {
		drv.OnPost, drv.OnPostFailed = auditor.PostAcked, auditor.PostFailed
	}
	drv.Retry = j.retry
	// This shard's share of the clients and of the rate.
	cfg := runner.Config{Workers: hi - lo, Duration: j.duration, Warmup: j.warmup, Rate: j.rate * float64(hi-lo) / float64(j.clients)}
	var matErr error
	return &plan{
		header: func(h *result.Header) {
			h.Operations = microblog.Ops(model)
			h.Groups = map[string]string{"post": "author followers"}
			j.opts.Record(h.Options, "seed", "clients", "duration", "warmup", "rate")
			h.Options["users"] = ds.Users
			h.Options["model"] = string(model)
			h.Options["mix"] = mix.String()
			h.Options["loop"] = loopName(j.rate)
			h.WarmupSeconds = j.warmup.Seconds()
			if model == microblog.Async {
				j.opts.Record(h.Options, "materialize-every")
			}
			recordRetry(j.opts, h.Options, j.retry)
			if ld.reads {
				j.opts.Record(h.Options, "timeline-reads")
			}
		},
		extra: ld.extra(),
		banner: func(info adapter.Info) string {
			return fmt.Sprintf("running microblog (%s model) on %s %s: %d clients, %s, %s loop%s",
				model, info.Name, info.Version, cfg.Workers, cfg.Duration, loopName(cfg.Rate), retryNote(j.retry))
		},
		drive: func(ctx context.Context, s *Session) (driven, error) {
			clients := drv.Clients(j.clients)[lo:hi]
			workers := make([]runner.Worker, len(clients))
			for i, c := range clients {
				workers[i] = c
			}
			var wg sync.WaitGroup
			matCtx, stopMat := context.WithCancel(context.WithoutCancel(ctx))
			defer stopMat()
			lag := func(d time.Duration) {}
			if model == microblog.Async {
				hd := s.rec.Handle()
				lag = func(d time.Duration) { hd.Record(microblog.OpAsyncLag, d) }
				wg.Add(1)
				go func() {
					defer wg.Done()
					matErr = microblog.Materialize(matCtx, m, j.matEvery, lag)
				}()
			}
			out, err := s.drive(ctx, cfg, workers)
			retryExtras(s, j.retry, drv.RetryStats())
			stopMat()
			wg.Wait()
			if model == microblog.Async && matErr == nil {
				// Let the materializer catch up so the last posts' lag is measured too.
				dctx, cancel := Detached(ctx, 30*time.Second)
				matErr = microblog.CatchUp(dctx, m, lag)
				cancel()
				err = errors.Join(err, s.drain())
			}
			if matErr != nil {
				s.SetExtra("materializer_failed", 1)
				fmt.Fprintf(s.stderr, "fieldbench: %v\n", matErr)
			}
			return driven{interrupted: out.Interrupted, abandoned: out.Abandoned, notStarted: out.NotStarted,
				detail: fmt.Sprintf("after %.1fs", out.Elapsed.Seconds())}, err
		},
		after: func(ctx context.Context, s *Session) {
			if auditor != nil {
				auditor.Audit(ctx, s, store, ds)
			}
		},
		verdict: func(s *Session) error {
			if matErr != nil {
				return matErr
			}
			if failed := s.allFailed("post"); len(failed) > 0 {
				return fmt.Errorf("the run is not a measurement: %s (the result is saved with every error by kind)", strings.Join(failed, "; "))
			}
			return nil
		},
		close: func() { store.Close() },
	}, nil
}
