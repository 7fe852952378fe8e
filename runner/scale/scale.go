// Package scale measures what a client costs: it drives one workload's
// clients on the database it is given (fieldbench-scale gives it the null
// adapter's, so no database's work is in the figures) in open loop at one
// operation per client per second through the real runner and recorder,
// and reads the process's own CPU, peak RSS and goroutines. scripts/scale-clients.sh runs
// one step per process (peak RSS is per process) at 1 to 100,000 clients.
//
// Wiki and ingest have no open loop in the CLI; here their clients (wiki
// threads, ingest sources) are driven as runner workers: a wiki client does
// one request per operation, an ingest source inserts one batch.
package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Backend is the database a step drives: one that serves every family of
// Families. It is a parameter, not an import of an adapter, so that this
// package stands below the adapters it may be given.
type Backend interface {
	microblog.Backend
	wiki.Backend
	ingest.Backend
}

// Families are the workloads a step can drive.
var Families = []string{"microblog", "wiki", "ingest"}

// Step is one measurement.
type Step struct {
	Family   string
	Clients  int
	Duration time.Duration
	// PerClient is each client's offered rate in operations per second
	// (default 1): the run offers Clients × PerClient.
	PerClient float64
	// Batch is the records per ingest batch (default 10).
	Batch int
}

// Figures is what a step measured.
type Figures struct {
	Family      string            `json:"family"`
	Clients     int               `json:"clients"`
	Offered     float64           `json:"offered_ops_per_sec"`
	Achieved    float64           `json:"achieved_ops_per_sec"` // operations completed / Duration
	Completed   int64             `json:"completed"`
	Errors      int64             `json:"errors"`
	NotStarted  int64             `json:"not_started"`
	P50US       int64             `json:"p50_us"` // from the intended start
	P99US       int64             `json:"p99_us"`
	Client      result.ClientCost `json:"client"`
	CPUPerOpUS  float64           `json:"cpu_per_op_us"`
	Shards      int               `json:"recorder_shards"`
	DurationSec float64           `json:"duration_seconds"`
}

// Run measures one step on db, which should be fresh (the null adapter's
// DB{}, say): a microblog step populates it.
func Run(ctx context.Context, db Backend, st Step) (Figures, error) {
	if st.PerClient <= 0 {
		st.PerClient = 1
	}
	if st.Batch <= 0 {
		st.Batch = 10
	}
	ops, workers, err := clients(ctx, db, st)
	if err != nil {
		return Figures{}, err
	}
	cfg := runner.Config{Workers: st.Clients, Duration: st.Duration, Rate: float64(st.Clients) * st.PerClient}
	if err := cfg.Validate(); err != nil {
		return Figures{}, err
	}
	meter := probe.StartSelf(0)
	rec := recorder.New(ops, time.Now())
	all := result.NewHist() // every operation, the whole run
	var errs int64
	out, err := runner.Run(ctx, cfg, rec, workers, func(s recorder.Snapshot, _ bool) error {
		// Encode as a real run does, so its cost is in the figures.
		if _, err := rec.Interval(s, false); err != nil {
			return err
		}
		for i := range ops {
			all.Merge(s.Hists[i])
			for _, n := range s.Errors[i] {
				errs += n
			}
		}
		return nil
	})
	cost := meter.Stop(st.Clients)
	if err != nil {
		return Figures{}, err
	}
	f := Figures{
		Family: st.Family, Clients: st.Clients, Offered: cfg.Rate,
		Completed: all.TotalCount(), Errors: errs, NotStarted: out.NotStarted,
		P50US: all.ValueAtQuantile(50), P99US: all.ValueAtQuantile(99),
		Client: cost, Shards: rec.Shards(), DurationSec: st.Duration.Seconds(),
	}
	f.Achieved = float64(f.Completed) / st.Duration.Seconds()
	if n := f.Completed + f.Errors; n > 0 {
		f.CPUPerOpUS = (cost.CPUUserSeconds + cost.CPUSysSeconds) / float64(n) * 1e6
	}
	return f, nil
}

// clients builds the family's clients on db.
func clients(ctx context.Context, db Backend, st Step) ([]string, []runner.Worker, error) {
	if st.Clients < 1 {
		return nil, nil, fmt.Errorf("clients must be at least 1 (got %d)", st.Clients)
	}
	ws := make([]runner.Worker, st.Clients)
	switch st.Family {
	case "microblog":
		ds, err := microblog.Generate(microblog.GenOptions{Users: microblog.DefaultUsers, Seed: 1})
		if err != nil {
			return nil, nil, err
		}
		store, err := db.Microblog(ctx, microblog.Denormalized)
		if err != nil {
			return nil, nil, err
		}
		if err := store.Populate(ctx, ds); err != nil {
			return nil, nil, err
		}
		mix, err := workload.ParseMix(microblog.DefaultMix, microblog.ClientOps)
		if err != nil {
			return nil, nil, err
		}
		drv, err := microblog.NewDriver(ctx, store, ds, mix, 1)
		if err != nil {
			return nil, nil, err
		}
		for i, c := range drv.Clients(st.Clients) {
			ws[i] = c
		}
		return microblog.ClientOps, ws, nil
	case "wiki":
		store, err := db.Wiki(ctx)
		if err != nil {
			return nil, nil, err
		}
		p := wiki.Plan{Requests: st.Clients, ReadPct: wiki.DefaultReads, Threads: st.Clients, Dist: wiki.Uniform, Seed: 1, Articles: wiki.DefaultArticles}
		if err := p.Validate(); err != nil {
			return nil, nil, err
		}
		for i, c := range p.Clients(store, 1, 1) {
			ws[i] = c
		}
		return wiki.Ops, ws, nil
	case "ingest":
		store, err := db.Ingest(ctx)
		if err != nil {
			return nil, nil, err
		}
		for i := range ws {
			ws[i] = &source{store: store, src: i, buf: make([]ingest.Record, st.Batch)}
		}
		return ingest.Ops, ws, nil
	}
	return nil, nil, fmt.Errorf("unknown family %q (known: microblog, wiki, ingest)", st.Family)
}

// source is one ingest source as a runner worker: each operation fills its
// batch buffer with its next records and inserts them, as ingest.Run's
// sources do.
type source struct {
	store ingest.Store
	src   int
	next  int64
	buf   []ingest.Record
}

func (s *source) Next() int { return ingest.OpBatch }

func (s *source) Do(ctx context.Context, _ int) (int, error) {
	ingest.Fill(s.buf, ingest.DefaultSeed, s.src, s.next)
	s.next += int64(len(s.buf))
	return -1, s.store.InsertBatch(ctx, s.buf)
}
