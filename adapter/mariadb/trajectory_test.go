package mariadb

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func trajOpen(t *testing.T) (*DB, trajectory.Store) {
	t.Helper()
	db := openFresh(t)
	st, err := db.Trajectory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return db, st
}

func trajGen(t *testing.T, scale float64, seed int64) *trajectory.Generator {
	t.Helper()
	g, err := trajectory.New(trajectory.Options{Scale: scale, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// trajLoad writes g's records through the driver's clients in mode, as a
// run's write phase does (random: 4 concurrent clients, shuffled).
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			runner.Batch(t.Context(), []runner.Worker{c}, []*recorder.Handle{h}, c.Requests())
		}()
	}
	wg.Wait()
	for _, c := range cs {
		if c.Stats.Errors > 0 {
			t.Fatalf("write errors: %v", c.Stats.FirstErr)
		}
	}
}

// trajQueries is the generated query lists plus hand-made ones aimed at the
// edge cases: every shared mast (exact distance ties, k = 1 ties), points
// halfway between two cells, triangles with cells on their vertices and
// edges, radius and bound 0, empty areas, and every slot of Sunday (the
// week's last slots are empty at this scale).
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
			b := cells[j].Pos()
			if a == b { // shared mast
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
			r := isqrt64(trajectory.Dist2(mid, a))
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
		trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{far, {X: far.X + 10, Y: far.Y}, {X: far.X, Y: far.Y + 10}}},
		trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{{X: -trajectory.MaxCoord, Y: -trajectory.MaxCoord}, {X: trajectory.MaxCoord, Y: -trajectory.MaxCoord}, {X: 0, Y: trajectory.MaxCoord}}},
	)
	for slot := range trajectory.SlotsPerDay {
		qs = append(qs, trajectory.Query{Op: trajectory.OpRegion, Day: trajectory.Sunday, Slot: slot})
	}
	return qs
}

func isqrt64(x int64) int64 {
	r := int64(0)
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}

// TestTrajectoryMatchesOracle loads a small dataset sequentially and in
// random order with concurrent clients, and checks every query of a long
// list (generated and edge cases) against the brute-force reference.
func TestTrajectoryMatchesOracle(t *testing.T) {
	t.Parallel()
	g := trajGen(t, 0.002, 3)
	ref, err := trajectory.OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	qs := trajQueries(g.City())
	for _, mode := range trajectory.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			_, st := trajOpen(t)
			t0 := time.Now()
			trajLoad(t, st, g, mode, 500)
			t.Logf("%s write of %d records: %v", mode, g.Len(), time.Since(t0))
			counts, err := st.Counts(t.Context())
			if err != nil || counts != ref.Counts() {
				t.Fatalf("counts %+v (%v), reference %+v", counts, err, ref.Counts())
			}
			var empty, ties, found int
			t0 = time.Now()
			for _, q := range qs {
				got, err := q.Run(t.Context(), st)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				want := ref.Answer(q)
				if !got.Equal(want) {
					t.Fatalf("%s: got %s, want %s", q, got, want)
				}
				if len(want.Hits) == 0 && !want.Found {
					empty++
				}
				for i := 1; i < len(want.Hits); i++ {
					if q.Op != trajectory.OpRange && trajectory.Dist2(q.At, want.Hits[i].Pos()) == trajectory.Dist2(q.At, want.Hits[i-1].Pos()) {
						ties++
					}
				}
				if want.Found {
					found++
				}
			}
			t.Logf("%d queries in %v", len(qs), time.Since(t0))
			if empty < 10 || ties < 5 || found < 100 {
				t.Fatalf("edge cases not covered: %d empty answers, %d distance ties, %d regions found", empty, ties, found)
			}
		})
	}
}

// TestTrajectoryNativeBoundary pins what docs/mariadb.md says about
// MariaDB's own ST_Contains: on cells exactly on a triangle's vertex or
// edge it agrees with the oracle's closed triangle (MariaDB counts the
// boundary as inside), and Range, which decides with exact integer cross
// products instead, returns the same cells.
func TestTrajectoryNativeBoundary(t *testing.T) {
	t.Parallel()
	_, st := trajOpen(t)
	db := st.(*trajStore).db
	ctx := t.Context()
	const x0, y0 = 6_000_000, 6_000_000 // city-scale coordinates
	tri := trajectory.Triangle{{X: x0, Y: y0}, {X: x0 + 100, Y: y0}, {X: x0, Y: y0 + 300}}
	cells := []trajectory.Cell{
		{ID: 1, Easting: x0, Northing: y0},             // vertex
		{ID: 2, Easting: x0 + 50, Northing: y0},        // edge
		{ID: 3, Easting: x0 + 50, Northing: y0 + 150},  // hypotenuse
		{ID: 4, Easting: x0 + 10, Northing: y0 + 10},   // inside
		{ID: 5, Easting: x0 + 51, Northing: y0 + 150},  // 1 m outside the hypotenuse
		{ID: 6, Easting: x0 - 1, Northing: y0 + 100},   // 1 m outside the left edge
		{ID: 7, Easting: x0 + 100, Northing: y0 + 300}, // outside, in the bounding box corner
	}
	var recs []trajectory.Record
	for i := range cells {
		recs = append(recs, trajectory.Record{User: 1, Cell: &cells[i], Weekday: trajectory.Monday, Time: int32(i * 300)})
	}
	if err := st.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	wkt := "POLYGON((" + itoa(x0) + " " + itoa(y0) + "," + itoa(x0+100) + " " + itoa(y0) + "," + itoa(x0) + " " + itoa(y0+300) + "," + itoa(x0) + " " + itoa(y0) + "))"
	var want []trajectory.Hit
	for _, c := range cells {
		var native bool
		if err := db.first().QueryRowContext(ctx, "select st_contains(st_geomfromtext(?), pos) from traj_cells where id = ?", wkt, c.ID).Scan(&native); err != nil {
			t.Fatal(err)
		}
		if exact := tri.Contains(c.Pos()); native != exact {
			t.Errorf("cell %d at (%d,%d): ST_Contains = %v, closed triangle = %v", c.ID, c.Easting, c.Northing, native, exact)
		}
		if tri.Contains(c.Pos()) {
			want = append(want, trajectory.Hit{Cell: c.ID, Easting: c.Easting, Northing: c.Northing})
		}
	}
	got, err := st.Range(ctx, tri)
	if err != nil {
		t.Fatal(err)
	}
	if !(trajectory.Answer{Hits: got}).Equal(trajectory.Answer{Hits: want}) {
		t.Fatalf("Range = %v, want %v", got, want)
	}
	if err := st.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := st.Counts(ctx); err != nil || c != (trajectory.Counts{}) {
		t.Fatalf("after Reset: %+v %v", c, err)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
