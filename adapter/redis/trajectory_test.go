package redis

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func trajLoad(t *testing.T, st trajectory.Store, g *trajectory.Generator, mode trajectory.Mode, batch int) {
	t.Helper()
	cs, err := trajectory.WriteClients(st, g, mode, 4, batch, 5)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorder.New(trajectory.Ops, time.Now())
	var wg sync.WaitGroup
	for _, c := range cs {
		h := rec.Handle()
		wg.Go(func() { runner.Batch(t.Context(), []runner.Worker{c}, []*recorder.Handle{h}, c.Requests()) })
	}
	wg.Wait()
	for _, c := range cs {
		if c.Stats.Errors > 0 {
			t.Fatalf("write errors: %v", c.Stats.FirstErr)
		}
	}
}

// trajQueries: the generated queries plus edge cases (shared masts, exact
// ties, points halfway between cells, triangles through cells, far and
// huge areas that bypass GEO, every Sunday slot).
func trajQueries(c *trajectory.City) []trajectory.Query {
	var qs []trajectory.Query
	opts := trajectory.QueryOptions{N: 120, Radius: 1000, K: 5, MaxDist: 2000, Seed: 11}
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		qs = append(qs, trajectory.MakeQueries(c, op, opts)...)
	}
	cells := c.Cells
	for i := range cells {
		a := cells[i].Pos()
		for j := i + 1; j < len(cells); j++ {
			if b := cells[j].Pos(); a == b {
				qs = append(qs,
					trajectory.Query{Op: trajectory.OpDistance, At: a, Radius: 0},
					trajectory.Query{Op: trajectory.OpKNN, At: a, K: 1, MaxDist: 0},
					trajectory.Query{Op: trajectory.OpKNN, At: trajectory.Point{X: a.X + 3, Y: a.Y + 4}, K: 1, MaxDist: 5},
				)
			}
		}
		if i+1 < len(cells) && i%7 == 0 {
			b := cells[i+1].Pos()
			mid := trajectory.Point{X: (a.X + b.X) / 2, Y: (a.Y + b.Y) / 2}
			r := isqrt(trajectory.Dist2(mid, a))
			qs = append(qs,
				trajectory.Query{Op: trajectory.OpDistance, At: mid, Radius: r},
				trajectory.Query{Op: trajectory.OpKNN, At: mid, K: 2, MaxDist: r + 1},
				trajectory.Query{Op: trajectory.OpKNN, At: mid, K: 50, MaxDist: 100_000},
			)
		}
		if i+2 < len(cells) && i%5 == 0 {
			tri := trajectory.Triangle{a, cells[i+1].Pos(), cells[i+2].Pos()}
			if tri.Area2() != 0 {
				qs = append(qs, trajectory.Query{Op: trajectory.OpRange, Tri: tri})
			}
		}
	}
	far := trajectory.Point{X: 100_000, Y: 100_000}
	qs = append(qs,
		trajectory.Query{Op: trajectory.OpDistance, At: far, Radius: 10},
		trajectory.Query{Op: trajectory.OpKNN, At: far, K: 3, MaxDist: 10},
		trajectory.Query{Op: trajectory.OpKNN, At: far, K: 3, MaxDist: trajectory.MaxCoord},
		trajectory.Query{Op: trajectory.OpDistance, At: far, Radius: trajectory.MaxCoord},
		trajectory.Query{Op: trajectory.OpDistance, At: trajectory.Point{X: -trajectory.MaxCoord, Y: trajectory.MaxCoord}, Radius: trajectory.MaxCoord},
		trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{far, {X: far.X + 10, Y: far.Y}, {X: far.X, Y: far.Y + 10}}},
		trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{{X: -trajectory.MaxCoord, Y: -trajectory.MaxCoord}, {X: trajectory.MaxCoord, Y: -trajectory.MaxCoord}, {X: 0, Y: trajectory.MaxCoord}}},
	)
	for slot := range trajectory.SlotsPerDay {
		qs = append(qs, trajectory.Query{Op: trajectory.OpRegion, Day: trajectory.Sunday, Slot: slot})
	}
	return qs
}

func isqrt(x int64) int64 {
	r := int64(0)
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}

// TestTrajectoryMatchesOracle loads a small dataset into the cluster,
// sequentially and in random order with 4 clients, and checks every query
// against the brute-force reference; then Reset empties it.
func TestTrajectoryMatchesOracle(t *testing.T) {
	g, err := trajectory.New(trajectory.Options{Scale: 0.004, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := trajectory.OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	qs := trajQueries(g.City())
	for _, standalone := range []bool{false, true} {
		t.Run(map[bool]string{false: "cluster", true: "standalone"}[standalone], func(t *testing.T) {
			trajCheck(t, open(t, standalone), g, ref, qs)
		})
	}
}

func trajCheck(t *testing.T, db *DB, g *trajectory.Generator, ref *trajectory.Oracle, qs []trajectory.Query) {
	st, err := db.Trajectory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Reset(context.Background()); st.Close() })
	for _, mode := range trajectory.Modes {
		t.Run(string(mode), func(t *testing.T) {
			ctx := t.Context()
			if err := st.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			trajLoad(t, st, g, mode, 777)
			t.Logf("%s write of %d records: %v", mode, g.Len(), time.Since(t0))
			if c, err := st.Counts(ctx); err != nil || c != ref.Counts() {
				t.Fatalf("counts %+v (%v), reference %+v", c, err, ref.Counts())
			}
			var empty, found, hits int
			t0 = time.Now()
			for _, q := range qs {
				got, err := q.Run(ctx, st)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				want := ref.Answer(q)
				if len(got.Hits) == 0 {
					got.Hits = nil
				}
				if !got.Equal(want) {
					t.Fatalf("%s: got %s, want %s", q, got, want)
				}
				if len(want.Hits) == 0 && !want.Found {
					empty++
				}
				if want.Found {
					found++
				}
				hits += len(want.Hits)
			}
			t.Logf("%d queries in %v (%d hits, %d empty, %d regions found)", len(qs), time.Since(t0), hits, empty, found)
			if empty < 10 || found < 100 {
				t.Fatalf("edge cases not covered: %d empty, %d regions", empty, found)
			}
		})
	}
	ctx := t.Context()
	if err := st.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := st.Counts(ctx); err != nil || c != (trajectory.Counts{}) {
		t.Fatalf("after Reset: %+v, %v", c, err)
	}
	if _, ok, err := st.Region(ctx, trajectory.Monday, 0); err != nil || ok {
		t.Fatalf("region after Reset: %v %v", ok, err)
	}
}
