package rethinkdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// The trajectory family, as the study ran it on RethinkDB: the records in
// tables with a secondary index for the region query, the cells in a table
// with a geo index that getNearest and getIntersecting read.
//
//   - traj_records_K: one document per record, its 18 attributes plus
//     slot, under a compound secondary index day_slot = [day, slot] that
//     the region query reads with getAll. The records are split by hour of
//     the week into parts= tables (K = hour mod parts; default 168, one
//     table per hour): reqlite reads every document of a table for any
//     index lookup, so one table of every record would make each region
//     query read them all. On a real RethinkDB parts=1 gives the single
//     table the study used; the query is the same.
//   - traj_cells: one document per cell that a record named, {id: cell,
//     easting, northing, loc: r.point(lon, lat)}, with a geo index on loc.
//
// The queries narrow the candidates with RethinkDB's geo operators on the
// WGS 84 ellipsoid, widened by a margin for the difference between the
// ellipsoid and the city's planar grid, then decide exactly on the client
// in integers (trajectory.Near, InTriangle), as every other adapter does:
//
//   - distance: getNearest(point, {index: loc, max_dist: L + margin});
//   - k-NN: the same in growing radii (trajectory.WidenKNN), since the
//     ellipsoid's order is not the plane's;
//   - range: getIntersecting(polygon, {index: loc}) of the triangle's
//     bounding box widened by the margin, its corners projected one by one;
//   - region: getAll([day, slot], {index: day_slot}).pluck(cell)
//     .group(cell).count(),
//     the largest count first, ties by the smallest cell id.
//
// Writes are not all or nothing: RethinkDB has no multi-document
// transactions, so a failed Write can leave part of its records written.
const (
	trajRecords = "traj_records"
	trajCells   = "traj_cells"
	geoIndex    = "loc"
	regionIndex = "day_slot"
	// maxNearest is getNearest's max_results: far above the city's
	// cells (about 320), so that no answer is cut; a result that reaches
	// it is refused rather than taken as complete.
	maxNearest = 10_000
)

// geoMargin widens a search on the ellipsoid around a planar one: the
// grid's scale factor (0.9996 on the central meridian, up to ~1.0008 at
// the zone's edge), the 6-decimal rounding of the cells' coordinates
// (0.1 m), the projection series' error (well under a metre) and a box
// edge that is straight on the grid but not in longitude and latitude
// (under a metre for a few kilometres), with room to spare. Candidates
// are filtered exactly afterwards, so a wider margin costs reads, never
// answers.
func geoMargin(r int64) int64 { return r/100 + 50 }

// The projection's domain: a search box inside it maps to longitudes and
// latitudes where the grid's scale factor stays within 0.2 % of 1 (up to
// about 430 km from the zone's central meridian), which geoMargin covers.
// A search that leaves it (the suite's edge cases: a point a million
// kilometres away) reads every cell instead, and the exact test decides.
const (
	domainMinX, domainMaxX = 100_000, 900_000
	domainMinY, domainMaxY = 0, 9_300_000
)

func inDomain(minX, minY, maxX, maxY int64) bool {
	return minX >= domainMinX && maxX <= domainMaxX && minY >= domainMinY && maxY <= domainMaxY
}

// hourOfWeek is a record's hour of the week, 0..167.
func hourOfWeek(day trajectory.Weekday, slot int) int {
	return (int(day)-1)*24 + slot*trajectory.SlotSeconds/3600
}

// recordTable is the records table of day and slot.
func (db *DB) recordTable(day trajectory.Weekday, slot int) string {
	return trajRecords + "_" + strconv.Itoa(hourOfWeek(day, slot)%db.cfg.Parts)
}

// isTrajTable reports whether name is one of the family's tables.
func isTrajTable(name string) bool {
	return name == trajCells || strings.HasPrefix(name, trajRecords+"_")
}

// trajRecordDoc is one record as stored.
type trajRecordDoc struct {
	User         int64   `rethinkdb:"user"`
	Cell         int64   `rethinkdb:"cell"`
	Day          int     `rethinkdb:"day"`
	Time         int32   `rethinkdb:"time"`
	Slot         int     `rethinkdb:"slot"`
	Profile      int16   `rethinkdb:"profile"`
	Segment      int16   `rethinkdb:"segment"`
	GSM          bool    `rethinkdb:"gsm"`
	UMTS         bool    `rethinkdb:"umts"`
	LTE          bool    `rethinkdb:"lte"`
	Easting      int64   `rethinkdb:"easting"`
	Northing     int64   `rethinkdb:"northing"`
	Lat          float64 `rethinkdb:"lat"`
	Lon          float64 `rethinkdb:"lon"`
	Municipality string  `rethinkdb:"municipality"`
	County       string  `rethinkdb:"county"`
	City         string  `rethinkdb:"city"`
	Postcode     string  `rethinkdb:"postcode"`
	Address      string  `rethinkdb:"address"`
}

// cellRow is a cell as the queries read it.
type cellRow struct {
	ID       int64 `rethinkdb:"id"`
	Easting  int64 `rethinkdb:"easting"`
	Northing int64 `rethinkdb:"northing"`
}

func (c cellRow) hit() trajectory.Hit {
	return trajectory.Hit{Cell: c.ID, Easting: c.Easting, Northing: c.Northing}
}

type trajStore struct {
	trajectory.BoxSearch
	db *DB
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	s := &trajStore{db: db}
	s.BoxSearch = trajectory.BoxSearch{Name: "rethinkdb trajectory", Cells: s.polygonCells}
	if err := s.ensureCells(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

func (s *trajStore) ensureCells(ctx context.Context) error {
	return s.db.ensureTable(ctx, trajCells, index{name: geoIndex, fn: func(row r.Term) any { return row.Field("loc") }, opts: r.IndexCreateOpts{Geo: true}})
}

func (s *trajStore) ensureRecords(ctx context.Context, table string) error {
	return s.db.ensureTable(ctx, table, index{name: regionIndex, fn: func(row r.Term) any {
		return []any{row.Field("day"), row.Field("slot")}
	}})
}

// Write implements trajectory.Writer: the records in one insert per
// records table, the tables in parallel; then the cells not seen before in
// this request in one insert that leaves a stored cell as it is (conflict
// "update" with the same values). It is NOT all or nothing (see above).
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	docs := map[string][]trajRecordDoc{}
	var cells []map[string]any
	seen := map[int64]bool{}
	for i := range recs {
		rec := &recs[i]
		c := rec.Cell
		t := s.db.recordTable(rec.Weekday, rec.Slot())
		docs[t] = append(docs[t], trajRecordDoc{
			User: rec.User, Cell: c.ID, Day: int(rec.Weekday), Time: rec.Time, Slot: rec.Slot(), Profile: rec.Profile,
			Segment: rec.Segment, GSM: rec.GSM(), UMTS: rec.UMTS(), LTE: rec.LTE(), Easting: c.Easting, Northing: c.Northing,
			Lat: c.Lat, Lon: c.Lon, Municipality: c.Municipality, County: c.County, City: c.City, Postcode: c.Postcode,
			Address: c.Address,
		})
		if !seen[c.ID] {
			seen[c.ID] = true
			cells = append(cells, map[string]any{"id": c.ID, "easting": c.Easting, "northing": c.Northing, "loc": r.Point(c.Lon, c.Lat)})
		}
	}
	tables := make([]string, 0, len(docs))
	for t := range docs {
		tables = append(tables, t)
	}
	err := parallel(ctx, len(tables), func(ctx context.Context, i int) error {
		t := tables[i]
		if err := s.ensureRecords(ctx, t); err != nil {
			return err
		}
		if err := s.db.write(ctx, s.db.db.Table(t).Insert(docs[t]), len(docs[t])); err != nil {
			return fmt.Errorf("insert into %s: %w", t, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: write %d records: %w", s.Name, len(recs), err)
	}
	if err := s.ensureCells(ctx); err != nil {
		return err
	}
	err = s.db.withPoints(func() error {
		_, err := s.db.db.Table(trajCells).Insert(cells, r.InsertOpts{Conflict: "update"}).RunWrite(s.db.s, r.RunOpts{Context: ctx})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: write %d records: cells: %w", s.Name, len(recs), err)
	}
	return nil
}

// near returns the cells getNearest finds within r metres of p on the
// ellipsoid, widened by geoMargin.
func (s *trajStore) near(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	m := radius + geoMargin(radius)
	if !inDomain(p.X-m, p.Y-m, p.X+m, p.Y+m) {
		return s.allCells(ctx)
	}
	lat, lon := trajectory.LatLon(p)
	var rows []struct {
		Doc cellRow `rethinkdb:"doc"`
	}
	q := s.db.db.Table(trajCells).GetNearest(r.Point(lon, lat), r.GetNearestOpts{
		Index: geoIndex, MaxDist: float64(m), Unit: "m", MaxResults: maxNearest})
	if err := s.db.withPoints(func() error { return s.db.all(ctx, q, &rows) }); err != nil {
		return nil, err
	}
	if len(rows) >= maxNearest {
		return nil, fmt.Errorf("getNearest gave %d cells, its limit: the answer may be cut", len(rows))
	}
	out := make([]trajectory.Hit, len(rows))
	for i, row := range rows {
		out[i] = row.Doc.hit()
	}
	return out, nil
}

// Distance implements trajectory.Querier: getNearest, then the exact test.
func (s *trajStore) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: distance: %w", s.Name, err)
	}
	c, err := s.near(ctx, p, radius)
	if err != nil {
		return nil, fmt.Errorf("%s: distance: %w", s.Name, err)
	}
	return trajectory.Near(c, p, radius), nil
}

// KNN implements trajectory.Querier with getNearest in growing radii
// (trajectory.WidenKNN): the k nearest on the plane are picked exactly on
// the client.
func (s *trajStore) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: knn: %w", s.Name, err)
	}
	out, err := trajectory.WidenKNN(ctx, p, k, maxDist, func(ctx context.Context, r int64) ([]trajectory.Hit, error) {
		return s.near(ctx, p, r)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: knn: %w", s.Name, err)
	}
	return out, nil
}

// polygonCells returns the cells getIntersecting finds in a polygon
// through the corners of the box widened by geoMargin, each corner
// projected to longitude and latitude: a superset of the planar box (the
// range query's exact test is BoxSearch's). The corners are given as
// [lon, lat] arrays, which RethinkDB and reqlite both accept (reqlite
// fails on a polygon of r.point terms).
func (s *trajStore) polygonCells(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	m := geoMargin(max(maxX-minX, maxY-minY))
	if !inDomain(minX-m, minY-m, maxX+m, maxY+m) {
		return s.allCells(ctx)
	}
	corners := []trajectory.Point{{X: minX - m, Y: minY - m}, {X: maxX + m, Y: minY - m}, {X: maxX + m, Y: maxY + m}, {X: minX - m, Y: maxY + m}}
	ring := make([]any, len(corners))
	for i, p := range corners {
		lat, lon := trajectory.LatLon(p)
		ring[i] = []any{lon, lat}
	}
	return s.cells(ctx, s.db.db.Table(trajCells).GetIntersecting(r.Polygon(ring...), r.GetIntersectingOpts{Index: geoIndex}))
}

// allCells reads every cell (a search outside the projection's domain).
func (s *trajStore) allCells(ctx context.Context) ([]trajectory.Hit, error) {
	return s.cells(ctx, s.db.db.Table(trajCells))
}

// cells runs q, a selection of cells, and returns them as hits.
func (s *trajStore) cells(ctx context.Context, q r.Term) ([]trajectory.Hit, error) {
	var rows []cellRow
	if err := s.db.all(ctx, q.Pluck("id", "easting", "northing"), &rows); err != nil {
		return nil, err
	}
	out := make([]trajectory.Hit, len(rows))
	for i, row := range rows {
		out[i] = row.hit()
	}
	return out, nil
}

// Region implements trajectory.Querier: getAll on the day_slot index of
// the slot's records table, plucked to the cell, grouped by cell and
// counted on the server, the largest count first (ties: the smallest cell
// id). The pluck also keeps reqlite working: its group of a getAll
// selection fails with a JavaScript TypeError (which reaches the driver as
// "Unexpected response type: 0"). A records table that was never written
// has no records.
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("%s: region: %w", s.Name, err)
	}
	t := s.db.recordTable(day, slot)
	if ok, err := s.db.hasTable(ctx, t); err != nil || !ok {
		return trajectory.Busiest{}, false, err
	}
	var rows []struct {
		Cell int64 `rethinkdb:"group"`
		N    int64 `rethinkdb:"reduction"`
	}
	q := s.db.db.Table(t).GetAllByIndex(regionIndex, []any{int(day), slot}).Pluck("cell").Group("cell").Count().Ungroup().
		OrderBy(r.Desc("reduction"), r.Asc("group")).Limit(1)
	if err := s.db.all(ctx, q, &rows); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("%s: region: %w", s.Name, err)
	}
	if len(rows) == 0 {
		return trajectory.Busiest{}, false, nil
	}
	return trajectory.Busiest{Cell: rows[0].Cell, Visits: rows[0].N}, true, nil
}

// Counts implements trajectory.Store: the records of every records table
// (counted in parallel) and the cells.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	names, err := s.db.tableList(ctx)
	if err != nil {
		return trajectory.Counts{}, err
	}
	var c trajectory.Counts
	var mu sync.Mutex
	err = parallel(ctx, len(names), func(ctx context.Context, i int) error {
		if !isTrajTable(names[i]) {
			return nil
		}
		n, err := s.db.count(ctx, names[i])
		mu.Lock()
		defer mu.Unlock()
		if names[i] == trajCells {
			c.Cells = n
		} else {
			c.Records += n
		}
		return err
	})
	if err != nil {
		return trajectory.Counts{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	return c, nil
}

// Reset implements trajectory.Store: every table of the family is dropped
// (the next write creates them and their indexes again), and the cells
// table is created again empty.
func (s *trajStore) Reset(ctx context.Context) error {
	if err := s.db.dropTables(ctx, isTrajTable); err != nil {
		return fmt.Errorf("%s: reset: %w", s.Name, err)
	}
	return s.ensureCells(ctx)
}
