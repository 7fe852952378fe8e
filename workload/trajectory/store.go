package trajectory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Point is a position on the city grid: X = easting, Y = northing, in whole
// metres.
type Point struct {
	X int64 `json:"x"`
	Y int64 `json:"y"`
}

// Dist2 is the squared planar distance between a and b in m². Squares are
// compared instead of distances so that "within L metres" and ties in the
// k-NN order are exact.
func Dist2(a, b Point) int64 {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}

// Triangle is the range query's area: three vertices, in either winding.
type Triangle [3]Point

// Area2 is twice the triangle's signed area (positive when the vertices are
// counter-clockwise); zero for a degenerate triangle.
func (t Triangle) Area2() int64 {
	return cross(t[0], t[1], t[2])
}

// cross is the z component of (b-a) x (p-a): > 0 when p is left of a->b.
func cross(a, b, p Point) int64 {
	return (b.X-a.X)*(p.Y-a.Y) - (b.Y-a.Y)*(p.X-a.X)
}

// Contains reports whether p is inside t or on its boundary (the triangle is
// closed, so a cell exactly on an edge or a vertex belongs to it). A
// degenerate triangle contains nothing: Query.Validate rejects it.
func (t Triangle) Contains(p Point) bool {
	if t.Area2() == 0 {
		return false
	}
	d1 := cross(t[0], t[1], p)
	d2 := cross(t[1], t[2], p)
	d3 := cross(t[2], t[0], p)
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}

// Bounds is the triangle's bounding box.
func (t Triangle) Bounds() (minX, minY, maxX, maxY int64) {
	minX, minY, maxX, maxY = t[0].X, t[0].Y, t[0].X, t[0].Y
	for _, p := range t[1:] {
		minX, maxX = min(minX, p.X), max(maxX, p.X)
		minY, maxY = min(minY, p.Y), max(maxY, p.Y)
	}
	return
}

// Hit is one cell in a distance, k-NN or range answer.
type Hit struct {
	Cell     int64 `json:"cell"`
	Easting  int64 `json:"easting"`
	Northing int64 `json:"northing"`
}

// Pos is the hit's position.
func (h Hit) Pos() Point { return Point{X: h.Easting, Y: h.Northing} }

// Busiest is the region query's answer: the cell with the most location
// updates at one weekday and slot, and how many.
type Busiest struct {
	Cell   int64 `json:"cell"`
	Visits int64 `json:"visits"`
}

// Writer stores location updates.
type Writer interface {
	// Write stores recs as one write request, all or nothing. The cells the
	// records name become visible to the queries with them.
	Write(ctx context.Context, recs []Record) error
}

// Querier answers the study's four queries over the cells that appear in
// the stored records. Answers must equal Oracle's exactly.
type Querier interface {
	// Distance returns every cell within radius metres of p (distance <=
	// radius), nearest first, ties by cell id.
	Distance(ctx context.Context, p Point, radius int64) ([]Hit, error)
	// KNN returns the k cells nearest to p among those within maxDist
	// metres, nearest first, ties by cell id (fewer than k when fewer are
	// that close).
	KNN(ctx context.Context, p Point, k int, maxDist int64) ([]Hit, error)
	// Range returns every cell inside t or on its boundary, by cell id.
	Range(ctx context.Context, t Triangle) ([]Hit, error)
	// Region returns the cell with the most records at day and slot (ties:
	// the smallest cell id); ok is false when there are none.
	Region(ctx context.Context, day Weekday, slot int) (b Busiest, ok bool, err error)
}

// Counts is what a Store holds.
type Counts struct {
	Records int64 `json:"records"`
	Cells   int64 `json:"cells"`
}

// Store is what an adapter implements for the trajectory family. It must be
// safe for concurrent use by many clients.
type Store interface {
	Writer
	Querier
	Counts(ctx context.Context) (Counts, error)
	// Reset deletes every trajectory record and cell, so that a write phase
	// starts from an empty database as in the study.
	Reset(ctx context.Context) error
	Close() error
}

// Backend is implemented by an adapter.DB that supports the trajectory
// family.
type Backend interface {
	// Trajectory creates the family's schema if needed and returns a Store.
	Trajectory(ctx context.Context) (Store, error)
}

// Near keeps the cells of cands within radius r of p (Dist2 <= r², the
// circle closed), nearest first, ties by cell id: the exact semantics of the
// distance and k-NN queries. The oracle uses it on every cell; adapters
// whose database only narrows candidates (a grid, GEO with a margin) use it
// to decide exactly. It returns nil when none is in range.
func Near(cands []Hit, p Point, r int64) []Hit {
	type hd struct {
		h  Hit
		d2 int64
	}
	r2 := r * r
	var in []hd
	for _, h := range cands {
		if d := Dist2(p, h.Pos()); d <= r2 {
			in = append(in, hd{h, d})
		}
	}
	if len(in) == 0 {
		return nil
	}
	slices.SortFunc(in, func(a, b hd) int {
		if c := cmp.Compare(a.d2, b.d2); c != 0 {
			return c
		}
		return cmp.Compare(a.h.Cell, b.h.Cell)
	})
	out := make([]Hit, len(in))
	for i, x := range in {
		out[i] = x.h
	}
	return out
}

// KNNStartRadius is the first search radius (m) of WidenKNN.
const KNNStartRadius = 500

// WidenKNN answers a k-NN query for a database that can only list candidate
// cells around a point (a superset of those within r): searches of growing
// radius, from KNNStartRadius doubling up to maxDist, until k cells lie
// within the radius exactly; no cell outside it can then be nearer than the
// k-th. The Cassandra, HBase and Redis adapters share it.
func WidenKNN(ctx context.Context, p Point, k int, maxDist int64, within func(ctx context.Context, r int64) ([]Hit, error)) ([]Hit, error) {
	r := min(int64(KNNStartRadius), maxDist)
	for {
		c, err := within(ctx, r)
		if err != nil {
			return nil, err
		}
		out := Near(c, p, r)
		if len(out) >= k || r == maxDist {
			if len(out) > k {
				out = out[:k:k]
			}
			return out, nil
		}
		r = min(2*r, maxDist)
	}
}

// InTriangle keeps the candidates inside t (closed test), by cell id.
func InTriangle(cands []Hit, t Triangle) []Hit {
	var out []Hit
	for _, h := range cands {
		if t.Contains(h.Pos()) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b Hit) int { return cmp.Compare(a.Cell, b.Cell) })
	return out
}

// BoxSearch answers the distance, k-NN and range queries for a database
// without a spatial index that can list the cells in a bounding box (a
// superset is fine: every answer is decided exactly here). The Cassandra and
// HBase adapters embed it with their grid-bucket scans.
type BoxSearch struct {
	// Name prefixes errors, e.g. "cassandra trajectory".
	Name string
	// Cells returns at least every cell in [minX, maxX] × [minY, maxY].
	Cells func(ctx context.Context, minX, minY, maxX, maxY int64) ([]Hit, error)
}

// Distance implements Querier.Distance.
func (b BoxSearch) Distance(ctx context.Context, p Point, radius int64) ([]Hit, error) {
	if err := (Query{Op: OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: distance: %w", b.Name, err)
	}
	c, err := b.Cells(ctx, p.X-radius, p.Y-radius, p.X+radius, p.Y+radius)
	if err != nil {
		return nil, fmt.Errorf("%s: distance: %w", b.Name, err)
	}
	return Near(c, p, radius), nil
}

// KNN implements Querier.KNN with WidenKNN over squares around p.
func (b BoxSearch) KNN(ctx context.Context, p Point, k int, maxDist int64) ([]Hit, error) {
	if err := (Query{Op: OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: knn: %w", b.Name, err)
	}
	out, err := WidenKNN(ctx, p, k, maxDist, func(ctx context.Context, r int64) ([]Hit, error) {
		return b.Cells(ctx, p.X-r, p.Y-r, p.X+r, p.Y+r)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: knn: %w", b.Name, err)
	}
	return out, nil
}

// Range implements Querier.Range: the cells of the triangle's bounding box,
// then the exact closed point-in-triangle test, by cell id.
func (b BoxSearch) Range(ctx context.Context, t Triangle) ([]Hit, error) {
	if err := (Query{Op: OpRange, Tri: t}).Validate(); err != nil {
		return nil, fmt.Errorf("%s: range: %w", b.Name, err)
	}
	minX, minY, maxX, maxY := t.Bounds()
	c, err := b.Cells(ctx, minX, minY, maxX, maxY)
	if err != nil {
		return nil, fmt.Errorf("%s: range: %w", b.Name, err)
	}
	return InTriangle(c, t), nil
}
