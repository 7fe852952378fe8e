package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory keys.
//
//	traj:{traj}:cells   GEO set of the cells of the stored records; member
//	                    "id|easting|northing" (so a search returns the exact
//	                    planar position with the candidate)
//	traj:{traj}:n       number of records
//	traj:{d:s}:region   sorted set per (weekday, slot): cell id (zero-padded
//	                    to 20 digits, so equal counts sort by id) -> visits
//	traj:rec:{u:ID}     list of the user's records, one CSV row of the 18
//	                    attributes each
//
// Write is one pipeline: on one server wrapped in MULTI/EXEC, so all or
// nothing; in a cluster its commands span many slots, which no Redis
// transaction can, so it is a plain pipeline — every command is
// acknowledged before Write returns, but a failure can leave part of a
// request written (and the error is returned).
//
// Queries: Redis GEO works on longitude/latitude (52-bit geohashes, about
// 0.6 m) with haversine distances on a sphere, while the workload's answers
// are exact planar distances on integer easting/northing. So GEOSEARCH only
// finds candidates, with a safety margin (2 % + 100 m covers the sphere,
// the UTM scale factor and the geohash precision), and the adapter keeps,
// orders and cuts them exactly in Go from the easting/northing in each
// member. Queries whose area is not a small part of the globe (radius over
// 200 km, or a point that is no valid latitude/longitude) read every cell
// instead (ZRANGE) — the same exact filter, no GEO index.
const (
	trajCellsKey = "traj:{traj}:cells"
	trajCountKey = "traj:{traj}:n"
	// geoLimit is the largest search radius (m) sent to GEOSEARCH.
	geoLimit = 200_000
)

func trajRegionKey(day trajectory.Weekday, slot int) string {
	return "traj:{" + strconv.Itoa(int(day)) + ":" + strconv.Itoa(slot) + "}:region"
}

func trajUserKey(u int64) string { return "traj:rec:{u:" + strconv.FormatInt(u, 10) + "}" }

func regionMember(cell int64) string { return fmt.Sprintf("%020d", cell) }

// busiest returns the member with the highest score and, among equal
// scores, the smallest (ids are zero-padded so bytes order = id order).
var busiest = goredis.NewScript(`
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #top == 0 then return false end
local first = redis.call('ZRANGE', KEYS[1], top[2], top[2], 'BYSCORE', 'LIMIT', 0, 1)
return {first[1], top[2]}`)

type trajStore struct{ db *DB }

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend (nothing to create).
func (db *DB) Trajectory(context.Context) (trajectory.Store, error) { return &trajStore{db: db}, nil }

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

func b01(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// recordRow is the record's 18 attributes as one CSV row (the cell's text
// fields quoted).
func recordRow(r *trajectory.Record) string {
	c := r.Cell
	var b strings.Builder
	b.Grow(160)
	for _, v := range []int64{r.User, c.ID, int64(r.Weekday), int64(r.Time), int64(r.Profile), int64(r.Segment)} {
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte(',')
	}
	b.WriteByte(b01(r.GSM()))
	b.WriteByte(',')
	b.WriteByte(b01(r.UMTS()))
	b.WriteByte(',')
	b.WriteByte(b01(r.LTE()))
	fmt.Fprintf(&b, ",%d,%d,%.6f,%.6f,%q,%q,%q,%q,%q", c.Easting, c.Northing, c.Lat, c.Lon,
		c.Municipality, c.County, c.City, c.Postcode, c.Address)
	return b.String()
}

// Write implements trajectory.Writer.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	byUser := map[int64][]any{}
	type dsc struct {
		key  string
		cell int64
	}
	visits := map[dsc]int64{}
	cells := map[int64]*trajectory.Cell{}
	for i := range recs {
		r := &recs[i]
		byUser[r.User] = append(byUser[r.User], recordRow(r))
		visits[dsc{trajRegionKey(r.Weekday, r.Slot()), r.Cell.ID}]++
		cells[r.Cell.ID] = r.Cell
	}
	// One server: MULTI/EXEC, all or nothing. A cluster: go-redis has
	// no transaction across slots (nor has Redis), so a plain pipeline.
	run := s.db.rdb.TxPipelined
	if s.db.cc != nil {
		run = s.db.rdb.Pipelined
	}
	_, err := run(ctx, func(p goredis.Pipeliner) error {
		for u, rows := range byUser {
			p.RPush(ctx, trajUserKey(u), rows...)
		}
		for k, n := range visits {
			p.ZIncrBy(ctx, k.key, float64(n), regionMember(k.cell))
		}
		locs := make([]*goredis.GeoLocation, 0, len(cells))
		for _, c := range cells {
			locs = append(locs, &goredis.GeoLocation{Name: cellMember(c.ID, c.Easting, c.Northing), Longitude: c.Lon, Latitude: c.Lat})
		}
		p.GeoAdd(ctx, trajCellsKey, locs...)
		p.IncrBy(ctx, trajCountKey, int64(len(recs)))
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis trajectory: write %d records: %w", len(recs), err)
	}
	return nil
}

func cellMember(id, e, n int64) string {
	return strconv.FormatInt(id, 10) + "|" + strconv.FormatInt(e, 10) + "|" + strconv.FormatInt(n, 10)
}

func parseCell(m string) (trajectory.Hit, error) {
	f := strings.Split(m, "|")
	if len(f) != 3 {
		return trajectory.Hit{}, fmt.Errorf("bad cell member %q", m)
	}
	var h trajectory.Hit
	var err [3]error
	h.Cell, err[0] = strconv.ParseInt(f[0], 10, 64)
	h.Easting, err[1] = strconv.ParseInt(f[1], 10, 64)
	h.Northing, err[2] = strconv.ParseInt(f[2], 10, 64)
	if e := errors.Join(err[:]...); e != nil {
		return h, fmt.Errorf("bad cell member %q: %w", m, e)
	}
	return h, nil
}

// margin is the GEO search radius that surely covers planar radius r.
func margin(r float64) float64 { return r*1.02 + 100 }

// candidates returns the cells that may lie within planar radius r of p: a
// GEOSEARCH around p's latitude/longitude with a margin, or every cell
// when the area is too large for the sphere to stand in for the plane.
func (s *trajStore) candidates(ctx context.Context, p trajectory.Point, r float64) ([]trajectory.Hit, error) {
	lat, lon := trajectory.UTMToLatLon(float64(p.X), float64(p.Y))
	var members []string
	var err error
	if !geoOK(p.X, p.Y, r, lon, lat) {
		members, err = s.db.rdb.ZRange(ctx, trajCellsKey, 0, -1).Result()
	} else {
		members, err = s.db.rdb.GeoSearch(ctx, trajCellsKey, &goredis.GeoSearchQuery{
			Longitude: lon, Latitude: lat, Radius: margin(r), RadiusUnit: "m",
		}).Result()
	}
	if err != nil {
		return nil, err
	}
	out := make([]trajectory.Hit, 0, len(members))
	for _, m := range members {
		h, err := parseCell(m)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// geoOK reports whether a GEO search of radius r around grid point (x, y),
// at lon/lat, surely finds every cell within planar distance r: the radius
// is small, the point lies where the UTM formula is accurate (within 400 km
// of the zone's central meridian, between 1° and 81° north) and lon/lat is
// inside Redis's GEO domain.
func geoOK(x, y int64, r, lon, lat float64) bool {
	return r <= geoLimit && x >= 100_000 && x <= 900_000 && y >= 100_000 && y <= 9_000_000 &&
		!math.IsNaN(lon) && !math.IsNaN(lat) && lon > -179 && lon < 179 && lat > -84 && lat < 84
}

// Distance implements trajectory.Querier: GEOSEARCH BYRADIUS candidates,
// exact planar filter and order.
func (s *trajStore) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("redis trajectory: distance: %w", err)
	}
	c, err := s.candidates(ctx, p, float64(radius))
	if err != nil {
		return nil, fmt.Errorf("redis trajectory: distance: %w", err)
	}
	return trajectory.Near(c, p, radius), nil
}

// KNN implements trajectory.Querier. GEOSEARCH ... COUNT k ASC orders by
// haversine distance, which can differ from the planar order near ties, so
// the adapter searches by radius instead: starting at 500 m and doubling up
// to maxDist, until k cells lie within the radius exactly; no cell outside
// it can then be nearer than the k-th.
func (s *trajStore) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("redis trajectory: knn: %w", err)
	}
	out, err := trajectory.WidenKNN(ctx, p, k, maxDist, func(ctx context.Context, r int64) ([]trajectory.Hit, error) {
		return s.candidates(ctx, p, float64(r))
	})
	if err != nil {
		return nil, fmt.Errorf("redis trajectory: knn: %w", err)
	}
	return out, nil
}

// Range implements trajectory.Querier: GEOSEARCH BYBOX around the
// triangle's bounding box (a square whose side is the box's diagonal plus
// the margin, so the grid's small rotation against true north does not
// matter), then the exact closed point-in-triangle test, by cell id.
func (s *trajStore) Range(ctx context.Context, t trajectory.Triangle) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpRange, Tri: t}).Validate(); err != nil {
		return nil, fmt.Errorf("redis trajectory: range: %w", err)
	}
	minX, minY, maxX, maxY := t.Bounds()
	cx, cy := (float64(minX)+float64(maxX))/2, (float64(minY)+float64(maxY))/2
	diag := math.Hypot(float64(maxX-minX), float64(maxY-minY))
	lat, lon := trajectory.UTMToLatLon(cx, cy)
	var members []string
	var err error
	if !geoOK(int64(cx), int64(cy), diag/2, lon, lat) {
		members, err = s.db.rdb.ZRange(ctx, trajCellsKey, 0, -1).Result()
	} else {
		side := 2 * margin(diag/2)
		members, err = s.db.rdb.GeoSearch(ctx, trajCellsKey, &goredis.GeoSearchQuery{
			Longitude: lon, Latitude: lat, BoxWidth: side, BoxHeight: side, BoxUnit: "m",
		}).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("redis trajectory: range: %w", err)
	}
	cands := make([]trajectory.Hit, 0, len(members))
	for _, m := range members {
		h, err := parseCell(m)
		if err != nil {
			return nil, fmt.Errorf("redis trajectory: range: %w", err)
		}
		cands = append(cands, h)
	}
	return trajectory.InTriangle(cands, t), nil
}

// Region implements trajectory.Querier: one script on the slot's sorted
// set (highest count, smallest id among ties).
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("redis trajectory: region: %w", err)
	}
	v, err := busiest.Run(ctx, s.db.rdb, []string{trajRegionKey(day, slot)}).Slice()
	if errors.Is(err, goredis.Nil) {
		return trajectory.Busiest{}, false, nil
	}
	if err != nil || len(v) != 2 {
		return trajectory.Busiest{}, false, fmt.Errorf("redis trajectory: region: %v: %w", v, err)
	}
	m, _ := v[0].(string)
	sc, _ := v[1].(string)
	var b trajectory.Busiest
	var e1, e2 error
	b.Cell, e1 = strconv.ParseInt(m, 10, 64)
	b.Visits, e2 = strconv.ParseInt(sc, 10, 64)
	if e := errors.Join(e1, e2); e != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("redis trajectory: region answer %v: %w", v, e)
	}
	return b, true, nil
}

// Counts implements trajectory.Store.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	n, err := s.db.rdb.Get(ctx, trajCountKey).Int64()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return c, fmt.Errorf("redis trajectory: count records: %w", err)
	}
	c.Records = n
	if c.Cells, err = s.db.rdb.ZCard(ctx, trajCellsKey).Result(); err != nil {
		return c, fmt.Errorf("redis trajectory: count cells: %w", err)
	}
	return c, nil
}

// Reset implements trajectory.Store: UNLINK every trajectory key on every
// master.
func (s *trajStore) Reset(ctx context.Context) error {
	if err := s.db.scanDelete(ctx, "traj:*"); err != nil {
		return fmt.Errorf("redis trajectory: reset: %w", err)
	}
	return nil
}
