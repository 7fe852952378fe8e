package job

import (
	"context"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// TestMeasureSizing measures the sizing rule's costs that only the Go heap
// holds (the others are peak RSS of the binary: scripts/measure-sizing.sh,
// which runs this test last): the live heap after building a structure
// of n units, at two n, the difference over the difference in units,
// doubled for the heap's growth between collections (heapGrowth). It
// fails when a measured cost is above the figure job/sizing.go holds, so
// a change that makes a unit cost more is found when the figures are
// measured again. Not run by default (FIELDBENCH_MEASURE_SIZING=1): it
// measures, it does not test.
func TestMeasureSizing(t *testing.T) {
	if os.Getenv("FIELDBENCH_MEASURE_SIZING") == "" {
		t.Skip("measures the sizing costs: FIELDBENCH_MEASURE_SIZING=1 (scripts/measure-sizing.sh)")
	}
	measure := func(name string, have Cost, lo, hi float64, build func(n float64) any) {
		t.Helper()
		a, b := liveHeap(func() any { return build(lo) }), liveHeap(func() any { return build(hi) })
		c := (b - a) / (hi - lo)
		t.Logf("sizing %-22s %8.1f B per %s live, %.0f with the heap's growth (job/sizing.go holds %.0f)", name, c, have.Unit, heapGrowth*c, have.Bytes)
		if math.Round(heapGrowth*c) > have.Bytes {
			t.Errorf("%s costs %.0f B per unit, more than the %.0f job/sizing.go estimates with: update the figure (and docs/limits.md)", name, heapGrowth*c, have.Bytes)
		}
	}
	users := func(scale float64) float64 {
		n, err := trajectory.RecordsForScale(scale)
		if err != nil {
			t.Fatal(err)
		}
		return float64(trajectory.UsersForRecords(n))
	}
	gen := func(scale float64) *trajectory.Generator {
		g, err := trajectory.New(trajectory.Options{Scale: scale, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// A user in the generator, and in one cursor: each is held once per
	// cursor in the estimate, so the larger of the two is the cost.
	lo, hi := 0.5, 4.0
	measure("trajectory-user-gen", costTrajUser, users(lo), users(hi), func(n float64) any {
		return gen(map[float64]float64{users(lo): lo, users(hi): hi}[n])
	})
	glo, ghi := gen(lo), gen(hi)
	measure("trajectory-user-cursor", costTrajUser, users(lo), users(hi), func(n float64) any {
		if n == users(lo) {
			return glo.NewCursor()
		}
		return ghi.NewCursor()
	})
	// A query of each type with its reference answer.
	g := gen(0.01)
	ref, err := trajectory.OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	queries := func(n float64) any {
		o := trajectory.QueryOptions{N: int(n), Radius: trajectory.DefaultRadius, K: trajectory.DefaultK, MaxDist: trajectory.DefaultMaxDist, Seed: 1}
		var qs [][]trajectory.Query
		var as []trajectory.Answer
		for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
			list := trajectory.MakeQueries(g.City(), op, o)
			for _, q := range list {
				as = append(as, ref.Answer(q))
			}
			qs = append(qs, list)
		}
		return []any{qs, as}
	}
	const types = 4
	measure("trajectory-query", costTrajQuery, types*1000, types*20000, func(n float64) any { return queries(n / types) })
	// A request of a read phase in its clients' order.
	list := trajectory.MakeQueries(g.City(), trajectory.OpDistance, trajectory.QueryOptions{N: 100, Radius: 1000, Seed: 1})
	measure("trajectory-request", costTrajRequest, 100*1000, 100*20000, func(n float64) any {
		cs, err := trajectory.ReadClients(nil, list, nil, trajectory.Random, 4, int(n/100), 1)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	})
}

// heapGrowth turns a live heap into the memory it takes: with GOGC=100 the
// heap grows to twice the live heap before the collector runs.
const heapGrowth = 2

// liveHeap is the live heap that what build returns holds.
func liveHeap(build func() any) float64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	x := build()
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(x)
	return float64(b.HeapAlloc) - float64(a.HeapAlloc)
}
