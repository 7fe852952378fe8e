package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/internal/sqltraj"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// The trajectory schema. Records keep all 18 attributes plus the 5-minute
// slot; cells are derived from the records by Write (in the same
// transaction), one row per cell with its position as a PostGIS point
// (SRID 0: planar metres, easting/northing) under a GiST index:
//
//   - traj_records_region on (weekday, slot, site_id): the region query
//     counts one slot's records per cell from an index range scan;
//   - traj_cells_geom: GiST over the points, for ST_DWithin, the <-> k-NN
//     operator and the bounding-box (&&) filter of the range query.
//
// The cells keep their integer coordinates next to the geometry: PostGIS
// computes in float64, so the final, exact test of every query is done on
// the integers (squared distances, cross products) in bigint arithmetic —
// see docs/postgres.md.
var trajSchema = append(sqltraj.Schema{
	Types:   sqltraj.Types{Big: "bigint", Int: "integer", Small: "smallint", Tiny: "smallint", Flag: "boolean", Float: "double precision", Text: "text"},
	CellKey: "bigint primary key", Coord: "bigint", Cell: []string{"geom geometry(Point, 0) not null"},
}.Statements(), `create index if not exists traj_cells_geom on traj_cells using gist (geom)`)

// d2 is the exact squared distance of a cell to ($1, $2), in bigint.
const d2 = `((c.easting - $1::bigint) * (c.easting - $1::bigint) + (c.northing - $2::bigint) * (c.northing - $2::bigint))`

const (
	// trajDistanceSQL: GiST candidates by ST_DWithin with the radius plus
	// one metre (a float distance must not drop a cell exactly on the
	// circle), then the exact integer test.
	trajDistanceSQL = `select c.id, c.easting, c.northing from traj_cells as c
		where ST_DWithin(c.geom, ST_MakePoint($1, $2), $3::float8 + 1) and ` + d2 + ` <= $3::bigint * $3::bigint
		order by ` + d2 + `, c.id`
	// trajKNNSQL: the k cells nearest by the index's <-> order (within the
	// bound) give b, the largest exact squared distance among them — an
	// upper bound of the true k-th distance whatever float rounding did to
	// the order; then every cell within b (exactly) is ordered by exact
	// squared distance and id and cut at k.
	trajKNNSQL = `with cand as (
			select ` + d2 + ` as d from traj_cells as c
			where ST_DWithin(c.geom, ST_MakePoint($1, $2), $4::float8 + 1)
			order by c.geom <-> ST_MakePoint($1, $2) limit $3),
		bound as (select max(d) as b from cand)
		select c.id, c.easting, c.northing from traj_cells as c, bound
		where bound.b is not null
		  and ST_DWithin(c.geom, ST_MakePoint($1, $2), sqrt(bound.b::float8) + 1)
		  and ` + d2 + ` <= least(bound.b, $4::bigint * $4::bigint)
		order by ` + d2 + `, c.id limit $3`
)

// trajRangeSQL: GiST candidates in the triangle's bounding box (&&), then
// the exact test (sqltraj.TriangleSQL) in bigint arithmetic.
var trajRangeSQL = sqltraj.TriangleSQL(func(i int) string { return param(i) + "::bigint" },
	`from traj_cells as c where c.geom && ST_MakeEnvelope($7, $8, $9, $10, 0)`)

var trajRegionSQL = sqltraj.RegionSQL(param)

// trajStore is the PostgreSQL trajectory.Store.
type trajStore struct {
	sqltraj.Reads
	db *DB
}

var (
	_ trajectory.Backend = (*DB)(nil)
	_ trajectory.Store   = (*trajStore)(nil)
)

// Trajectory implements trajectory.Backend. PostGIS must be installed in
// the database (the cluster engine creates it in fieldbench).
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	err := pgx.BeginFunc(ctx, db.w, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "create extension if not exists postgis"); err != nil {
			return fmt.Errorf("PostGIS is not available (package postgresql-15-postgis-3, scripts/install-servers.sh): %w", err)
		}
		for _, q := range trajSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres trajectory: create schema: %w", err)
	}
	query := func(ctx context.Context, q string, args ...any) (sqltraj.Rows, error) {
		r, err := db.reader().Query(ctx, q, args...)
		return rows{r}, err
	}
	return &trajStore{db: db, Reads: sqltraj.Reads{
		Name: "postgres trajectory",
		Within: func(ctx context.Context, p trajectory.Point, radius int64) (sqltraj.Rows, error) {
			return query(ctx, trajDistanceSQL, p.X, p.Y, radius)
		},
		Nearest: func(ctx context.Context, p trajectory.Point, k int, maxDist int64) (sqltraj.Rows, error) {
			return query(ctx, trajKNNSQL, p.X, p.Y, k, maxDist)
		},
		Inside: func(ctx context.Context, t trajectory.Triangle) (sqltraj.Rows, error) {
			minX, minY, maxX, maxY := t.Bounds()
			return query(ctx, trajRangeSQL, t[0].X, t[0].Y, t[1].X, t[1].Y, t[2].X, t[2].Y,
				float64(minX), float64(minY), float64(maxX), float64(maxY))
		},
		Busiest: func(ctx context.Context, day trajectory.Weekday, slot int) sqltraj.Row {
			return db.reader().QueryRow(ctx, trajRegionSQL, int16(day), int16(slot))
		},
		// On the primary.
		Count:  func(ctx context.Context) sqltraj.Row { return db.w.QueryRow(ctx, sqltraj.CountsSQL) },
		NoRows: pgx.ErrNoRows,
	}}, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer: one transaction with a COPY of the
// records and an INSERT ... ON CONFLICT DO NOTHING of their cells (ids
// sorted, so concurrent writers lock cells in one order).
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	seen := map[int64]*trajectory.Cell{}
	for i := range recs {
		seen[recs[i].Cell.ID] = recs[i].Cell
	}
	ids := make([]int64, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	es, ns := make([]int64, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		es[i], ns[i] = seen[id].Easting, seen[id].Northing
	}
	row := make([]any, len(sqltraj.RecordColumns))
	err := pgx.BeginFunc(ctx, s.db.w, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"traj_records"}, sqltraj.RecordColumns,
			pgx.CopyFromSlice(len(recs), func(i int) ([]any, error) {
				r := &recs[i]
				c := r.Cell
				row[0], row[1], row[2], row[3], row[4] = r.User, c.ID, int16(r.Weekday), r.Time, int16(r.Slot())
				row[5], row[6], row[7], row[8], row[9] = r.Profile, r.Segment, r.GSM(), r.UMTS(), r.LTE()
				row[10], row[11], row[12], row[13] = c.Easting, c.Northing, c.Lat, c.Lon
				row[14], row[15], row[16], row[17], row[18] = c.Municipality, c.County, c.City, c.Postcode, c.Address
				return row, nil
			})); err != nil {
			return fmt.Errorf("copy %d records: %w", len(recs), err)
		}
		if _, err := tx.Exec(ctx, `insert into traj_cells (id, easting, northing, geom)
			select id, e, n, ST_MakePoint(e, n) from unnest($1::bigint[], $2::bigint[], $3::bigint[]) as u(id, e, n)
			order by id on conflict (id) do nothing`, ids, es, ns); err != nil {
			return fmt.Errorf("insert %d cells: %w", len(ids), err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres trajectory: write: %w", err)
	}
	return nil
}

// Reset implements trajectory.Store: TRUNCATE of records and cells.
func (s *trajStore) Reset(ctx context.Context) error {
	if _, err := s.db.w.Exec(ctx, `truncate traj_records, traj_cells`); err != nil {
		return fmt.Errorf("postgres trajectory: reset: %w", err)
	}
	return nil
}
