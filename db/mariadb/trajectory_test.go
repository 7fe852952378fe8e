package mariadb

import (
	"strconv"
	"testing"

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
