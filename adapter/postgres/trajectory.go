package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

var _ trajectory.Backend = (*DB)(nil)

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
var trajSchema = []string{
	`create table if not exists traj_records (
		user_id      bigint  not null,
		site_id      bigint  not null,
		weekday      smallint not null, -- 1 = Monday .. 7 = Sunday
		time         integer not null,  -- seconds since midnight
		slot         smallint not null, -- time / 300
		profile_id   smallint not null,
		segment_id   smallint not null,
		gsm          boolean not null,
		umts         boolean not null,
		lte          boolean not null,
		easting      bigint  not null,
		northing     bigint  not null,
		latitude     double precision not null,
		longitude    double precision not null,
		municipality text not null,
		county       text not null,
		city         text not null,
		postcode     text not null,
		address      text not null
	)`,
	`create index if not exists traj_records_region on traj_records (weekday, slot, site_id)`,
	`create table if not exists traj_cells (
		id       bigint primary key,
		easting  bigint not null,
		northing bigint not null,
		geom     geometry(Point, 0) not null
	)`,
	`create index if not exists traj_cells_geom on traj_cells using gist (geom)`,
}

var trajCols = []string{"user_id", "site_id", "weekday", "time", "slot", "profile_id", "segment_id",
	"gsm", "umts", "lte", "easting", "northing", "latitude", "longitude",
	"municipality", "county", "city", "postcode", "address"}

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
	// trajRangeSQL: GiST candidates in the triangle's bounding box (&&),
	// then the exact closed point-in-triangle test: the three edge cross
	// products may not have mixed signs.
	trajRangeSQL = `select id, easting, northing from (
			select c.id, c.easting, c.northing,
				($3::bigint - $1::bigint) * (c.northing - $2::bigint) - ($4::bigint - $2::bigint) * (c.easting - $1::bigint) as e1,
				($5::bigint - $3::bigint) * (c.northing - $4::bigint) - ($6::bigint - $4::bigint) * (c.easting - $3::bigint) as e2,
				($1::bigint - $5::bigint) * (c.northing - $6::bigint) - ($2::bigint - $6::bigint) * (c.easting - $5::bigint) as e3
			from traj_cells as c
			where c.geom && ST_MakeEnvelope($7, $8, $9, $10, 0)) as t
		where not ((e1 < 0 or e2 < 0 or e3 < 0) and (e1 > 0 or e2 > 0 or e3 > 0))
		order by id`
	trajRegionSQL = `select site_id, count(*) as n from traj_records
		where weekday = $1 and slot = $2
		group by site_id order by n desc, site_id limit 1`
)

// trajStore is the PostgreSQL trajectory.Store.
type trajStore struct{ db *DB }

var _ trajectory.Store = (*trajStore)(nil)

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
	return &trajStore{db: db}, nil
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
	row := make([]any, len(trajCols))
	err := pgx.BeginFunc(ctx, s.db.w, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"traj_records"}, trajCols,
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

func trajHits(ctx context.Context, db *DB, what, q string, args ...any) ([]trajectory.Hit, error) {
	rows, err := db.reader().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres trajectory: %s: %w", what, err)
	}
	defer rows.Close()
	var out []trajectory.Hit
	for rows.Next() {
		var h trajectory.Hit
		if err := rows.Scan(&h.Cell, &h.Easting, &h.Northing); err != nil {
			return nil, fmt.Errorf("postgres trajectory: %s: scan: %w", what, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres trajectory: %s: %w", what, err)
	}
	return out, nil
}

// Distance implements trajectory.Querier.
func (s *trajStore) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("postgres trajectory: distance: %w", err)
	}
	return trajHits(ctx, s.db, "distance", trajDistanceSQL, p.X, p.Y, radius)
}

// KNN implements trajectory.Querier (see trajKNNSQL).
func (s *trajStore) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("postgres trajectory: knn: %w", err)
	}
	return trajHits(ctx, s.db, "knn", trajKNNSQL, p.X, p.Y, k, maxDist)
}

// Range implements trajectory.Querier (see trajRangeSQL).
func (s *trajStore) Range(ctx context.Context, t trajectory.Triangle) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpRange, Tri: t}).Validate(); err != nil {
		return nil, fmt.Errorf("postgres trajectory: range: %w", err)
	}
	minX, minY, maxX, maxY := t.Bounds()
	return trajHits(ctx, s.db, "range", trajRangeSQL, t[0].X, t[0].Y, t[1].X, t[1].Y, t[2].X, t[2].Y,
		float64(minX), float64(minY), float64(maxX), float64(maxY))
}

// Region implements trajectory.Querier.
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("postgres trajectory: region: %w", err)
	}
	var b trajectory.Busiest
	err := s.db.reader().QueryRow(ctx, trajRegionSQL, int16(day), int16(slot)).Scan(&b.Cell, &b.Visits)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return b, false, nil
	case err != nil:
		return b, false, fmt.Errorf("postgres trajectory: region: %w", err)
	}
	return b, true, nil
}

// Counts implements trajectory.Store (on the primary).
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	if err := s.db.w.QueryRow(ctx, `select (select count(*) from traj_records), (select count(*) from traj_cells)`).
		Scan(&c.Records, &c.Cells); err != nil {
		return c, fmt.Errorf("postgres trajectory: count: %w", err)
	}
	return c, nil
}

// Reset implements trajectory.Store: TRUNCATE of records and cells.
func (s *trajStore) Reset(ctx context.Context) error {
	if _, err := s.db.w.Exec(ctx, `truncate traj_records, traj_cells`); err != nil {
		return fmt.Errorf("postgres trajectory: reset: %w", err)
	}
	return nil
}
