package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

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
var trajSchema = []string{
	`create table if not exists traj_records (
		rid          bigint not null auto_increment primary key,
		user_id      bigint not null,
		site_id      bigint not null,
		weekday      tinyint not null,
		time         int not null,
		slot         smallint not null,
		profile_id   smallint not null,
		segment_id   smallint not null,
		gsm          tinyint not null,
		umts         tinyint not null,
		lte          tinyint not null,
		easting      bigint not null,
		northing     bigint not null,
		latitude     double not null,
		longitude    double not null,
		municipality varchar(64) not null,
		county       varchar(64) not null,
		city         varchar(64) not null,
		postcode     varchar(16) not null,
		address      varchar(128) not null,
		key traj_records_region (weekday, slot, site_id)
	) engine=InnoDB`,
	`create table if not exists traj_cells (
		id       bigint not null primary key,
		easting  bigint not null,
		northing bigint not null,
		pos      point not null,
		spatial index traj_cells_pos (pos)
	) engine=InnoDB`,
}

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
	trajRangeSQL = `select id, easting, northing from (
			select id, easting, northing,
				(? - ?) * (northing - ?) - (? - ?) * (easting - ?) as d1,
				(? - ?) * (northing - ?) - (? - ?) * (easting - ?) as d2,
				(? - ?) * (northing - ?) - (? - ?) * (easting - ?) as d3
			from traj_cells
			where mbrcontains(st_geomfromtext(?), pos)) as c
		where not ((d1 < 0 or d2 < 0 or d3 < 0) and (d1 > 0 or d2 > 0 or d3 > 0))
		order by id`
	trajRegionSQL = `select site_id, count(*) as n from traj_records
		where weekday = ? and slot = ?
		group by site_id order by n desc, site_id limit 1`
)

type trajStore struct{ db *DB }

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	for _, q := range trajSchema {
		if _, err := db.first().ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("mariadb trajectory: create schema: %w", err)
		}
	}
	return &trajStore{db: db}, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

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
				r := &chunk[i]
				c := r.Cell
				args = append(args, r.User, c.ID, int(r.Weekday), int(r.Time), r.Slot(),
					int(r.Profile), int(r.Segment), b2i(r.GSM()), b2i(r.UMTS()), b2i(r.LTE()),
					c.Easting, c.Northing, c.Lat, c.Lon, c.Municipality, c.County, c.City, c.Postcode, c.Address)
			}
			if _, err := tx.ExecContext(ctx, `insert into traj_records (user_id, site_id, weekday, time, slot,
				profile_id, segment_id, gsm, umts, lte, easting, northing, latitude, longitude,
				municipality, county, city, postcode, address) values `+values(19, len(chunk)), args...); err != nil {
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

func (s *trajStore) hits(ctx context.Context, what, q string, withD2 bool, args ...any) ([]trajectory.Hit, error) {
	rows, err := s.db.pick().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("mariadb trajectory: %s: %w", what, err)
	}
	defer rows.Close()
	var out []trajectory.Hit
	var h trajectory.Hit
	var d2 int64
	dst := []any{&h.Cell, &h.Easting, &h.Northing}
	if withD2 {
		dst = append(dst, &d2)
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("mariadb trajectory: %s: scan: %w", what, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mariadb trajectory: %s: %w", what, err)
	}
	return out, nil
}

func nearArgs(p trajectory.Point, r int64) []any {
	return []any{p.X, p.X, p.Y, p.Y, box(p.X-r, p.Y-r, p.X+r, p.Y+r), r * r}
}

// Distance implements trajectory.Querier.
func (s *trajStore) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("mariadb trajectory: distance: %w", err)
	}
	return s.hits(ctx, "distance", trajNearSQL, true, nearArgs(p, radius)...)
}

// KNN implements trajectory.Querier by a growing radius: 500 m, doubling
// up to maxDist. Once a round finds k cells within r, no cell outside r can
// be nearer than the k-th, so those k (exact squared distance, then id)
// are the answer. MariaDB's spatial index has no nearest-neighbour scan,
// and the order is by the exact integer squared distance rather than
// ST_Distance (a double square root), so ties are exact ties.
func (s *trajStore) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("mariadb trajectory: knn: %w", err)
	}
	r := min(int64(trajectory.KNNStartRadius), maxDist)
	for {
		out, err := s.hits(ctx, "knn", trajNearSQL+" limit ?", true, append(nearArgs(p, r), k)...)
		if err != nil || len(out) == k || r == maxDist {
			return out, err
		}
		r = min(2*r, maxDist)
	}
}

// Range implements trajectory.Querier: SPATIAL index candidates in the
// triangle's widened bounding box, then the exact closed point-in-triangle
// test (the three edge cross products may not have mixed signs).
// MariaDB's ST_Contains(triangle, pos) agrees on cells exactly on an edge
// or vertex (it counts the boundary, TestTrajectoryNativeBoundary), but it
// computes in doubles: at MaxCoord scale cross products reach 1e18, beyond
// 2^53, so the integer test is the one that decides.
func (s *trajStore) Range(ctx context.Context, t trajectory.Triangle) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpRange, Tri: t}).Validate(); err != nil {
		return nil, fmt.Errorf("mariadb trajectory: range: %w", err)
	}
	a, b, c := t[0], t[1], t[2]
	minX, minY, maxX, maxY := t.Bounds()
	return s.hits(ctx, "range", trajRangeSQL, false,
		b.X, a.X, a.Y, b.Y, a.Y, a.X,
		c.X, b.X, b.Y, c.Y, b.Y, b.X,
		a.X, c.X, c.Y, a.Y, c.Y, c.X,
		box(minX, minY, maxX, maxY))
}

// Region implements trajectory.Querier.
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("mariadb trajectory: region: %w", err)
	}
	var b trajectory.Busiest
	err := s.db.pick().QueryRowContext(ctx, trajRegionSQL, int(day), slot).Scan(&b.Cell, &b.Visits)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return b, false, nil
	case err != nil:
		return b, false, fmt.Errorf("mariadb trajectory: region: %w", err)
	}
	return b, true, nil
}

// Counts implements trajectory.Store.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	if err := s.db.first().QueryRowContext(ctx,
		"select (select count(*) from traj_records), (select count(*) from traj_cells)").Scan(&c.Records, &c.Cells); err != nil {
		return c, fmt.Errorf("mariadb trajectory: count: %w", err)
	}
	return c, nil
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
