package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/fieldbench/fieldbench/internal/sqltraj"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

var _ trajectory.Backend = (*DB)(nil)

// The trajectory schema. Records keep all 18 attributes (the study imported
// its CSV rows as they were) plus the 5-minute slot, as one plain rowid
// table: appends are cheap in either write order. Cells are derived from
// the records by a trigger, so whoever writes records also maintains the
// cells and their R*Tree and a query always sees exactly the cells of the
// stored records:
//
//   - traj_cells: one row per cell id with its position;
//   - traj_cell_rtree: an R*Tree (rtree_i32: whole-metre coordinates are
//     stored exactly, where the float rtree would round northings of
//     6.2 million to float32 steps of 0.5 m) holding each cell as a point
//     box, for the spatial candidate search;
//   - traj_records_region: an index on (weekday, slot, site_id), so the
//     region query counts one slot's records per cell by a covering index
//     range scan already in cell order.
var trajSchema = append(sqltraj.Schema{
	Types:   sqltraj.Types{Big: "integer", Int: "integer", Small: "integer", Tiny: "integer", Flag: "integer", Float: "real", Text: "text"},
	CellKey: "integer primary key", Coord: "integer",
}.Statements(),
	`create virtual table if not exists traj_cell_rtree using rtree_i32(id, minx, maxx, miny, maxy)`,
	`create trigger if not exists traj_records_cell after insert on traj_records
	when not exists (select 1 from traj_cells where id = new.site_id)
	begin
		insert into traj_cells (id, easting, northing) values (new.site_id, new.easting, new.northing);
		insert into traj_cell_rtree (id, minx, maxx, miny, maxy)
			values (new.site_id, new.easting, new.easting, new.northing, new.northing);
	end`)

// trajDrop removes the schema (Reset drops and recreates: far faster than
// deleting millions of rows one by one).
var trajDrop = []string{
	`drop trigger if exists traj_records_cell`,
	`drop table if exists traj_records`,
	`drop table if exists traj_cells`,
	`drop table if exists traj_cell_rtree`,
}

// trajCols is the number of parameters of a record.
var trajCols = len(sqltraj.RecordColumns)

// trajChunks are the row counts of the prepared multi-row INSERTs a write
// request is cut into (19 parameters a row: 100 rows are 1,900 of SQLite's
// 32,766).
var trajChunks = []int{100, 10, 1}

// Spatial queries: candidates from the R*Tree by bounding box, then the
// exact test on the cells' integer coordinates (squared distances, cross
// products), all in 64-bit integer arithmetic inside SQLite.
const (
	trajNearSQL = `select c.id, c.easting, c.northing,
			(c.easting - ?1) * (c.easting - ?1) + (c.northing - ?2) * (c.northing - ?2) as d2
		from traj_cell_rtree as r join traj_cells as c on c.id = r.id
		where r.minx <= ?4 and r.maxx >= ?3 and r.miny <= ?6 and r.maxy >= ?5 and d2 <= ?7
		order by d2, c.id`
)

// trajRangeSQL: R*Tree candidates in the triangle's bounding box, then the
// exact test (sqltraj.TriangleSQL).
var trajRangeSQL = sqltraj.TriangleSQL(func(i int) string { return "?" + strconv.Itoa(i) },
	`from traj_cell_rtree as r join traj_cells as c on c.id = r.id
			where r.minx <= ?8 and r.maxx >= ?7 and r.miny <= ?10 and r.maxy >= ?9`)

var trajRegionSQL = sqltraj.RegionSQL(param)

// trajStore is the SQLite trajectory.Store.
type trajStore struct {
	sqltraj.Reads
	db *DB

	near, nearK, rng, region *sql.Stmt   // reader pool
	ins                      []*sql.Stmt // writer pool, one per trajChunks entry
	stmts                    []*sql.Stmt

	args sync.Pool // *[]any of a write request's parameters
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend: it creates the schema when
// missing and prepares the statements.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	if err := db.trajCreate(ctx); err != nil {
		return nil, err
	}
	s := &trajStore{db: db}
	s.args.New = func() any { a := make([]any, 0, trajChunks[0]*trajCols); return &a }
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.Reads = sqltraj.Reads{
		Name: "sqlite trajectory",
		Within: func(ctx context.Context, p trajectory.Point, r int64) (sqltraj.Rows, error) {
			return s.near.QueryContext(ctx, nearArgs(p, r)...)
		},
		Nearest: func(ctx context.Context, p trajectory.Point, k int, r int64) (sqltraj.Rows, error) {
			return s.nearK.QueryContext(ctx, append(nearArgs(p, r), k)...)
		},
		// SQLite's R*Tree has no nearest-neighbour search.
		Grow: true,
		D2:   true,
		Inside: func(ctx context.Context, t trajectory.Triangle) (sqltraj.Rows, error) {
			minX, minY, maxX, maxY := t.Bounds()
			return s.rng.QueryContext(ctx, t[0].X, t[0].Y, t[1].X, t[1].Y, t[2].X, t[2].Y,
				clamp32(minX), clamp32(maxX), clamp32(minY), clamp32(maxY))
		},
		Busiest: func(ctx context.Context, day trajectory.Weekday, slot int) sqltraj.Row {
			return s.region.QueryRowContext(ctx, int64(day), int64(slot))
		},
		Count:  func(ctx context.Context) sqltraj.Row { return db.r.QueryRowContext(ctx, sqltraj.CountsSQL) },
		NoRows: sql.ErrNoRows,
	}
	return s, nil
}

func (db *DB) trajCreate(ctx context.Context) error {
	for _, q := range trajSchema {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite trajectory: create schema: %w", err)
		}
	}
	return nil
}

func (s *trajStore) prepare(ctx context.Context) error {
	prep := func(pool *sql.DB, q string) (*sql.Stmt, error) {
		st, err := pool.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("sqlite trajectory: prepare %q: %w", strings.Join(strings.Fields(q), " "), err)
		}
		s.stmts = append(s.stmts, st)
		return st, nil
	}
	var err error
	if s.near, err = prep(s.db.r, trajNearSQL); err != nil {
		return err
	}
	if s.nearK, err = prep(s.db.r, trajNearSQL+` limit ?8`); err != nil {
		return err
	}
	if s.rng, err = prep(s.db.r, trajRangeSQL); err != nil {
		return err
	}
	if s.region, err = prep(s.db.r, trajRegionSQL); err != nil {
		return err
	}
	for _, n := range trajChunks {
		st, err := prep(s.db.w, sqltraj.InsertSQL+values(trajCols, n))
		if err != nil {
			return err
		}
		s.ins = append(s.ins, st)
	}
	return nil
}

// Close releases the prepared statements; the DB stays open.
func (s *trajStore) Close() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	return errors.Join(errs...)
}

// Write implements trajectory.Writer: one transaction on the writer
// connection, multi-row INSERTs of 100, 10 and 1 rows.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ap := s.args.Get().(*[]any)
	defer s.args.Put(ap)
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite trajectory: begin write: %w", err)
	}
	for ci := 0; len(recs) > 0; {
		for trajChunks[ci] > len(recs) {
			ci++
		}
		n := trajChunks[ci]
		args := (*ap)[:0]
		for i := range n {
			args = sqltraj.AppendRecord(args, &recs[i])
		}
		*ap = args
		if _, err := tx.StmtContext(ctx, s.ins[ci]).ExecContext(ctx, args...); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sqlite trajectory: insert %d records: %w", n, err)
		}
		recs = recs[n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite trajectory: commit write: %w", err)
	}
	return nil
}

// clamp32 keeps a bounding-box edge inside rtree_i32's range (queries may
// reach beyond it; no stored cell can).
func clamp32(v int64) int64 { return min(max(v, math.MinInt32), math.MaxInt32) }

func nearArgs(p trajectory.Point, r int64) []any {
	return []any{p.X, p.Y, clamp32(p.X - r), clamp32(p.X + r), clamp32(p.Y - r), clamp32(p.Y + r), r * r}
}

// Reset implements trajectory.Store: drop and recreate the schema in one
// transaction on the writer connection. Prepared statements re-prepare
// themselves against the new tables (SQLite does it on a schema change).
func (s *trajStore) Reset(ctx context.Context) error {
	tx, err := s.db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite trajectory: begin reset: %w", err)
	}
	for _, q := range append(append([]string(nil), trajDrop...), trajSchema...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sqlite trajectory: reset: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite trajectory: commit reset: %w", err)
	}
	return nil
}
