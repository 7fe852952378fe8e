package runner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// noopStore answers every microblog operation at once: what remains is the
// cost of fieldbench itself (clients, runner, recorder, result encoding).
type noopStore struct{ tweets []microblog.Tweet }

func (noopStore) Populate(context.Context, *microblog.Dataset) error { return nil }
func (noopStore) Counts(context.Context) (microblog.Counts, error)   { return microblog.Counts{}, nil }
func (noopStore) Post(context.Context, microblog.Tweet) error        { return nil }
func (noopStore) MaxTweetID(context.Context) (int64, error)          { return 0, nil }
func (noopStore) Close() error                                       { return nil }
func (s noopStore) Userline(context.Context, int64, int) ([]microblog.Tweet, error) {
	return s.tweets, nil
}
func (s noopStore) Timeline(context.Context, int64, int) ([]microblog.Tweet, error) {
	return s.tweets, nil
}

// stopAfter cancels the run once n operations have been done in total.
type stopAfter struct {
	runner.Worker
	done   *atomic.Int64
	n      int64
	cancel context.CancelFunc
}

func (s stopAfter) Do(ctx context.Context, op int) (int, error) {
	g, err := s.Worker.Do(ctx, op)
	if s.done.Add(1) == s.n {
		s.cancel()
	}
	return g, err
}

type nop struct{}

func (nop) Next() int                            { return 0 }
func (nop) Do(context.Context, int) (int, error) { return -1, nil }

func benchHarness(b *testing.B, ops []string, workers []runner.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int64
	for i, w := range workers {
		workers[i] = stopAfter{Worker: w, done: &done, n: int64(b.N), cancel: cancel}
	}
	rec := recorder.New(ops, time.Now())
	b.ReportAllocs()
	cpu0, cpuOK := probe.ReadSelf()
	b.ResetTimer()
	_, err := runner.Run(ctx, runner.Config{Workers: len(workers), Duration: time.Hour}, rec, workers,
		func(s recorder.Snapshot, warm bool) error {
			_, err := rec.Interval(s, warm) // encode as a real run does
			return err
		})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	// The process's CPU time per operation, which a loaded machine does not
	// inflate the way it inflates wall time (ns/op) when this process waits
	// for a core.
	if cpu1, ok := probe.ReadSelf(); ok && cpuOK {
		used := cpu1.UserSeconds + cpu1.SysSeconds - cpu0.UserSeconds - cpu0.SysSeconds
		b.ReportMetric(used*1e9/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkHarnessNoop is the runner and recorder alone: a worker that does
// nothing, timed and recorded like any operation.
func BenchmarkHarnessNoop(b *testing.B) {
	for _, n := range []int{1, 200} {
		b.Run(map[int]string{1: "clients=1", 200: "clients=200"}[n], func(b *testing.B) {
			ws := make([]runner.Worker, n)
			for i := range ws {
				ws[i] = nop{}
			}
			benchHarness(b, []string{"op"}, ws)
		})
	}
}

// BenchmarkHarnessMicroblog drives the real microblog clients (mix choice,
// id assignment, post bodies, follower grouping) against a no-op store.
func BenchmarkHarnessMicroblog(b *testing.B) {
	ds, err := microblog.Generate(microblog.GenOptions{Users: 400, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	mix, err := workload.ParseMix(microblog.DefaultMix, microblog.ClientOps)
	if err != nil {
		b.Fatal(err)
	}
	store := noopStore{tweets: ds.Tweets[:microblog.Limit]}
	for _, n := range []int{1, 200} {
		b.Run(map[int]string{1: "clients=1", 200: "clients=200"}[n], func(b *testing.B) {
			drv, err := microblog.NewDriver(context.Background(), store, ds, mix, 1)
			if err != nil {
				b.Fatal(err)
			}
			ws := make([]runner.Worker, n)
			for i, c := range drv.Clients(n) {
				ws[i] = c
			}
			benchHarness(b, microblog.ClientOps, ws)
		})
	}
}
