package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/fieldbench/fieldbench/internal/sqltraj"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// The trajectory schema. Records keep all 18 attributes plus the 5-minute
// slot, clustered on an auto-increment key (Galera needs a primary key;
// with innodb_autoinc_lock_mode=2 it takes no table lock), with an index
// on (weekday, slot, site_id) for the region query. Cells are written by
// the same transaction as the records that name them (INSERT IGNORE of the
// batch's distinct cells), so a query sees exactly the cells of the stored
// records. A cell's position is a POINT (SRID 0, x = easting, y =
// northing: whole metres, exact in doubles) under a SPATIAL index, which
// InnoDB allows only on a NOT NULL geometry column.
var trajSchema = sqltraj.Schema{
	Types:     sqltraj.Types{Big: "bigint", Int: "int", Small: "smallint", Tiny: "tinyint", Flag: "tinyint", Float: "double", Text: "varchar(%d)"},
	RecordKey: "rid bigint not null auto_increment primary key", InlineIndex: true,
	CellKey: "bigint not null primary key", Coord: "bigint", Cell: []string{"pos point not null", "spatial index traj_cells_pos (pos)"},
	Options: " engine=InnoDB",
}.Statements()

// trajChunk is how many records one multi-row INSERT carries.
const trajChunk = 500

// Spatial queries: candidates from the SPATIAL index by MBRContains of a
// bounding box widened by one metre on every side (so whether the native
// function counts its own boundary does not matter), then the exact test
// on the cells' integer coordinates in 64-bit integer SQL arithmetic:
// squared distances for distance and k-NN, the three edge cross products
// for the closed triangle. See docs/mariadb.md.
const (
	trajNearSQL = `select id, easting, northing,
			(easting - ?) * (easting - ?) + (northing - ?) * (northing - ?) as d2
		from traj_cells
		where mbrcontains(st_geomfromtext(?), pos)
		having d2 <= ?
		order by d2, id`
)

// trajRangeSQL: SPATIAL index candidates in the triangle's widened
// bounding box, then the exact test (sqltraj.TriangleSQL); its parameters
// are rangeArgs.
var trajRangeSQL = sqltraj.TriangleSQL(param, `from traj_cells as c where mbrcontains(st_geomfromtext(?), c.pos)`)

type trajStore struct {
	sqltraj.Reads
	db *DB
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	for _, q := range trajSchema {
		if _, err := db.first().ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("mariadb trajectory: create schema: %w", err)
		}
	}
	s := &trajStore{db: db}
	query := func(ctx context.Context, q string, args ...any) (sqltraj.Rows, error) {
		return db.pick().QueryContext(ctx, q, args...)
	}
	s.Reads = sqltraj.Reads{
		Name: "mariadb trajectory",
		Within: func(ctx context.Context, p trajectory.Point, r int64) (sqltraj.Rows, error) {
			return query(ctx, trajNearSQL, nearArgs(p, r)...)
		},
		Nearest: func(ctx context.Context, p trajectory.Point, k int, r int64) (sqltraj.Rows, error) {
			return query(ctx, trajNearSQL+" limit ?", append(nearArgs(p, r), k)...)
		},
		// MariaDB's spatial index has no nearest-neighbour scan, and the
		// order is by the exact integer squared distance rather than
		// ST_Distance (a double square root), so ties are exact ties.
		Grow: true,
		D2:   true,
		Inside: func(ctx context.Context, t trajectory.Triangle) (sqltraj.Rows, error) {
			return query(ctx, trajRangeSQL, rangeArgs(t)...)
		},
		Busiest: func(ctx context.Context, day trajectory.Weekday, slot int) sqltraj.Row {
			return db.pick().QueryRowContext(ctx, trajRegionSQL, int(day), slot)
		},
		Count:  func(ctx context.Context) sqltraj.Row { return db.first().QueryRowContext(ctx, sqltraj.CountsSQL) },
		NoRows: sql.ErrNoRows,
	}
	return s, nil
}

var trajRegionSQL = sqltraj.RegionSQL(param)

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer: one transaction with the batch's
// new cells (INSERT IGNORE, in id order so concurrent writers lock them
// in the same order) and multi-row INSERTs of the records. A deadlock or
// a Galera certification conflict between writers is retried.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	cells := make([]*trajectory.Cell, 0, 16)
	seen := map[int64]bool{}
	for i := range recs {
		if c := recs[i].Cell; !seen[c.ID] {
			seen[c.ID] = true
			cells = append(cells, c)
		}
	}
	slices.SortFunc(cells, func(a, b *trajectory.Cell) int { return int(min(max(a.ID-b.ID, -1), 1)) })
	return inTx(ctx, s.db.pick(), "trajectory write", func(tx *sql.Tx) error {
		args := make([]any, 0, 4*len(cells))
		for _, c := range cells {
			args = append(args, c.ID, c.Easting, c.Northing, fmt.Sprintf("POINT(%d %d)", c.Easting, c.Northing))
		}
		row := "(?, ?, ?, st_geomfromtext(?))"
		q := "insert ignore into traj_cells (id, easting, northing, pos) values " + row
		for range len(cells) - 1 {
			q += "," + row
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("mariadb trajectory: insert %d cells: %w", len(cells), err)
		}
		for lo := 0; lo < len(recs); lo += trajChunk {
			chunk := recs[lo:min(lo+trajChunk, len(recs))]
			args = args[:0]
			for i := range chunk {
				args = sqltraj.AppendRecord(args, &chunk[i])
			}
			if _, err := tx.ExecContext(ctx, sqltraj.InsertSQL+values(len(sqltraj.RecordColumns), len(chunk)), args...); err != nil {
				return fmt.Errorf("mariadb trajectory: insert %d records: %w", len(chunk), err)
			}
		}
		return nil
	})
}

// box is the WKT polygon of the rectangle widened by one metre.
func box(minX, minY, maxX, maxY int64) string {
	minX, minY, maxX, maxY = minX-1, minY-1, maxX+1, maxY+1
	return fmt.Sprintf("POLYGON((%d %d,%d %d,%d %d,%d %d,%d %d))", minX, minY, maxX, minY, maxX, maxY, minX, maxY, minX, minY)
}

func nearArgs(p trajectory.Point, r int64) []any {
	return []any{p.X, p.X, p.Y, p.Y, box(p.X-r, p.Y-r, p.X+r, p.Y+r), r * r}
}

// rangeArgs are trajRangeSQL's: the three edge cross products' operands,
// then the triangle's widened bounding box. MariaDB's ST_Contains(triangle,
// pos) agrees on cells exactly on an edge or vertex (it counts the
// boundary, TestTrajectoryNativeBoundary), but it computes in doubles: at
// MaxCoord scale cross products reach 1e18, beyond 2^53, so the integer
// test is the one that decides.
func rangeArgs(t trajectory.Triangle) []any {
	a, b, c := t[0], t[1], t[2]
	minX, minY, maxX, maxY := t.Bounds()
	return []any{
		b.X, a.X, a.Y, b.Y, a.Y, a.X,
		c.X, b.X, b.Y, c.Y, b.Y, b.X,
		a.X, c.X, c.Y, a.Y, c.Y, c.X,
		box(minX, minY, maxX, maxY),
	}
}

// Reset implements trajectory.Store: TRUNCATE both tables.
func (s *trajStore) Reset(ctx context.Context) error {
	for _, t := range []string{"traj_records", "traj_cells"} {
		if _, err := s.db.first().ExecContext(ctx, "truncate table "+t); err != nil {
			return fmt.Errorf("mariadb trajectory: reset %s: %w", t, err)
		}
	}
	return nil
}
