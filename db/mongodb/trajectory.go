package mongodb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory collections:
//
//   - traj_records_K: one document per location update with the study's
//     18 attributes and the 5-minute slot, partitioned by hour of the week
//     (K = weekday × 24 + hour), under the index (day, slot, cell) that
//     the region query's $match and $group read: a region query reads one
//     partition;
//   - traj_cells_K: one document per cell that a record named, {_id: cell,
//     easting, northing, gx, gy} with gx, gy = floor(easting / 1000),
//     floor(northing / 1000) under the index (gx, gy), partitioned by
//     4 km square (K = floor(easting / 4000) × 100000 + floor(northing /
//     4000)); with geo=2dsphere also loc, a GeoJSON point [lon, lat],
//     under a 2dsphere index. A query reads the partitions its box touches.
//
// geo=grid (the default) answers distance, k-NN and range through
// trajectory.BoxSearch: a find of the grid squares the query's box touches
// (and the box itself on easting and northing), then the exact planar test
// on the client in integers, as the Cassandra and HBase adapters do. Every
// server that speaks the protocol answers it; FerretDB does here.
//
// geo=2dsphere narrows the candidates with MongoDB's own operators —
// $geoNear (distance, k-NN) and $geoWithin a polygon (range) — on a
// sphere, with a margin for the difference between the sphere and the
// city's planar grid, then applies the same exact test. FerretDB has no
// geo index or operator, so this path is NOT VERIFIED HERE.
const (
	trajRecords = "traj_records"
	trajCells   = "traj_cells"
	trajGrid    = 1000 // metres
	// trajSquare is the side of a cells partition's square (m).
	trajSquare = 4000
	// trajSquareKey multiplies a square's column in its partition number.
	trajSquareKey = 100000
	// trajMaxSquares is the most partitions a box names one by one; a
	// larger box reads the list of partitions instead.
	trajMaxSquares = 36
)

// floorDiv is floor(v / d) for d > 0.
func floorDiv(v, d int64) int64 {
	if v < 0 {
		return (v - d + 1) / d
	}
	return v / d
}

func gridOf(v int64) int64 { return floorDiv(v, trajGrid) }

// cellPart is the partition number of the square holding (x, y).
func cellPart(x, y int64) int64 {
	return floorDiv(x, trajSquare)*trajSquareKey + floorDiv(y, trajSquare)
}

// recordPart is the partition number of a record's hour of the week.
func recordPart(day trajectory.Weekday, slot int) int64 {
	return int64(day)*24 + int64(slot*trajectory.SlotSeconds/3600)
}

// geoMargin widens a spherical search around a planar one: the grid's
// scale factor (0.9996 on the central meridian, up to ~1.0008 at the
// zone's edge) plus the 6-decimal rounding of the cells' coordinates
// (0.1 m) and the projection series' error (well under a metre), with
// room to spare. Candidates are filtered exactly afterwards, so a wider
// margin costs reads, never answers.
func geoMargin(r int64) int64 { return r/100 + 50 }

type trajStore struct {
	trajectory.BoxSearch
	db *DB
}

// trajGeoStore is the geo=2dsphere store: $geoNear for distance and k-NN,
// $geoWithin for range (through BoxSearch with a polygon).
type trajGeoStore struct{ *trajStore }

var (
	_ trajectory.Store = (*trajStore)(nil)
	_ trajectory.Store = (*trajGeoStore)(nil)
)

// ensureTraj creates a partition's indexes before its first write.
func (db *DB) ensureTraj(ctx context.Context, coll string) error {
	if strings.HasPrefix(coll, trajRecords+"_") {
		return db.ensureIndexes(ctx, coll, idx("day_slot_cell", false, "day", 1, "slot", 1, "cell", 1))
	}
	cellIdx := []mongo.IndexModel{idx("gx_gy", false, "gx", 1, "gy", 1)}
	if db.cfg.Geo == Geo2DSphere {
		cellIdx = append(cellIdx, idx("loc_2dsphere", false, "loc", "2dsphere"))
	}
	return db.ensureIndexes(ctx, coll, cellIdx...)
}

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	s := &trajStore{db: db}
	if db.cfg.Geo == Geo2DSphere {
		g := &trajGeoStore{s}
		s.BoxSearch = trajectory.BoxSearch{Name: "mongodb trajectory (2dsphere, " + NotVerified + ")", Cells: g.polygonCells}
		return g, nil
	}
	s.BoxSearch = trajectory.BoxSearch{Name: "mongodb trajectory", Cells: s.gridCells}
	return s, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer: the records in unordered insertMany
// commands, one or more per partition, the partitions in parallel; then
// the cells not seen before in this request the same way (a cell already
// stored is a duplicate key, skipped). It is NOT all or nothing: FerretDB
// has no transactions and MongoDB has them only on replica sets; a failed
// Write can leave part of its records written, and returns the error.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	docs, cells := map[string][]any{}, map[string][]any{}
	seen := map[int64]bool{}
	for i := range recs {
		r := &recs[i]
		c := r.Cell
		rp := part(trajRecords, recordPart(r.Weekday, r.Slot()))
		docs[rp] = append(docs[rp], bson.D{
			{Key: "user", Value: r.User}, {Key: "cell", Value: c.ID}, {Key: "day", Value: int32(r.Weekday)},
			{Key: "time", Value: r.Time}, {Key: "slot", Value: int32(r.Slot())}, {Key: "profile", Value: int32(r.Profile)},
			{Key: "segment", Value: int32(r.Segment)}, {Key: "gsm", Value: r.GSM()}, {Key: "umts", Value: r.UMTS()},
			{Key: "lte", Value: r.LTE()}, {Key: "easting", Value: c.Easting}, {Key: "northing", Value: c.Northing},
			{Key: "lat", Value: c.Lat}, {Key: "lon", Value: c.Lon}, {Key: "municipality", Value: c.Municipality},
			{Key: "county", Value: c.County}, {Key: "city", Value: c.City}, {Key: "postcode", Value: c.Postcode},
			{Key: "address", Value: c.Address},
		})
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		cd := bson.D{{Key: "_id", Value: c.ID}, {Key: "easting", Value: c.Easting}, {Key: "northing", Value: c.Northing},
			{Key: "gx", Value: gridOf(c.Easting)}, {Key: "gy", Value: gridOf(c.Northing)}}
		if s.db.cfg.Geo == Geo2DSphere {
			cd = append(cd, bson.E{Key: "loc", Value: geoPoint(c.Lat, c.Lon)})
		}
		cp := part(trajCells, cellPart(c.Easting, c.Northing))
		cells[cp] = append(cells[cp], cd)
	}
	if err := s.db.insertGrouped(ctx, docs, false, s.db.ensureTraj); err != nil {
		return fmt.Errorf("%s: write %d records: %w", s.Name, len(recs), err)
	}
	if err := s.db.insertGrouped(ctx, cells, true, s.db.ensureTraj); err != nil {
		return fmt.Errorf("%s: write %d records: cells: %w", s.Name, len(recs), err)
	}
	return nil
}

func geoPoint(lat, lon float64) bson.D {
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lon, lat}}}
}

type cellRow struct {
	ID       int64 `bson:"_id"`
	Easting  int64 `bson:"easting"`
	Northing int64 `bson:"northing"`
}

var cellProjection = bson.D{{Key: "_id", Value: 1}, {Key: "easting", Value: 1}, {Key: "northing", Value: 1}}

// squares lists the cells partitions that the box touches: named one by
// one for a small box, else the existing partitions inside it.
func (s *trajStore) squares(ctx context.Context, minX, minY, maxX, maxY int64) ([]string, error) {
	x0, x1 := floorDiv(minX, trajSquare), floorDiv(maxX, trajSquare)
	y0, y1 := floorDiv(minY, trajSquare), floorDiv(maxY, trajSquare)
	var out []string
	if (x1-x0+1)*(y1-y0+1) <= trajMaxSquares {
		for x := x0; x <= x1; x++ {
			for y := y0; y <= y1; y++ {
				out = append(out, part(trajCells, x*trajSquareKey+y))
			}
		}
		return out, nil
	}
	all, err := s.db.partitions(ctx, trajCells)
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		k, _ := strconv.ParseInt(strings.TrimPrefix(p, trajCells+"_"), 10, 64)
		x := floorDiv(k, trajSquareKey) // northings are positive: y in [0, trajSquareKey)
		y := k - x*trajSquareKey
		if x >= x0 && x <= x1 && y >= y0 && y <= y1 {
			out = append(out, p)
		}
	}
	return out, nil
}

// inSquares runs query on every cells partition the box touches, in
// parallel, and gathers the cells.
func (s *trajStore) inSquares(ctx context.Context, minX, minY, maxX, maxY int64, query func(ctx context.Context, coll string) ([]trajectory.Hit, error)) ([]trajectory.Hit, error) {
	parts, err := s.squares(ctx, minX, minY, maxX, maxY)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []trajectory.Hit
	err = parallel(ctx, len(parts), func(ctx context.Context, i int) error {
		h, err := query(ctx, parts[i])
		mu.Lock()
		out = append(out, h...)
		mu.Unlock()
		return err
	})
	return out, err
}

// hits runs a find (or, with pipeline set, an aggregation) on the cells
// partition coll and returns its cells.
func (s *trajStore) hits(ctx context.Context, coll string, filter any, pipeline mongo.Pipeline) ([]trajectory.Hit, error) {
	var cur *mongo.Cursor
	var err error
	if pipeline != nil {
		cur, err = s.db.c(coll).Aggregate(ctx, pipeline)
	} else {
		cur, err = s.db.c(coll).Find(ctx, filter, options.Find().SetProjection(cellProjection))
	}
	if err != nil {
		return nil, err
	}
	var rows []cellRow
	if err := cur.All(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]trajectory.Hit, len(rows))
	for i, r := range rows {
		out[i] = trajectory.Hit{Cell: r.ID, Easting: r.Easting, Northing: r.Northing}
	}
	return out, nil
}

func between(lo, hi int64) bson.D {
	return bson.D{{Key: "$gte", Value: lo}, {Key: "$lte", Value: hi}}
}

// gridCells returns the cells of the grid squares the box touches that lie
// in the box: the squares select through the (gx, gy) index, the box
// trims them on the server; the caller's exact test decides.
func (s *trajStore) gridCells(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	filter := bson.D{
		{Key: "gx", Value: between(gridOf(minX), gridOf(maxX))},
		{Key: "gy", Value: between(gridOf(minY), gridOf(maxY))},
		{Key: "easting", Value: between(minX, maxX)},
		{Key: "northing", Value: between(minY, maxY)},
	}
	return s.inSquares(ctx, minX, minY, maxX, maxY, func(ctx context.Context, coll string) ([]trajectory.Hit, error) {
		return s.hits(ctx, coll, filter, nil)
	})
}

// polygonCells (geo=2dsphere, NOT VERIFIED HERE) returns the cells within
// a spherical polygon through the corners of the box widened by
// geoMargin: a superset of the planar box.
func (g *trajGeoStore) polygonCells(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	m := geoMargin(max(maxX-minX, maxY-minY))
	corners := []trajectory.Point{{X: minX - m, Y: minY - m}, {X: maxX + m, Y: minY - m}, {X: maxX + m, Y: maxY + m}, {X: minX - m, Y: maxY + m}}
	ring := bson.A{}
	for _, p := range append(corners, corners[0]) {
		lat, lon := trajectory.LatLon(p)
		ring = append(ring, bson.A{lon, lat})
	}
	filter := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: bson.D{
		{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}}}
	return g.inSquares(ctx, minX-m, minY-m, maxX+m, maxY+m, func(ctx context.Context, coll string) ([]trajectory.Hit, error) {
		return g.hits(ctx, coll, filter, nil)
	})
}

// near (geo=2dsphere, NOT VERIFIED HERE) returns the cells $geoNear finds
// within r metres of p on the sphere, widened by geoMargin.
func (g *trajGeoStore) near(ctx context.Context, p trajectory.Point, r int64) ([]trajectory.Hit, error) {
	lat, lon := trajectory.LatLon(p)
	m := r + geoMargin(r)
	pipeline := mongo.Pipeline{
		{{Key: "$geoNear", Value: bson.D{
			{Key: "near", Value: geoPoint(lat, lon)}, {Key: "key", Value: "loc"}, {Key: "spherical", Value: true},
			{Key: "maxDistance", Value: float64(m)}, {Key: "distanceField", Value: "d"},
		}}},
		{{Key: "$project", Value: cellProjection}},
	}
	return g.inSquares(ctx, p.X-m, p.Y-m, p.X+m, p.Y+m, func(ctx context.Context, coll string) ([]trajectory.Hit, error) {
		return g.hits(ctx, coll, nil, pipeline)
	})
}

// Distance implements trajectory.Querier with $geoNear and the exact test.
func (g *trajGeoStore) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: distance: %w", g.Name, err)
	}
	c, err := g.near(ctx, p, radius)
	if err != nil {
		return nil, fmt.Errorf("%s: distance: %w", g.Name, err)
	}
	return trajectory.Near(c, p, radius), nil
}

// KNN implements trajectory.Querier with $geoNear searches of growing
// radius (trajectory.WidenKNN): the sphere's order is not the plane's, so
// the k nearest are picked exactly on the client.
func (g *trajGeoStore) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: knn: %w", g.Name, err)
	}
	out, err := trajectory.WidenKNN(ctx, p, k, maxDist, func(ctx context.Context, r int64) ([]trajectory.Hit, error) {
		return g.near(ctx, p, r)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: knn: %w", g.Name, err)
	}
	return out, nil
}

// Region implements trajectory.Querier: one aggregation, $match on (day,
// slot) through the index, $group per cell, the largest count first (ties:
// the smallest cell id).
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("mongodb trajectory: region: %w", err)
	}
	cur, err := s.db.c(part(trajRecords, recordPart(day, slot))).Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "day", Value: int32(day)}, {Key: "slot", Value: int32(slot)}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$cell"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}, {Key: "_id", Value: 1}}}},
		{{Key: "$limit", Value: 1}},
	})
	if err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("mongodb trajectory: region: %w", err)
	}
	var rows []struct {
		Cell int64 `bson:"_id"`
		N    int64 `bson:"n"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("mongodb trajectory: region: %w", err)
	}
	if len(rows) == 0 {
		return trajectory.Busiest{}, false, nil
	}
	return trajectory.Busiest{Cell: rows[0].Cell, Visits: rows[0].N}, true, nil
}

// Counts implements trajectory.Store.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	var err error
	if c.Records, err = s.db.countAll(ctx, trajRecords); err != nil {
		return c, fmt.Errorf("mongodb trajectory: count records: %w", err)
	}
	if c.Cells, err = s.db.countAll(ctx, trajCells); err != nil {
		return c, fmt.Errorf("mongodb trajectory: count cells: %w", err)
	}
	return c, nil
}

// Reset implements trajectory.Store: every partition dropped (the next
// write creates them and their indexes again).
func (s *trajStore) Reset(ctx context.Context) error {
	if err := s.db.dropAll(ctx, trajRecords, trajCells); err != nil {
		return fmt.Errorf("mongodb trajectory: reset: %w", err)
	}
	return nil
}
